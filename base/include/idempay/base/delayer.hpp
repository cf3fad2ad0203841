#pragma once
// Runs callbacks after a delay, in time order, on a thread of its own: the stub's latency and
// the fakes' later work (notifications tried again, payments decided afterwards). On
// destruction whatever is still queued runs at once, so nothing waiting for an answer hangs.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace idempay {

class Delayer {
public:
  Delayer();
  ~Delayer();
  Delayer(const Delayer&) = delete;
  Delayer& operator=(const Delayer&) = delete;

  void after(std::chrono::milliseconds delay, std::function<void()> fn);

private:
  using Clock = std::chrono::steady_clock;
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace idempay
