#pragma once
// Throttling of sources that keep presenting wrong credentials: a token bucket of failures
// per source address. Only sources that failed are tracked, so legitimate traffic costs one
// lookup of an (almost always) empty map.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace idempay::http {

class AuthThrottle {
public:
  using Clock = std::chrono::steady_clock;

  /// A source may fail `burst` times at once, then earns `per_second` more failures a second.
  AuthThrottle(double burst, double per_second);

  /// Whole seconds `source` must wait before its credentials are looked at again; 0 if now.
  int64_t retry_after(const std::string& source, Clock::time_point now);

  /// Records a wrong credential from `source`; true if it is throttled from now on.
  bool record_failure(const std::string& source, Clock::time_point now);

  /// Sources tracked now (at most kMaxSources).
  size_t tracked();

  static constexpr size_t kMaxSources = 4096;  ///< beyond this, the least throttled give way

private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point at;
  };
  // Refills `b` up to now; the tokens it holds afterwards.
  double refill(Bucket& b, Clock::time_point now) const;
  void prune(Clock::time_point now);

  double burst_;
  double per_second_;
  std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace idempay::http
