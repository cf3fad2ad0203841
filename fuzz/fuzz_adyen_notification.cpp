// Adyen's standard notifications: the body read as the notification route reads it, and every
// item's signature checked, whatever the items hold.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/acquirers/adyen.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> keys = {"44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056", "0f"};
  auto items = idempay::acquirer::read_adyen_notifications(input);
  if (items) {
    for (const auto& item : *items) {
      (void)idempay::acquirer::adyen_signature_valid(item, keys);
      (void)idempay::acquirer::adyen_cents(static_cast<int64_t>(item.value.size()), item.currency);
    }
  }
  return 0;
}
