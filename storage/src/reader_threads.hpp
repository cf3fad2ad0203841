#pragma once
// The threads a store runs its asynchronous reads on (Store::read_async): a point lookup whose
// block is not in the cache waits for the disk and decompresses it, which must never stall the
// thread that runs the payment actors. Shared by the stores. A job runs in the trace it was
// submitted in (tracing::current()): what it goes on to do belongs to the caller's request.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "idempay/tracing/context.hpp"

namespace idempay::storage {

class ReaderThreads {
public:
  using Job = std::function<void()>;

  explicit ReaderThreads(size_t count);
  ~ReaderThreads() { stop(); }
  ReaderThreads(const ReaderThreads&) = delete;
  ReaderThreads& operator=(const ReaderThreads&) = delete;

  /// Queues `job`; false once stopping (the caller runs it itself, so that no job is lost).
  bool submit(Job job);

  /// Runs the jobs already queued, then joins the threads. Idempotent.
  void stop();

private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<Job, tracing::TraceContext>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: started once the queue exists
};

}  // namespace idempay::storage
