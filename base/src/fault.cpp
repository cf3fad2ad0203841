#include "idempay/base/fault.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <string>

namespace idempay::fault {

namespace {

// "NAME" or "NAME:N" from the environment variable `variable`: the N-th time NAME is reached.
struct Plan {
  explicit Plan(const char* variable) {
    const char* spec = std::getenv(variable);
    if (spec == nullptr || *spec == '\0') {
      return;
    }
    std::string s(spec);
    auto colon = s.find(':');
    point = s.substr(0, colon);
    nth = colon == std::string::npos ? 1 : std::max(1L, std::strtol(s.c_str() + colon + 1, nullptr, 10));
  }

  // True the N-th time `name` is reached.
  bool due(const char* name) {
    return !point.empty() && point == name && hits.fetch_add(1) + 1 == nth;
  }

  std::string point;
  long nth = 0;
  std::atomic<long> hits{0};
};

}  // namespace

void crash_point(const char* name) {
  static Plan plan("IDEMPAY_CRASH_AT");
  if (plan.due(name)) {
    std::raise(SIGKILL);
  }
}

bool holds(const char* name) {
  static Plan plan("IDEMPAY_BREAK_AT");
  return !plan.due(name);
}

bool inject(const char* name) {
  static Plan plan("IDEMPAY_FAULT_AT");
  return plan.due(name);
}

}  // namespace idempay::fault
