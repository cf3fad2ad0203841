// Adyen's standard notifications: reading them boundedly and their HMAC signature, as Adyen's
// documentation defines it (hex key; base64 of HMAC-SHA256 over eight fields joined by ':').
#include <algorithm>
#include <cctype>
#include <optional>

#include "idempay/acquirers/adyen.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/webhooks.hpp"

namespace idempay::acquirer {

namespace {

constexpr size_t kMaxFieldBytes = 512;

// A string member, or a number's text (amount.value); "" when absent. Too long: an error.
Result<std::string> field(const JsonValue& object, std::string_view name) {
  const JsonValue* v = object.find(name);
  if (v == nullptr || v->is_null()) {
    return std::string();
  }
  if (v->type() != JsonValue::Type::kString && v->type() != JsonValue::Type::kNumber) {
    return make_error(ErrorCode::kInvalidArgument, std::string(name) + " must be a string");
  }
  if (v->text().size() > kMaxFieldBytes) {
    return make_error(ErrorCode::kInvalidArgument, std::string(name) + " is too long");
  }
  return v->text();
}

// Adyen documents a successful AUTHORISATION's authorisation code in `reason`, as
// "authCode:last4:expiry" (874574:1935:11/2020); additionalData.authCode holds it only when the
// account is set to send it. "" for a reason of another shape.
std::string auth_code_in_reason(std::string_view reason) {
  auto first = reason.find(':');
  auto second = first == std::string_view::npos ? first : reason.find(':', first + 1);
  if (second == std::string_view::npos || reason.find(':', second + 1) != std::string_view::npos) {
    return {};
  }
  std::string_view code = reason.substr(0, first);
  std::string_view last4 = reason.substr(first + 1, second - first - 1);
  std::string_view expiry = reason.substr(second + 1);
  auto all = [](std::string_view s, auto pred) { return std::all_of(s.begin(), s.end(), pred); };
  bool shaped = !code.empty() && code.size() <= 20
                && all(code, [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })
                && last4.size() == 4 && all(last4, [](char c) { return c >= '0' && c <= '9'; })
                && expiry.find('/') != std::string_view::npos && expiry.size() <= 7;
  return shaped ? std::string(code) : std::string();
}

Result<AdyenNotification> read_item(const JsonValue& wrapper) {
  const JsonValue* item = wrapper.find("NotificationRequestItem");
  if (item == nullptr || item->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kInvalidArgument, "each notification item is {\"NotificationRequestItem\": {...}}");
  }
  AdyenNotification n;
  std::pair<std::string_view, std::string*> fields[] = {
      {"eventCode", &n.event_code},          {"pspReference", &n.psp_reference},
      {"originalReference", &n.original_reference}, {"merchantAccountCode", &n.merchant_account},
      {"merchantReference", &n.merchant_reference}, {"success", &n.success},
      {"reason", &n.reason}};
  for (auto& [name, target] : fields) {
    auto value = field(*item, name);
    if (!value) {
      return tl::unexpected(value.error());
    }
    *target = std::move(*value);
  }
  if (const JsonValue* amount = item->find("amount"); amount != nullptr && amount->type() == JsonValue::Type::kObject) {
    auto value = field(*amount, "value");
    auto currency = field(*amount, "currency");
    if (!value || !currency) {
      return tl::unexpected(!value ? value.error() : currency.error());
    }
    n.value = std::move(*value);
    n.currency = std::move(*currency);
  }
  if (const JsonValue* extra = item->find("additionalData"); extra != nullptr && extra->type() == JsonValue::Type::kObject) {
    auto signature = field(*extra, "hmacSignature");
    auto auth_code = field(*extra, "authCode");
    if (!signature || !auth_code) {
      return tl::unexpected(!signature ? signature.error() : auth_code.error());
    }
    n.hmac_signature = std::move(*signature);
    n.auth_code = std::move(*auth_code);
  }
  if (n.event_code.empty() || n.psp_reference.empty() || (n.success != "true" && n.success != "false")) {
    return make_error(ErrorCode::kInvalidArgument, "a notification item needs eventCode, pspReference and success");
  }
  if (n.event_code == "AUTHORISATION" && n.success == "true") {
    if (std::string code = auth_code_in_reason(n.reason); !code.empty()) {
      n.auth_code = std::move(code);
    }
  }
  return n;
}

}  // namespace

Result<std::vector<AdyenNotification>> read_adyen_notifications(std::string_view body) {
  auto parsed = JsonValue::parse(body);
  if (!parsed || parsed->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kInvalidArgument, "a notification is a JSON object");
  }
  const JsonValue* items = parsed->find("notificationItems");
  if (items == nullptr || items->type() != JsonValue::Type::kArray || items->items().empty()) {
    return make_error(ErrorCode::kInvalidArgument, "notificationItems must be a non-empty array");
  }
  if (items->items().size() > kMaxNotificationItems) {
    return make_error(ErrorCode::kInvalidArgument, "at most 100 notification items at once");
  }
  std::vector<AdyenNotification> out;
  for (const auto& wrapper : items->items()) {
    auto item = read_item(wrapper);
    if (!item) {
      return tl::unexpected(item.error());
    }
    out.push_back(std::move(*item));
  }
  return out;
}

std::string adyen_signing_payload(const AdyenNotification& n) {
  return n.psp_reference + ':' + n.original_reference + ':' + n.merchant_account + ':' + n.merchant_reference + ':' +
         n.value + ':' + n.currency + ':' + n.event_code + ':' + n.success;
}

namespace {

// The key's bytes from its hex form; nullopt for anything that is not hex.
std::optional<std::string> key_bytes(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0 || hex.size() > 256) {
    return std::nullopt;
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string key;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]);
    int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      return std::nullopt;
    }
    key.push_back(static_cast<char>(hi * 16 + lo));
  }
  return key;
}

std::optional<crypto::Digest> mac_of(const AdyenNotification& item, std::string_view hex_key) {
  auto key = key_bytes(hex_key);
  if (!key) {
    return std::nullopt;
  }
  return crypto::hmac_sha256(*key, adyen_signing_payload(item));
}

}  // namespace

std::string adyen_signature(const AdyenNotification& item, std::string_view hex_key) {
  auto mac = mac_of(item, hex_key);
  return mac ? webhooks::base64_encode(std::string_view(reinterpret_cast<const char*>(mac->data()), mac->size()))
             : std::string();
}

bool adyen_signature_valid(const AdyenNotification& item, const std::vector<std::string>& hex_keys) {
  auto given = webhooks::base64_decode(item.hmac_signature);
  crypto::Digest received{};
  if (!given || given->size() != received.size()) {
    return false;
  }
  std::copy(given->begin(), given->end(), received.begin());
  bool valid = false;
  for (const auto& key : hex_keys) {
    auto expected = mac_of(item, key);
    valid |= expected && crypto::constant_time_equal(received, *expected);  // every key tried
  }
  return valid;
}

}  // namespace idempay::acquirer
