#include "idempay/base/delayer.hpp"

namespace idempay {

Delayer::Delayer() : thread_([this] { run(); }) {}

Delayer::~Delayer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Delayer::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  queue_.emplace(Clock::now() + delay, std::move(fn));
  wake_.notify_one();
}

void Delayer::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_ || !queue_.empty()) {
    if (queue_.empty()) {
      wake_.wait(lock);
      continue;
    }
    auto next = queue_.begin()->first;
    if (Clock::now() < next && !stopping_) {
      wake_.wait_until(lock, next);
      continue;
    }
    auto fn = std::move(queue_.begin()->second);
    queue_.erase(queue_.begin());
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace idempay
