#pragma once
// The W3C `traceparent` each request to a fake acquirer came with, the latest 1,000, for the
// tests that check propagation in the fake's ledger. Thread-safe.
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "idempay/base/json_writer.hpp"

namespace idempay::tracing {

class RecentTraceparents {
public:
  /// Keeps `traceparent` (as received) under `route`; nothing when it is empty.
  void note(std::string route, std::string_view traceparent);
  /// [{"route": ..., "traceparent": ...}, ...], oldest first.
  void write(JsonWriter& w) const;

private:
  static constexpr size_t kKept = 1000;
  mutable std::mutex mutex_;
  std::deque<std::pair<std::string, std::string>> seen_;
};

}  // namespace idempay::tracing
