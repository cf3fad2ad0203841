#include "idempay/base/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace idempay::detail {

void assertion_failed(const char* condition, const char* message, const char* file, int line) noexcept {
  // stderr, unbuffered: the log's own queue may be what is broken, and this line must be seen.
  std::fprintf(stderr, "idempay: invariant broken: %s (%s) at %s:%d; stopping so that nothing is answered wrongly\n",
               condition, message, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace idempay::detail
