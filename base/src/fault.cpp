#include "idempay/base/fault.hpp"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace idempay::fault {

namespace {
struct Plan {
  std::string point;
  long remaining = 0;
};

const Plan& plan() {
  static const Plan p = [] {
    Plan out;
    const char* spec = std::getenv("IDEMPAY_CRASH_AT");
    if (spec == nullptr || *spec == '\0') {
      return out;
    }
    std::string s(spec);
    auto colon = s.find(':');
    out.point = s.substr(0, colon);
    out.remaining = colon == std::string::npos ? 1 : std::max(1L, std::strtol(s.c_str() + colon + 1, nullptr, 10));
    return out;
  }();
  return p;
}

std::atomic<long> hits{0};
}  // namespace

void crash_point(const char* name) {
  const Plan& p = plan();
  if (p.point.empty() || p.point != name) {
    return;
  }
  if (hits.fetch_add(1) + 1 >= p.remaining) {
    std::raise(SIGKILL);
  }
}

}  // namespace idempay::fault
