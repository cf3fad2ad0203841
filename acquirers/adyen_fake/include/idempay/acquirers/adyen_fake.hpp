#pragma once
// A fake Adyen: a stateful implementation of the Checkout API subset idempay's adapter uses
// (docs/acquirers.md), for tests and for trying the whole flow locally (`idempay-sandbox adyen-fake`).
// X-API-Key; POST /payments under an Idempotency-Key (the first answer replayed, another body
// under a used key refused with errorCode 704, as the API does); captures, refunds and cancels
// answered "received" and carried out afterwards; a signed standard notification for every
// payment and modification, sent again until it is answered [accepted]. Card rules as the
// in-process stub's; boletos (boletobancario) issued as vouchers, pending until the shopper
// pays (AUTHORISATION) or they expire (OFFER_CLOSED). It keeps a ledger of everything it did.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "idempay/http/server.hpp"

namespace idempay::acquirer {

struct AdyenFakeOptions {
  std::string api_key;
  /// The merchant accounts payments may name; empty: any.
  std::vector<std::string> merchant_accounts;
  /// Where notifications go (the connector's /webhooks/adyen/{merchant}/{acquirer}); empty:
  /// none are sent.
  std::string notification_url;
  std::string hmac_key;  ///< hex: signs every notification item
  /// Basic authentication on the notifications, when set.
  std::string notification_username;
  std::string notification_password;
  /// A payment answered Received or RedirectShopper is decided this long afterwards.
  std::chrono::milliseconds pending_delay{500};
  /// The AUTHORISATION notification of a payment decided at once is sent before its answer.
  bool notify_before_answer = false;
  /// Every answer of the Checkout API is held this long after the request was carried out
  /// (crash tests); the fake's own routes answer at once.
  std::chrono::milliseconds latency{0};
  int notification_attempts = 8;
  std::chrono::milliseconds notification_retry_base{200};
};

class AdyenFake final : public http::Handler {
public:
  explicit AdyenFake(AdyenFakeOptions options);
  ~AdyenFake() override;
  AdyenFake(const AdyenFake&) = delete;
  AdyenFake& operator=(const AdyenFake&) = delete;

  /// The Checkout routes, and the fake's own under /fake/: POST /fake/fail-next/{pspReference}
  /// (the payment's next capture or refund fails: CAPTURE_FAILED, REFUND_FAILED), POST
  /// /fake/notification-url ({"url": ...}: where notifications go from now on), POST
  /// /fake/pay/{pspReference} and /fake/expire/{pspReference} (a boleto paid, or expired
  /// unpaid), GET /fake/ledger.
  void handle(http::Request request, http::Responder respond) override;

  /// Everything it did, as JSON (GET /fake/ledger).
  std::string ledger_json() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace idempay::acquirer
