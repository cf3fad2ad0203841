#include "reader_threads.hpp"

#include <pthread.h>

namespace idempay::storage {

ReaderThreads::ReaderThreads(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    threads_.emplace_back([this] { run(); });
    pthread_setname_np(threads_.back().native_handle(), "store-reader");
  }
}

bool ReaderThreads::submit(Job job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      return false;
    }
    queue_.emplace_back(std::move(job), tracing::current());
  }
  wake_.notify_one();
  return true;
}

void ReaderThreads::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
}

void ReaderThreads::run() {
  for (;;) {
    std::pair<Job, tracing::TraceContext> next;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping and drained
      }
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    tracing::Scope in_trace(std::move(next.second));
    next.first();
  }
}

}  // namespace idempay::storage
