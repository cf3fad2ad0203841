#pragma once
// A store's one committer thread and the queue in front of it, shared by the three stores.
// Callers queue commits from any thread and never wait; the committer takes what has gathered
// as a group and hands it to the store, which writes the group with one synced write and then
// completes each caller. Closing commits what was queued and refuses what comes after.
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "idempay/tracing/tracer.hpp"

namespace idempay::storage {

template <class Pending>
class CommitThread {
public:
  struct Hooks {
    /// The store's work for one group, on the committer thread.
    std::function<void(std::vector<Pending>& group)> commit;
    /// The most commits in one group; 0: everything that has gathered.
    size_t max_group = 0;
    /// How long the committer may sleep with nothing queued before `wake` runs anyway
    /// (nullopt: until a commit comes). RocksDB: retrying a failed disk while idle.
    std::function<std::optional<std::chrono::milliseconds>()> idle_for;
    /// Runs on every wake-up, before the group is committed. Optional.
    std::function<void()> wake;
  };

  /// Starts the thread, named `name` for top -H, perf and gdb (at most 15 characters).
  CommitThread(const char* name, Hooks hooks)
      : hooks_(std::move(hooks)), name_(name), thread_([this, name] {
          pthread_setname_np(pthread_self(), name);
          run();
        }) {}
  ~CommitThread() { close(); }
  CommitThread(const CommitThread&) = delete;
  CommitThread& operator=(const CommitThread&) = delete;

  /// Queues a commit; false (and `pending` untouched) once the store is closing.
  bool push(Pending& pending) {
    std::lock_guard lock(mutex_);
    if (closing_) {
      return false;
    }
    queue_.push_back(std::move(pending));
    // The commit's trace, for the group's span to link to (none while tracing is off).
    const auto& trace = tracing::current();
    traces_.push_back(trace.sampled && tracing::enabled() ? tracing::Link{trace.trace_id, trace.span_id} : tracing::Link{});
    // A busy committer takes the whole queue when it finishes its group: no wake-up needed.
    if (waiting_) {
      wake_.notify_one();
    }
    return true;
  }

  /// Commits what was queued, then stops the thread. Idempotent.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

private:
  template <class T>
  static void take_front(std::vector<T>& from, std::vector<T>& to, size_t n) {
    if (n == from.size()) {
      to.swap(from);  // the common case: all of it, nothing copied
    } else {
      std::move(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(n), std::back_inserter(to));
      from.erase(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(n));
    }
  }

  // One span per group commit, linked to the sampled requests whose commits it carried; none
  // when it carried none.
  tracing::Span group_span(const std::vector<tracing::Link>& traces) const {
    tracing::Span span;
    for (const auto& link : traces) {
      if (link.trace_id == tracing::TraceId{}) {
        continue;
      }
      if (!span.recording()) {
        span = tracing::start_root_span("store commit group", tracing::Kind::kInternal, true);
        span.set("idempay.store.committer", name_).set("idempay.commit.batches", static_cast<int64_t>(traces.size()));
      }
      tracing::TraceContext to;
      to.trace_id = link.trace_id;
      to.span_id = link.span_id;
      span.link(to);
    }
    return span;
  }

  void run() {
    std::vector<Pending> group;
    std::vector<tracing::Link> group_traces;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        waiting_ = true;
        auto ready = [this] { return closing_ || !queue_.empty(); };
        auto idle = hooks_.idle_for ? hooks_.idle_for() : std::nullopt;
        if (idle) {
          wake_.wait_for(lock, *idle, ready);
        } else {
          wake_.wait(lock, ready);
        }
        waiting_ = false;
        if (queue_.empty() && closing_) {
          return;  // closing, and every commit handed to us is done
        }
        size_t take = hooks_.max_group == 0 ? queue_.size() : std::min(queue_.size(), hooks_.max_group);
        take_front(queue_, group, take);
        take_front(traces_, group_traces, take);
      }
      if (hooks_.wake) {
        hooks_.wake();
      }
      if (!group.empty()) {
        auto span = group_span(group_traces);
        hooks_.commit(group);
        span.end();
        group.clear();
      }
      group_traces.clear();
    }
  }

  Hooks hooks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Pending> queue_;
  std::vector<tracing::Link> traces_;  // queue_'s traces, one for each
  std::string name_;
  bool closing_ = false;
  bool waiting_ = false;
  std::thread thread_;  // starts after everything it uses exists
};

}  // namespace idempay::storage
