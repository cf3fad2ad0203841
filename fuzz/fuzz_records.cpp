// Stored records as read back from the store (a damaged or hand-edited database): payments and
// operations. A record that decodes must encode and decode to the same bytes again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "idempay/domain/records.hpp"

namespace {
template <class Decode>
void round_trip(std::string_view input, Decode decode) {
  auto first = decode(input);
  if (!first) {
    return;
  }
  std::string encoded = idempay::domain::encode(*first);
  auto second = decode(encoded);
  if (!second || idempay::domain::encode(*second) != encoded) {
    std::abort();  // what was written cannot be read back as written
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  round_trip(input, [](std::string_view json) { return idempay::domain::decode_payment(json); });
  round_trip(input, [](std::string_view json) { return idempay::domain::decode_operation(json); });
  return 0;
}
