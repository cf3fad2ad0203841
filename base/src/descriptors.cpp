#include "idempay/base/descriptors.hpp"

#include <algorithm>

#include <sys/resource.h>

namespace idempay {

size_t descriptor_share(size_t divisor, size_t at_least, size_t at_most) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return at_most;
  }
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur) / divisor, at_least, at_most);
}

}  // namespace idempay
