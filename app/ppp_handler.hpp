#pragma once

#include <string>
#include <vector>

#include "idempay/actors/payment_service.hpp"
#include "idempay/http/server.hpp"
#include "idempay/http/url.hpp"

namespace idempay::app {

/// The PPP routes: GET /manifest, GET /payment-methods, POST /payments,
/// POST /payments/{paymentId}/{cancellations|settlements|refunds}, the inbound routes
/// POST /payments/{paymentId}/inbound[-request]/{action}, and the acquirer's signed webhooks on
/// POST /webhooks/acquirer. Parses and validates with protocol/, hands the payment to the
/// PaymentService, answers through the responder.
struct PppHandlerOptions {
  /// Raw secrets accepted on POST /webhooks/acquirer (several during rotation).
  std::vector<std::string> webhook_keys;
  /// The in-process acquirer stub, if that is the acquirer; enables POST /stub/trigger.
  acquirer::StubAcquirer* stub = nullptr;
  /// What a Create Payment's callbackUrl and secureProxyUrl must satisfy to be accepted.
  http::DestinationRules callback_urls;
  http::DestinationRules secure_proxy_urls;
};

class PppHandler final : public http::Handler {
public:
  PppHandler(actors::PaymentService& service, PppHandlerOptions options);
  void handle(http::Request request, http::Responder respond) override;

private:
  void create_payment(http::Request& request, const http::Responder& respond);
  void operate(ppp::OperationKind kind, std::string_view payment_id, http::Request& request,
               const http::Responder& respond);
  void acquirer_webhook(http::Request& request, const http::Responder& respond);
  void inbound(std::string_view payment_id, http::Request& request, const http::Responder& respond);
  void submit_terminal(std::string_view payment_id, http::Request& request, const http::Responder& respond);
  void stub_trigger(http::Request& request, const http::Responder& respond);

  actors::PaymentService& service_;
  PppHandlerOptions options_;
  std::string manifest_;
  std::string payment_methods_;
};

}  // namespace idempay::app
