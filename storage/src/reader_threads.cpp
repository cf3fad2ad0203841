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
    queue_.push_back(std::move(job));
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
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping and drained
      }
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace idempay::storage
