#include "auth_throttle.hpp"

#include <algorithm>
#include <cmath>

namespace idempay::http {

AuthThrottle::AuthThrottle(double burst, double per_second)
    : burst_(std::max(1.0, burst)), per_second_(std::max(0.001, per_second)) {}

double AuthThrottle::refill(Bucket& b, Clock::time_point now) const {
  double elapsed = std::chrono::duration<double>(now - b.at).count();
  b.tokens = std::min(burst_, b.tokens + std::max(0.0, elapsed) * per_second_);
  b.at = now;
  return b.tokens;
}

int64_t AuthThrottle::retry_after(const std::string& source, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto it = buckets_.find(source);
  if (it == buckets_.end()) {
    return 0;
  }
  double tokens = refill(it->second, now);
  return tokens >= 1 ? 0 : static_cast<int64_t>(std::ceil((1 - tokens) / per_second_));
}

bool AuthThrottle::record_failure(const std::string& source, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (buckets_.size() >= kMaxSources && buckets_.count(source) == 0) {
    prune(now);
  }
  if (buckets_.size() >= kMaxSources && buckets_.count(source) == 0) {
    // Still full of throttled sources: an eighth of them, in hash order (unrelated to their
    // age), give way, so that memory stays bounded whatever the number of addresses an
    // attacker has, at a constant amortised cost per failure.
    auto it = buckets_.begin();
    for (size_t n = kMaxSources / 8; n > 0 && it != buckets_.end(); --n) {
      it = buckets_.erase(it);
    }
  }
  Bucket& b = buckets_.try_emplace(source, Bucket{burst_, now}).first->second;
  double tokens = refill(b, now);
  b.tokens = std::max(0.0, tokens - 1);
  return tokens >= 1 && b.tokens < 1;
}

size_t AuthThrottle::tracked() {
  std::lock_guard lock(mutex_);
  return buckets_.size();
}

void AuthThrottle::prune(Clock::time_point now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    if (refill(it->second, now) >= burst_) {
      it = buckets_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace idempay::http
