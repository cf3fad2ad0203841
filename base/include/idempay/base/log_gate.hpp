#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace idempay {

/// Lets a log line through at most once per interval: for a failure that repeats at every
/// sweep while it lasts (a database with no primary during a failover), one line per interval
/// rather than one per attempt. Thread-safe.
class LogGate {
public:
  explicit LogGate(std::chrono::milliseconds every) : every_ms_(every.count()) {}

  /// True if a line may be written now (and none is let through for `every` after it).
  bool open() {
    int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
    int64_t last = last_ms_.load(std::memory_order_relaxed);
    return now - last >= every_ms_ && last_ms_.compare_exchange_strong(last, now);
  }

private:
  int64_t every_ms_;
  std::atomic<int64_t> last_ms_{INT64_MIN / 2};
};

}  // namespace idempay
