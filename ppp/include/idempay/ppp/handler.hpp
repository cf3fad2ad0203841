#pragma once

#include <string>
#include <vector>

#include "idempay/actors/payment_service.hpp"
#include "idempay/http/routes.hpp"
#include "idempay/http/server.hpp"
#include "idempay/http/url.hpp"
#include "idempay/config/manifest.hpp"
#include "idempay/config/merchants.hpp"
#include "idempay/ppp/onboarding.hpp"

namespace idempay::ppp {

/// The PPP routes: GET /manifest, GET /payment-methods, POST /payments,
/// POST /payments/{paymentId}/{cancellations|settlements|refunds}, the inbound routes
/// POST /payments/{paymentId}/inbound[-request]/{action}, and the acquirer's signed webhooks on
/// POST /webhooks/acquirer, each acquirer kind's notifications on POST /webhooks/{kind}/...
/// (acquirers/extension.hpp), and the configuration flow (POST /authorization/token, GET
/// /authorization/redirect, GET /authorization/credentials). Parses and validates with
/// protocol/, hands the payment to the PaymentService, answers through the responder.
struct PppHandlerOptions {
  /// Raw secrets accepted on POST /webhooks/acquirer (several during rotation).
  std::vector<std::string> webhook_keys;
  /// The in-process acquirer stub's trigger, if that stub serves any payment: resolves a
  /// pending payment ("approve", "deny" or "expire"); false if it is not pending there. Enables
  /// POST /stub/trigger.
  std::function<bool(const std::string& payment_id, const std::string& outcome)> stub_trigger;
  /// What a Create Payment's callbackUrl and secureProxyUrl must satisfy to be accepted.
  http::DestinationRules callback_urls;
  http::DestinationRules secure_proxy_urls;
  /// Each merchant's policies (homologation suite, Secure Proxy, manual operations); null:
  /// the defaults for everyone.
  std::function<config::MerchantPolicy(const std::string& merchant)> policy_of;
  /// The methods offered and the documents that say so; default: every method, no split.
  config::Manifest manifest = config::default_manifest();
  /// The configuration flow (/authorization/*); null: its routes do not exist.
  Onboarding* onboarding = nullptr;
  /// The acquirer kinds that take notifications (acquirers/extension.hpp) and their routes:
  /// POST /webhooks/{kind}/{merchant}/{acquirer}, and that path followed by each suffix.
  struct WebhookRoute {
    std::string kind;
    std::vector<std::string> suffixes;
  };
  std::vector<WebhookRoute> acquirer_webhooks;
  /// Hands a notification to the kind of the merchant's acquirer of that name (the request
  /// and the responder are the call's only); false when the merchant has no such acquirer of
  /// that kind, answered 404 as any unknown path is.
  std::function<bool(const std::string& kind, const std::string& merchant, const std::string& acquirer,
                     const http::Request& request, const http::Responder& respond)>
      notify_acquirer;
};

/// The header the gateway's homologation suite marks its requests with.
inline constexpr std::string_view kTestSuiteHeader = "x-vtex-api-is-testsuite";

class PppHandler final : public http::Handler {
public:
  PppHandler(actors::PaymentService& service, PppHandlerOptions options);
  void handle(http::Request request, http::Responder respond) override;
  /// True for a path one of its routes has (for the server's 404 before authentication).
  bool knows(std::string_view path) const;

private:
  void create_payment(http::Request& request, const http::Responder& respond);
  void operate(ppp::OperationKind kind, std::string_view payment_id, http::Request& request,
               const http::Responder& respond);
  void acquirer_webhook(http::Request& request, const http::Responder& respond);
  void kind_webhook(size_t kind, const std::string& merchant, const std::string& acquirer,
                    const http::Request& request, const http::Responder& respond);
  void inbound(std::string_view payment_id, http::Request& request, const http::Responder& respond);
  void submit_terminal(std::string_view payment_id, http::Request& request, const http::Responder& respond);
  void stub_trigger(http::Request& request, const http::Responder& respond);
  void flow_token(http::Request& request, const http::Responder& respond);
  void flow_redirect(http::Request& request, const http::Responder& respond);
  void flow_credentials(http::Request& request, const http::Responder& respond);
  config::MerchantPolicy policy_of(const std::string& merchant) const;

  actors::PaymentService& service_;
  PppHandlerOptions options_;
  http::RouteTable routes_;
};

}  // namespace idempay::ppp
