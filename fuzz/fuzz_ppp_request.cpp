// PPP request bodies as the gateway sends them: Create Payment and the three operations.
// The first byte picks the parser; whatever parses must fingerprint without failing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "idempay/protocol/ppp.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  using idempay::ppp::OperationKind;
  switch (data[0] % 4) {
    case 0:
      if (auto r = idempay::ppp::parse_create_payment(body)) {
        (void)idempay::ppp::payment_fingerprint("key", *r);
      }
      break;
    default: {
      auto kind = static_cast<OperationKind>(data[0] % 4 - 1);
      if (auto r = idempay::ppp::parse_operation(kind, "P1", body)) {
        (void)idempay::ppp::operation_fingerprint("key", *r);
      }
    }
  }
  return 0;
}
