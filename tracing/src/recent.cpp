#include "idempay/tracing/recent.hpp"

namespace idempay::tracing {

void RecentTraceparents::note(std::string route, std::string_view traceparent) {
  if (traceparent.empty()) {
    return;
  }
  std::lock_guard lock(mutex_);
  seen_.emplace_back(std::move(route), traceparent);
  if (seen_.size() > kKept) {
    seen_.pop_front();
  }
}

void RecentTraceparents::write(JsonWriter& w) const {
  std::lock_guard lock(mutex_);
  w.begin_array();
  for (const auto& [route, traceparent] : seen_) {
    w.begin_object().key("route").string(route).key("traceparent").string(traceparent).end_object();
  }
  w.end_array();
}

}  // namespace idempay::tracing
