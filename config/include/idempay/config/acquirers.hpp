#pragma once
// A merchant's acquirers (the merchants file's "acquirers" list; docs/acquirers.md): each
// named, of a kind, serving some payment methods or all the others. A payment keeps the one it
// was created with, by name, through reloads, restarts and other instances.
#include <string>
#include <string_view>
#include <vector>

#include "idempay/acquirers/adyen.hpp"
#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/base/error.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay::config {

enum class AcquirerKind : uint8_t {
  kStub,    ///< the in-process deterministic stub
  kHttp,    ///< idempay's own acquirer protocol (docs/acquirer-protocol.md)
  kBcbPix,  ///< a Pix PSP through the Banco Central's API Pix
  kAdyen,   ///< cards through Adyen's Checkout API
};
std::string_view to_string(AcquirerKind kind);

/// The connector's side of an API Pix PSP: where it registers the PSP's notifications, and
/// whose client certificates it takes them from.
struct PixWebhookSettings {
  /// What `idempay pix-webhook register` hands the PSP (PUT /webhook/{chave}); empty: the
  /// connector's public URL + /webhooks/bcb-pix/{merchant}/{acquirer}.
  std::string url;
  /// SHA-256 fingerprints (hex) of the client certificates the PSP presents when it calls;
  /// empty: notifications are taken from anyone (each is only a hint, confirmed with the PSP).
  std::vector<std::string> certificate_sha256;
};

/// How the connector takes Adyen's standard notifications for an adyen acquirer.
struct AdyenNotificationSettings {
  /// Hex HMAC keys: each notification item must be signed under one of them (two while the
  /// key is rotated).
  std::vector<std::string> hmac_keys;
  /// Basic authentication Adyen sends with them, when configured in its Customer Area.
  std::string username;
  std::string password;
};

struct AcquirerEntry {
  std::string name;  ///< unique within the merchant: [A-Za-z0-9_-]{1,64}
  AcquirerKind kind = AcquirerKind::kStub;
  std::vector<std::string> methods;  ///< the methods it serves; empty: every method no other entry names
  std::string url;                   ///< kHttp: the acquirer's base URL
  std::string api_key;               ///< kHttp: sent as `Authorization: Bearer ...`
  acquirer::BcbPixOptions pix;       ///< kBcbPix
  PixWebhookSettings pix_webhook;    ///< kBcbPix
  acquirer::AdyenOptions adyen;      ///< kAdyen
  AdyenNotificationSettings adyen_notifications;  ///< kAdyen
};

/// The stored route of a merchant's named acquirer ("@" + name): what a payment keeps.
std::string named_route(std::string_view name);
/// The name in such a route; empty for any other route ("stub", a URL).
std::string_view route_name(std::string_view route);

/// Reads and checks a merchant's "acquirers" list: fields by kind, names unique, each method a
/// known one served by one entry at most, at most one entry without methods, API Pix entries
/// serving Pix only with their TLS files loadable, Adyen entries naming the card methods they
/// serve. kInvalidArgument naming the place.
Result<std::vector<AcquirerEntry>> read_acquirers(const JsonValue& list, const std::string& where);

/// The entry serving `method`: the one naming it, else the one naming none; null if neither.
const AcquirerEntry* acquirer_for(const std::vector<AcquirerEntry>& entries, std::string_view method);
const AcquirerEntry* acquirer_named(const std::vector<AcquirerEntry>& entries, std::string_view name);

}  // namespace idempay::config
