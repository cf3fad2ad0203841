#pragma once
// The acquirer adapter for Pix through the Banco Central do Brasil's API Pix, the standard
// every Brazilian PSP implements (docs/acquirers.md): a payment is an immediate charge
// (`cob`) created with PUT under a txid derived from the paymentId, its outcome is the charge's
// status, a cancellation removes the charge, a refund is a `devolucao` under an id derived
// from the requestId. Every call is idempotent under those ids, so a retry after a timeout or a
// crash never charges or refunds twice.
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <vector>

#include "idempay/acquirers/extension.hpp"
#include "idempay/domain/acquirer.hpp"
#include "idempay/http/client.hpp"

namespace idempay::acquirer {

struct BcbPixOptions {
  /// The PSP's API Pix root: the document's paths (/cob/{txid}, /pix/{e2eid}/devolucao/{id})
  /// are appended to it, e.g. https://pix.psp.example/api/v2
  std::string base_url;
  /// OAuth2 client credentials: the token endpoint, the client's id and secret, and the scopes
  /// asked for (empty: the PSP's default for the client).
  std::string token_url;
  std::string client_id;
  std::string client_secret;
  std::string scope;
  /// Mutual TLS: the client certificate and key the PSP issued, and the PSP's CA.
  http::ClientOptions tls;
  /// The receiver's Pix key (chave DICT) the charges are paid to.
  std::string pix_key;
  /// Each HTTP exchange at most; a call that runs out is reported as kTimeout (outcome unknown).
  std::chrono::milliseconds timeout{10'000};
  /// A token is renewed this long before the PSP says it expires.
  std::chrono::seconds token_margin{60};
  /// An expired charge still ATIVA is removed (so that it can no longer be paid) and reported
  /// denied only once it is this much past its expiry: a payment begun just before the end
  /// may still be settling.
  std::chrono::seconds expiry_grace{120};
};

/// The adapter. Its calls run on its own HTTP client's thread and never block the caller.
std::unique_ptr<domain::Acquirer> make_bcb_pix_acquirer(BcbPixOptions options);

/// The connector's side of an API Pix PSP: where it registers the PSP's notifications, and
/// whose client certificates it takes them from.
struct PixWebhookSettings {
  /// What `idempay pix-webhook register` hands the PSP (PUT /webhook/{chave}); empty: the
  /// connector's public URL + /webhooks/bcb-pix/{merchant}/{acquirer}.
  std::string url;
  /// SHA-256 fingerprints (lower-case hex) of the client certificates the PSP presents when it
  /// calls; empty: notifications are taken from anyone (each is only a hint, confirmed with
  /// the PSP).
  std::vector<std::string> certificate_sha256;
};

/// A merchants file entry of kind "bcb-pix" (docs/acquirers.md): the PSP and its notifications.
struct BcbPixSettings final : Settings {
  BcbPixOptions pix;
  PixWebhookSettings webhook;
  std::string identity() const override;
};

/// The kind "bcb-pix" (extension.hpp): its entries' settings, its acquirer, and its
/// notifications on /webhooks/bcb-pix/{merchant}/{acquirer}[/pix].
const Kind& bcb_pix_kind();
/// The settings of an entry of that kind; null for another kind's.
const BcbPixSettings* bcb_pix_settings(const Settings& settings);

/// A charge a notification names, and whether it names devolucoes of its Pix too (a
/// devolucao that ended is notified with the Pix it returns).
struct PixHint {
  std::string txid;
  bool devolucoes = false;
  bool operator==(const PixHint& o) const { return txid == o.txid && devolucoes == o.devolucoes; }
};
/// The distinct charges a notification names, at most kMaxHintsPerNotification of them; a Pix
/// without a txid is none of the connector's charges. kInvalidArgument for a body that is not
/// {"pix": [objects]}.
Result<std::vector<PixHint>> read_pix_notification(std::string_view body);
inline constexpr size_t kMaxHintsPerNotification = 100;
/// Takes a notification for an entry (notifications.cpp): each charge it names is looked up and
/// asked of the PSP, never believed.
void take_pix_notification(const BcbPixSettings& settings, const Notification& notification);

/// The PSP's notifications for the options' Pix key, through its API (PUT, GET, DELETE
/// /webhook/{chave}): `url` registered (the PSP posts to it + "/pix"), what is registered (the
/// PSP's WebhookCompleto), or nothing any more. Blocking, for the command line's tools only.
Status register_pix_webhook(const BcbPixOptions& options, const std::string& url);
Result<std::string> show_pix_webhook(const BcbPixOptions& options);
Status delete_pix_webhook(const BcbPixOptions& options);

/// The txid of a payment's charge: 32 of [a-z0-9] from the SHA-256 of the paymentId, within
/// the document's [a-zA-Z0-9]{26,35}; the same paymentId always gives the same charge.
std::string pix_txid(std::string_view payment_id);

/// The id of a refund's devolucao: 32 of [a-z0-9] from the SHA-256 of the requestId (the
/// document allows [a-zA-Z0-9]{1,35}).
std::string pix_refund_id(std::string_view request_id);

/// The reference-index key of a charge (domain::Acquirer::reference): "bcb-pix/" + txid.
std::string pix_reference(std::string_view txid);

/// Pix amounts are strings with two decimals ("31.90"), as the document's `valor` fields.
std::string pix_amount(Cents amount);
/// The amount of such a string; kInvalidArgument for anything else.
Result<Cents> parse_pix_amount(std::string_view text);

}  // namespace idempay::acquirer
