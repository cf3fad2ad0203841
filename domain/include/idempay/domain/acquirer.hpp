#pragma once
// The acquirer as the payment core and its actors see it: the port. What each call carries and
// answers, and the interface every acquirer adapter implements (acquirers/: the stub, the HTTP
// client of idempay's own acquirer protocol, and others). Linking it links no adapter.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "idempay/protocol/card.hpp"
#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"
#include "idempay/protocol/ppp.hpp"

namespace idempay::domain {

enum class AuthorizationStatus : uint8_t { kApproved, kDenied, kPending };
std::string_view to_string(AuthorizationStatus s);

/// What the shopper needs to pay an asynchronous method, as the acquirer issued it (the PPP
/// writes it into the gateway's fields for the method).
using ppp::PaymentDocument;

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
  /// How long an asynchronous method's document may be paid (the method's delay to cancel):
  /// a Pix charge expires then.
  int64_t payable_for_seconds = 0;
  /// When the payment was first asked for (Unix ms, its record's creation): the same on every
  /// retry of the call, so that what is derived from it (a boleto's due date) is too.
  int64_t first_asked_at = 0;
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
  /// Pending, and the acquirer's status call tells when it ends (API Pix: a charge paid or
  /// removed): the connector asks it on a schedule until the document expires, so that the
  /// outcome is known even when no notification comes.
  bool watch = false;
};

/// A capture, cancellation or refund, idempotent on `key` (the requestId).
struct OperationCall {
  ppp::OperationKind kind = ppp::OperationKind::kCancel;
  std::string key;
  std::string payment_key;  ///< the authorization's key (paymentId)
  std::string tid;
  Cents amount = 0;
  std::vector<ppp::Recipient> recipients;  ///< split on capture, or of a refund
  std::string currency;                    ///< the payment's (ISO 4217)
  std::string payment_method;              ///< the payment's (an adapter may serve several)
  /// The payment's authorization is known (approved, settled): a cancel voids it. False while
  /// its outcome is not known (undefined): a cancel withdraws what the shopper was asked to pay.
  bool authorized = false;
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
  /// The same, for a payment of `payment_method`: an acquirer whose answer depends on it
  /// overrides this (Adyen has no status call: a card's outcome is awaited from its
  /// notification, a boleto is asked for again under the same key, in the same bytes).
  virtual void status_of(std::string key, const std::string& payment_method,
                         Callback<std::optional<Authorization>> done) {
    (void)payment_method;
    status(std::move(key), std::move(done));
  }
  /// The name this acquirer knows the payment of `key` by, when its notifications name only
  /// that (API Pix: the txid), as a key of the connector's reference index; empty: none.
  virtual std::string reference(const std::string& key) const {
    (void)key;
    return {};
  }
};

/// True if the authorization goes through the Secure Proxy: a proxy URL and a card token.
bool through_secure_proxy(const AuthorizeCall& call);

}  // namespace idempay::domain

namespace idempay::acquirer {
// The adapters (acquirers/) name the port's types by their short names.
using domain::Acquirer;
using domain::AuthorizeCall;
using domain::Authorization;
using domain::AuthorizationStatus;
using domain::OperationCall;
using domain::OperationOutcome;
using domain::PaymentDocument;
using domain::Callback;
using domain::through_secure_proxy;
}  // namespace idempay::acquirer
