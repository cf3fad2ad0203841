#pragma once

#include <string>
#include <vector>

#include "idempay/actors/payment_service.hpp"
#include "idempay/http/server.hpp"

namespace idempay::app {

/// The PPP routes: GET /manifest, GET /payment-methods, POST /payments and
/// POST /payments/{paymentId}/{cancellations|settlements|refunds}. Parses and validates with
/// protocol/, hands the payment to the PaymentService, answers through the responder.
class PppHandler final : public http::Handler {
public:
  explicit PppHandler(actors::PaymentService& service);
  void handle(http::Request request, http::Responder respond) override;

  /// Card brands the manifest declares and Create Payment accepts.
  static const std::vector<std::string>& payment_methods();

private:
  void create_payment(http::Request& request, const http::Responder& respond);
  void operate(ppp::OperationKind kind, std::string_view payment_id, http::Request& request,
               const http::Responder& respond);

  actors::PaymentService& service_;
  std::string manifest_;
  std::string payment_methods_;
};

}  // namespace idempay::app
