#pragma once
// The acquirer adapter for cards through Adyen's Checkout API (v71; docs/acquirers.md): a
// payment is POST /payments under an Idempotency-Key derived from the paymentId; captures,
// refunds and cancellations are POST /payments/{pspReference}/... under keys derived from the
// requestId, each answered "received" and reported by notification. Checkout has no status
// call: an outcome the connector did not hear is awaited from the AUTHORISATION notification
// (never asked for again with the card), so no card data is ever needed after the first call.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/acquirers/extension.hpp"
#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"
#include "idempay/domain/acquirer.hpp"

namespace idempay::acquirer {

struct AdyenOptions {
  /// The Checkout API's root with its version: https://checkout-test.adyen.com/v71 for the
  /// test environment, https://{prefix}-checkout-live.adyenpayments.com/checkout/v71 live.
  std::string base_url;
  std::string api_key;           ///< sent as X-API-Key
  std::string merchant_account;  ///< the merchant account payments are made to
  /// Where a shopper sent to a redirect page (3-D Secure) comes back: the PaymentRequest's
  /// required returnUrl.
  std::string return_url;
  /// Each HTTP exchange at most; a call that runs out is reported as kTimeout (outcome unknown).
  std::chrono::milliseconds timeout{10'000};
  /// Card tokens go through the gateway's Secure Proxy, which puts the card data in their place.
  SecureProxyOptions secure_proxy;
};

/// The adapter. Its calls run on its own HTTP client's thread and never block the caller.
std::unique_ptr<domain::Acquirer> make_adyen_acquirer(AdyenOptions options);

/// How the connector takes Adyen's standard notifications for an entry.
struct AdyenNotificationSettings {
  /// Hex HMAC keys: each notification item must be signed under one of them (two while the
  /// key is rotated).
  std::vector<std::string> hmac_keys;
  /// Basic authentication Adyen sends with them, when configured in its Customer Area.
  std::string username;
  std::string password;
};

/// A merchants file entry of kind "adyen" (docs/acquirers.md): the Checkout API and its
/// notifications.
struct AdyenSettings final : Settings {
  AdyenOptions options;
  AdyenNotificationSettings notifications;
  std::string identity() const override;
};

/// The kind "adyen" (extension.hpp): its entries' settings, its acquirer, and its
/// notifications on /webhooks/adyen/{merchant}/{acquirer}.
const Kind& adyen_kind();
/// The settings of an entry of that kind; null for another kind's.
const AdyenSettings* adyen_settings(const Settings& settings);
/// Takes a notification for an entry (webhook.cpp): signed items only, each through the
/// inbox, reaching only payments created through the entry in the notification's path.
void take_adyen_notification(const AdyenSettings& settings, const Notification& notification);

/// The Idempotency-Key of a call: "idempay-" and 48 hex digits of the SHA-256 of what it is
/// ("payment", "capture", "refund", "cancel") and the paymentId or requestId; 56 characters,
/// within the API's 64. The same call always gets the same key.
std::string adyen_idempotency_key(std::string_view purpose, std::string_view id);

/// The reference-index key of a payment made through `merchant_account`: notifications name
/// the payment by its merchantReference (the paymentId) and account, so only a payment this
/// account was asked to make is found.
std::string adyen_reference(std::string_view merchant_account, std::string_view payment_id);

/// Amounts in the currency's minor units by its ISO 4217 exponent (BRL 2, CLP 0, KWD 3):
/// kInvalidArgument for an unknown currency or an amount with more decimals than it has.
Result<int64_t> adyen_minor_units(Cents amount, std::string_view currency);
/// The inverse, for a notification's amount.
Result<Cents> adyen_cents(int64_t minor_units, std::string_view currency);

/// One NotificationRequestItem of a standard notification (Webhooks v1), its fields as sent.
struct AdyenNotification {
  std::string event_code;
  std::string psp_reference;
  std::string original_reference;
  std::string merchant_account;
  std::string merchant_reference;
  std::string value;  ///< amount.value as its digits
  std::string currency;
  std::string success;  ///< "true" or "false"
  std::string reason;
  /// A successful AUTHORISATION's authorisation code: from `reason` (authCode:last4:expiry, as
  /// Adyen documents it), else additionalData.authCode (sent when the account is set to).
  std::string auth_code;
  std::string hmac_signature;  ///< additionalData.hmacSignature
};

/// The items of a notification body {"live": ..., "notificationItems": [{"NotificationRequestItem":
/// {...}}]}, at most kMaxNotificationItems; kInvalidArgument for anything else.
Result<std::vector<AdyenNotification>> read_adyen_notifications(std::string_view body);
inline constexpr size_t kMaxNotificationItems = 100;

/// What Adyen signs: pspReference, originalReference, merchantAccountCode, merchantReference,
/// value, currency, eventCode and success, joined by ':'.
std::string adyen_signing_payload(const AdyenNotification& item);
/// The signature of an item under a key given as hex (the Customer Area's form): base64 of
/// HMAC-SHA256 over the signing payload. Empty for a key that is not hex.
std::string adyen_signature(const AdyenNotification& item, std::string_view hex_key);
/// True if the item's hmacSignature is the signature under one of the keys (several during a
/// rotation), compared in constant time.
bool adyen_signature_valid(const AdyenNotification& item, const std::vector<std::string>& hex_keys);

}  // namespace idempay::acquirer
