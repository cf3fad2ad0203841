// An acquirer webhook: its Standard Webhooks headers and its body. The input is
// "id\ntimestamp\nsignature\nbody"; the signature check runs over the raw bytes, then the body
// is decoded as the handler would (whatever the signature says, to reach the decoder).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/acquirers/wire.hpp"
#include "idempay/base/webhooks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view parts[3];
  for (auto& part : parts) {
    auto nl = input.find('\n');
    part = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  }
  static const std::vector<std::string> keys = {std::string(32, 'k')};
  (void)idempay::webhooks::verify(keys, parts[0], parts[1], parts[2], input, 1'700'000'000);
  (void)idempay::webhooks::decode_secret(std::string(parts[0]));
  (void)idempay::acquirer::decode_event(input);
  return 0;
}
