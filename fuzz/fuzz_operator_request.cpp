// What the operator API reads from a request before anything runs: the Idempotency-Key
// header and the body's canonical form (its fingerprint). A valid key must be printable ASCII
// within bounds; a canonical body must parse again to the same canonical form.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "idempay/admin/idempotency.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (idempay::admin::valid_idempotency_key(input)) {
    for (char c : input) {
      if (c < 0x20 || c > 0x7e) {
        std::abort();  // a key that could end a header line or smuggle bytes into the store's key
      }
    }
    if (input.empty() || input.size() > 255) {
      std::abort();
    }
    (void)idempay::admin::idempotency_record_key("admin/", "operator", "POST", "/admin/v1/payments/p/refunds", input);
  }
  if (auto canonical = idempay::admin::canonical_json(input)) {
    auto again = idempay::admin::canonical_json(*canonical);
    if (!again || *again != *canonical) {
      std::abort();  // two spellings of one body with different fingerprints
    }
  }
  return 0;
}
