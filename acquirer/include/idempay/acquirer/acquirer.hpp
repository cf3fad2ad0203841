#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "idempay/protocol/card.hpp"
#include "idempay/protocol/error.hpp"
#include "idempay/protocol/money.hpp"
#include "idempay/protocol/ppp.hpp"

namespace idempay::acquirer {

enum class AuthorizationStatus : uint8_t { kApproved, kDenied, kPending };
std::string_view to_string(AuthorizationStatus s);

/// What the shopper needs to pay an asynchronous method, as the acquirer issued it.
struct PaymentDocument {
  std::string payment_url;    ///< boleto page or redirect target
  std::string pix_code;       ///< Pix copy-and-paste code (EMV BR Code)
  std::string pix_qr_png;     ///< base64 PNG of the Pix code's QR
  std::string boleto_barcode;         ///< 44 digits
  std::string boleto_line;            ///< 47 digits
  std::string boleto_line_formatted;
  int64_t expires_in_seconds = 0;     ///< how long the document stays payable
  // Card-present (POS) result details
  std::string card_brand;
  std::string first_digits;
  std::string last_digits;
};

/// An authorization, idempotent on `key` (the paymentId): the acquirer charges at most once
/// per key and answers every repeat with the same result.
struct AuthorizeCall {
  std::string key;
  Cents amount = 0;
  std::string currency;
  std::string payment_method;
  std::string merchant_name;
  std::string terminal_serial;  ///< POS: the terminal that takes the card
  int64_t installments = 1;
  std::string shopper_interaction;
  ppp::OrderData order;                    ///< buyer, addresses, items, device: anti-fraud data
  std::vector<ppp::Recipient> recipients;  ///< split on authorization
  CardSecret card;
  /// The gateway's Secure Proxy for this call (already checked against the allowlist): with
  /// card tokens, the call goes through it and the tokens stand where card data goes.
  std::string secure_proxy_url;
};

struct Authorization {
  AuthorizationStatus status = AuthorizationStatus::kPending;
  std::string tid;
  std::string nsu;
  std::string authorization_id;
  std::string acquirer;
  std::string code;
  std::string message;
  int64_t revision = 0;  ///< increases with every change of this authorization's status
  PaymentDocument document;
  /// The most that may be captured when more than the amount (order changes); 0: the amount.
  Cents max_value = 0;
};

/// An outcome the acquirer reports by webhook ("authorization.updated"): the authorization
/// under `key` (the paymentId) as it stands now.
struct AuthorizationEvent {
  std::string key;
  Authorization authorization;
};

/// The webhook body, both ways: the stub writes it, the connector reads it once its signature
/// has been verified. kInvalidArgument for a body that is not such an event (unknown status,
/// no key, malformed or duplicated JSON members).
std::string encode_event(const AuthorizationEvent& event);
Result<AuthorizationEvent> decode_event(std::string_view body);

/// A capture, cancellation or refund, idempotent on `key` (the requestId).
struct OperationCall {
  ppp::OperationKind kind = ppp::OperationKind::kCancel;
  std::string key;
  std::string payment_key;  ///< the authorization's key (paymentId)
  std::string tid;
  Cents amount = 0;
  std::vector<ppp::Recipient> recipients;  ///< split on capture, or of a refund
};

/// The acquirer's answer to an operation: done (`succeeded`), refused, accepted but not yet
/// completed (`pending`: ask again under the same key), or not possible by API (`manual`: the
/// merchant must do it by hand).
struct OperationOutcome {
  bool succeeded = false;
  std::string id;
  Cents amount = 0;
  std::string code;
  std::string message;
  bool pending = false;
  bool manual = false;
};

template <class T>
using Callback = std::function<void(Result<T>)>;

/// The acquirer as the connector sees it. Every call is asynchronous and calls back exactly
/// once, from any thread. kTimeout means the outcome is unknown; kUnavailable that the call
/// surely did not happen or failed before the acquirer acted.
class Acquirer {
public:
  virtual ~Acquirer() = default;
  virtual void authorize(AuthorizeCall call, Callback<Authorization> done) = 0;
  virtual void operate(OperationCall call, Callback<OperationOutcome> done) = 0;
  /// The authorization recorded under `key`; nullopt if the acquirer never saw that key.
  virtual void status(std::string key, Callback<std::optional<Authorization>> done) = 0;
};

struct StubOptions {
  /// Added before every answer. Default: 0
  std::chrono::milliseconds latency{0};
  /// How long a pending authorization (cards 4222222222222224/5) stays pending. Default: 2 s
  std::chrono::milliseconds pending_delay{2000};
  /// Approved authorizations may be captured up to this much more than their amount (their
  /// maxValue), in percent; 0: no more than the amount. Default: 0
  int over_capture_percent = 0;
  /// How long a refund stays pending after it is accepted; 0: refunds complete at once.
  /// Default: 0
  std::chrono::milliseconds refund_delay{0};
  /// Operations this acquirer cannot do by API: answered `manual`, nothing moved. Default: none
  bool manual_cancel = false;
  bool manual_refund = false;
};

/// Where the stub reports outcomes: signed Standard Webhooks POSTed to `url`, retried with
/// backoff until a 2xx acknowledges them.
struct StubWebhookOptions {
  std::string url;
  std::string key;  ///< raw secret bytes (decode "whsec_..." with webhooks::decode_secret)
  std::chrono::milliseconds retry_base{200};
  int max_attempts = 60;
};

enum class TriggerOutcome : uint8_t { kApprove, kDeny, kExpire };

/// The deterministic acquirer stub, idempotent per key, with a ledger of calls and charges.
/// Cards: 4444333322221111 approved, 4444333322221112 denied, 4222222222222224 pending then
/// approved, 4222222222222225 pending then denied, any other Luhn-valid card approved, an
/// invalid one denied; 4000000000003220 / 4000000000003238 ask for a 3-D Secure challenge
/// (pending, with the challenge page's URL) and are then approved / denied. No card number
/// (tokenized or non-card methods): approved.
class StubAcquirer final : public Acquirer {
public:
  explicit StubAcquirer(StubOptions options = {});
  ~StubAcquirer() override;

