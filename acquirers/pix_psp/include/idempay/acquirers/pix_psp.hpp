#pragma once
// A fake Pix PSP: a stateful implementation of the API Pix subset idempay's adapter uses
// (docs/acquirers.md), for tests and for trying the whole flow locally (`idempay-sandbox pix-psp`).
// OAuth2 client credentials; immediate charges (PUT, GET, PATCH /cob/{txid}, upserted only
// while ATIVA); Pix received by a trigger, refused once a charge has expired; devolucoes with
// the document's rules (ids never reused, the total bounded by the Pix, 90 days); notification
// webhooks with retries, presenting a client certificate. Its answers follow the document's
// schemas. It keeps a ledger of everything it did, so tests can count charges and refunds.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "idempay/http/client.hpp"
#include "idempay/http/server.hpp"

namespace idempay::acquirer {

struct PixPspOptions {
  std::string client_id = "idempay";
  std::string client_secret;
  std::chrono::seconds token_lifetime{3600};
  /// The receiver's Pix keys charges may name; empty: any.
  std::vector<std::string> pix_keys;
  /// The host of the payload locations it hands out (https://HOST/qr/v2/...).
  std::string location_host = "pix.psp.example";
  /// A devolucao stays EM_PROCESSAMENTO this long before it is DEVOLVIDO; 0: at once.
  std::chrono::milliseconds refund_delay{0};
  /// Notifications: the client certificate presented and the CA that verifies the receiver.
  http::ClientOptions webhook_tls;
  int webhook_attempts = 5;
  /// Every answer is held this long after the request was carried out (crash tests).
  std::chrono::milliseconds latency{0};
  std::chrono::milliseconds webhook_retry_base{200};
};

class PixPsp final : public http::Handler {
public:
  explicit PixPsp(PixPspOptions options);
  ~PixPsp() override;
  PixPsp(const PixPsp&) = delete;
  PixPsp& operator=(const PixPsp&) = delete;

  /// The API Pix routes, POST /oauth/token, and the fake's own under /fake/: POST
  /// /fake/pay/{txid} (a payer pays the charge), POST /fake/age/{txid} ({"seconds": N}: as if
  /// created N seconds earlier), POST /fake/devolucao/{e2eid}/{id} (ends a
  /// devolucao in processing: {"status": "DEVOLVIDO" | "NAO_REALIZADO"}), POST
  /// /fake/expire-tokens, GET /fake/ledger.
  void handle(http::Request request, http::Responder respond) override;

  /// A payer pays the ATIVA, unexpired charge `txid` in full: its endToEndId, or an error
  /// (kNotFound, kIllegalState) saying why not. Notifies the webhook of its key, if any.
  Result<std::string> pay(const std::string& txid);

  /// Everything it did, as JSON (GET /fake/ledger).
  std::string ledger_json() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace idempay::acquirer