  void authorize(AuthorizeCall call, Callback<Authorization> done) override;
  void operate(OperationCall call, Callback<OperationOutcome> done) override;
  void status(std::string key, Callback<std::optional<Authorization>> done) override;

  /// Reports every later change of a pending authorization as a signed webhook.
  void enable_webhooks(StubWebhookOptions options);

  /// Resolves a pending authorization now (approve, deny, or expire = deny with code
  /// "expired"); false if the key is unknown or no longer pending.
  bool trigger(const std::string& key, TriggerOutcome outcome);

  /// The ledger as JSON: {"authorizations":{key:{calls,charges,tid,status}}, "captures":...,
  /// "cancellations":..., "refunds":...}. Card data is never part of it.
  std::string ledger_json() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// How authorizations with card tokens reach the acquirer through the gateway's Secure Proxy.
struct SecureProxyOptions {
  /// The proxy may be on loopback or a private network, over plain http (tests only; the
  /// proxy URL's host was checked against --secure-proxy-allowed-hosts). Default: false
  bool allow_private = false;
  /// Extra PEM CA trusted for the proxy's TLS, besides the system store. Default: none
  std::string extra_ca_file;
};

/// An acquirer reached over HTTP with the stub's JSON protocol (see docs/acquirer-protocol.md).
/// A non-empty `api_key` is sent as `Authorization: Bearer KEY` with every call. An
/// authorization that carries a Secure Proxy URL and card tokens is POSTed to the proxy with
/// `X-PROVIDER-Forward-To` naming the acquirer's URL and the acquirer's headers prefixed
/// `X-PROVIDER-Forward-`; every other call goes to the acquirer directly. Null for a
/// malformed URL or key.
std::unique_ptr<Acquirer> make_http_acquirer(const std::string& base_url, std::chrono::milliseconds timeout,
                                             const std::string& api_key = {}, SecureProxyOptions proxy = {});

/// True if the authorization goes through the Secure Proxy: a proxy URL and a card token.
bool through_secure_proxy(const AuthorizeCall& call);

}  // namespace idempay::acquirer
