#include "idempay/ppp/handler.hpp"

#include <chrono>

#include <boost/beast/core/string.hpp>

#include "idempay/answers/answers.hpp"
#include "idempay/http/problem.hpp"
#include "idempay/metrics/metrics.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/protocol/methods.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/acquirers/wire.hpp"
#include "idempay/base/webhooks.hpp"

namespace idempay::ppp {

namespace {

http::Response ppp_error(unsigned status, std::string_view code, std::string_view message) {
  return http::Response(status, answers::write_error(code, message));
}

using http::problem;  // RFC 7807, for requests outside the protocol's routes

http::Response method_not_allowed(std::string_view allow) {
  auto r = problem(405, "Method Not Allowed", "this route accepts " + std::string(allow));
  r.headers.push_back({"allow", std::string(allow)});
  return r;
}

// The value of `name` in a query string, as sent (the connector's own tokens need no decoding).
std::string_view query_parameter(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name && pair[name.size()] == '=') {
      return pair.substr(name.size() + 1);
    }
  }
  return {};
}

// The answer, with what the access log adds: the command's outcome (and an operation's
// requestId).
http::Response to_response(actors::Reply reply, const std::string& request_id = {}) {
  domain::Outcome outcome = reply.outcome;
  std::string_view served = reply.served.empty() ? "first" : reply.served;
  http::Response r(answers::http_status(outcome), answers::body_of(std::move(reply)));
  r.log.emplace_back("outcome", domain::to_string(outcome));
  r.log.emplace_back("answer", served);
  if (!request_id.empty()) {
    r.log.emplace_back("operationRequestId", request_id);
  }
  return r;
}

actors::ReplyFn to_responder(const http::Responder& respond, std::string request_id = {}) {
  return [respond, request_id = std::move(request_id)](actors::Reply reply) {
    respond(to_response(std::move(reply), request_id));
  };
}

bool is_from_test_suite(const http::Request& request) {
  return boost::beast::iequals(request.header(kTestSuiteHeader), "true");
}

// Every PPP route, and the service's own (health, webhooks, the stub's trigger, POS links).
// The routes' names (RouteTable ids), apart from the method catalogue's in this namespace.
namespace route {
enum : int {
  kManifest, kPaymentMethods, kHealth, kHealthLive, kHealthReady, kCreatePayment, kCancel, kSettle, kRefund,
  kInbound, kInboundRequest, kPosTerminal, kStubTrigger, kAcquirerWebhook, kFlowToken, kFlowRedirect,
  kFlowCredentials,
  kKindWebhook,  // the first kind's; kKindWebhook + i is the i-th kind's (PppHandlerOptions::acquirer_webhooks)
};
}  // namespace route

std::vector<http::Route> ppp_routes(bool stub, bool onboarding,
                                    const std::vector<PppHandlerOptions::WebhookRoute>& webhooks) {
  std::vector<http::Route> routes = {
      {"GET", "/manifest", route::kManifest},
      {"GET", "/payment-methods", route::kPaymentMethods},
      {"GET", "/health", route::kHealth},
      {"GET", "/health/live", route::kHealthLive},
      {"GET", "/health/ready", route::kHealthReady},
      {"POST", "/payments", route::kCreatePayment},
      {"POST", "/payments/{}/cancellations", route::kCancel},
      {"POST", "/payments/{}/settlements", route::kSettle},
      {"POST", "/payments/{}/refunds", route::kRefund},
      {"POST", "/payments/{}/inbound/{}", route::kInbound},
      {"POST", "/payments/{}/inbound-request/{}", route::kInboundRequest},
      {"POST", "/pos/{}/terminal", route::kPosTerminal},
      {"POST", "/webhooks/acquirer", route::kAcquirerWebhook},
  };
  if (stub) {
    routes.push_back({"POST", "/stub/trigger", route::kStubTrigger});
  }
  for (size_t i = 0; i < webhooks.size(); ++i) {
    int id = route::kKindWebhook + static_cast<int>(i);
    std::string path = "/webhooks/" + webhooks[i].kind + "/{}/{}";
    routes.push_back({"POST", path, id});
    for (const auto& suffix : webhooks[i].suffixes) {
      routes.push_back({"POST", path + "/" + suffix, id});
    }
  }
  if (onboarding) {
    routes.push_back({"POST", "/authorization/token", route::kFlowToken});
    routes.push_back({"GET", "/authorization/redirect", route::kFlowRedirect});
    routes.push_back({"GET", "/authorization/credentials", route::kFlowCredentials});
  }
  return routes;
}

}  // namespace

PppHandler::PppHandler(actors::PaymentService& service, PppHandlerOptions options)
    : service_(service),
      options_(std::move(options)),
      routes_(ppp_routes(options_.stub_trigger != nullptr, options_.onboarding != nullptr,
                         options_.notify_acquirer ? options_.acquirer_webhooks
                                                  : std::vector<PppHandlerOptions::WebhookRoute>{})) {}

bool PppHandler::knows(std::string_view path) const { return routes_.knows(path); }

void PppHandler::handle(http::Request request, http::Responder respond) {
  auto found = routes_.find(request.method, request.path);
  if (!found.match) {
    return respond(found.allow.empty() ? problem(404, "Not Found", "no such route") : method_not_allowed(found.allow));
  }
  const int route = found.match->id;
  const std::vector<std::string>& params = found.match->params;
  // The configuration flow's credentials open its own steps and nothing else.
  bool flow_step = route == route::kFlowToken || route == route::kFlowCredentials;
  bool flow_caller = !request.principal.empty() && policy_of(request.principal).onboarding;
  if (flow_step != flow_caller && (flow_step || route != route::kFlowRedirect)) {
    return respond(ppp_error(403, "forbidden", flow_step ? "the configuration flow needs the credentials configured for it"
                                                         : "these credentials are for the configuration flow only"));
  }
  switch (route) {
    case route::kManifest:
      return respond(http::Response(200, options_.manifest.manifest_json));
    case route::kPaymentMethods:
      return respond(http::Response(200, options_.manifest.payment_methods_json));
    case route::kHealthLive:  // the process runs and its I/O threads answer
      return respond(http::Response(200, R"({"status":"live"})"));
    case route::kHealth:
    case route::kHealthReady: {
      auto reply = [respond](actors::Reply r) {
        unsigned status = answers::http_status(r.outcome);
        respond(http::Response(status, answers::body_of(std::move(r))));
      };
      return route == route::kHealth ? service_.health(std::move(reply)) : service_.readiness(std::move(reply));
    }
    case route::kCreatePayment:
      return create_payment(request, respond);
    case route::kCancel:
    case route::kSettle:
    case route::kRefund: {
      auto kind = route == route::kCancel ? ppp::OperationKind::kCancel
                  : route == route::kSettle ? ppp::OperationKind::kSettle
                                     : ppp::OperationKind::kRefund;
      if (!ppp::is_valid_identifier(params[0])) {
        return respond(ppp_error(400, "invalid-request", "paymentId in the URL is not valid"));
      }
      return operate(kind, params[0], request, respond);
    }
    case route::kInbound:
    case route::kInboundRequest:
      if (!ppp::is_valid_identifier(params[0])) {
        return respond(ppp_error(400, "invalid-request", "paymentId in the URL is not valid"));
      }
      return inbound(params[0], request, respond);
    case route::kPosTerminal:
      return submit_terminal(params[0], request, respond);
    case route::kStubTrigger:
      return stub_trigger(request, respond);
    case route::kAcquirerWebhook:
      return acquirer_webhook(request, respond);
    case route::kFlowToken:
      return flow_token(request, respond);
    case route::kFlowRedirect:
      return flow_redirect(request, respond);
    case route::kFlowCredentials:
      return flow_credentials(request, respond);
  }
  if (route >= route::kKindWebhook) {
    return kind_webhook(static_cast<size_t>(route - route::kKindWebhook), params[0], params[1], request, respond);
  }
  respond(problem(404, "Not Found", "no such route"));
}

config::MerchantPolicy PppHandler::policy_of(const std::string& merchant) const {
  return options_.policy_of ? options_.policy_of(merchant) : config::MerchantPolicy{};
}

void PppHandler::create_payment(http::Request& request, const http::Responder& respond) {
  // A gateway's retry of a payment resolved since is answered here, without parsing it again:
  // these very bytes passed every check below when its payment's actor first answered them.
  bool test_suite = is_from_test_suite(request);
  std::string repeat_key = service_.repeat_key(request.principal, test_suite, request.body);
  if (auto answer = service_.repeated_answer(repeat_key)) {
    return respond(to_response(std::move(*answer)));
  }
  auto parsed = ppp::parse_create_payment(request.body);
  if (!parsed) {
    return respond(ppp_error(400, to_string(parsed.error().code), parsed.error().message));
  }
  config::MerchantPolicy merchant = policy_of(request.principal);
  parsed->test_suite = test_suite;
  if (parsed->test_suite && merchant.test_suite == config::TestSuitePolicy::kRefuse) {
    return respond(ppp_error(400, "test-suite-refused",
                             "this merchant does not accept requests from the homologation suite"));
  }
  if (merchant.require_secure_proxy && !parsed->card.number.empty()) {
    return respond(ppp_error(400, "secure-proxy-required",
                             "card data must come tokenized through the Secure Proxy"));
  }
  // URLs idempay will call later are checked now, so that nothing unsafe is ever stored.
  if (auto url = http::check_destination(parsed->callback_url, options_.callback_urls); !url) {
    return respond(ppp_error(400, "invalid-request", "callbackUrl: " + url.error().message));
  }
  if (!parsed->secure_proxy_url.empty()) {
    if (auto url = http::check_destination(parsed->secure_proxy_url, options_.secure_proxy_urls); !url) {
      return respond(ppp_error(400, "invalid-request", "secureProxyUrl: " + url.error().message));
    }
  }
  auto offered = options_.manifest.methods.find(parsed->payment_method);
  if (offered == options_.manifest.methods.end()) {
    return respond(ppp_error(400, "unsupported-payment-method",
                             "paymentMethod is not one this connector declares in its manifest"));
  }
  // A marketplace order carries its recipients whatever the provider's split mode: they split
  // the payment only for a method split on authorization, and are information otherwise.
  if (!ppp::splits_at(offered->second.allows_split, ppp::SplitStep::kAuthorize)) {
    parsed->recipients.clear();
  } else if (auto split = ppp::check_split(parsed->recipients, parsed->value); !split) {
    return respond(ppp_error(400, to_string(split.error().code), split.error().message));
  }
  service_.create_payment(std::move(*parsed), std::move(request.principal), to_responder(respond),
                          std::move(repeat_key));
}

void PppHandler::operate(ppp::OperationKind kind, std::string_view payment_id, http::Request& request,
                         const http::Responder& respond) {
  auto parsed = ppp::parse_operation(kind, payment_id, request.body);
  if (!parsed) {
    // The routes document 200, 500 and 501 only: a body that cannot be read is a 500 in the
    // operation's shape, with nothing done (the requestId is not trusted from such a body).
    domain::Refused refused(domain::Refusal::kInvalidRequest, parsed.error().message,
                            domain::OperationRef{kind, std::string(payment_id), ""});
    return respond(http::Response(500, answers::write_refusal(refused)));
  }
  config::MerchantPolicy merchant = policy_of(request.principal);
  if (is_from_test_suite(request) && merchant.test_suite == config::TestSuitePolicy::kRefuse) {
    domain::OperationAnswer refused{kind, parsed->payment_id, parsed->request_id, "", 0, "test-suite-refused",
                                    "this merchant does not accept requests from the homologation suite"};
    return respond(http::Response(500, answers::write_operation(refused)));
  }
  parsed->manual = (kind == ppp::OperationKind::kCancel && merchant.manual_cancel) ||
                   (kind == ppp::OperationKind::kRefund && merchant.manual_refund);
  std::string request_id = parsed->request_id;
  service_.operate(std::move(*parsed), std::move(request.principal), to_responder(respond, std::move(request_id)));
}

// Acquirer webhooks: the signature is checked over the raw bytes before anything is parsed.
void PppHandler::acquirer_webhook(http::Request& request, const http::Responder& respond) {
  constexpr size_t kMaxWebhookBytes = 64 * 1024;
  if (request.body.size() > kMaxWebhookBytes) {
    metrics::count_webhook("too-large");
    return respond(problem(413, "Payload Too Large", "webhook bodies are limited to 64 KiB"));
  }
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  std::string_view id = request.header("webhook-id");
  auto verified = webhooks::verify(options_.webhook_keys, id, request.header("webhook-timestamp"),
                                   request.header("webhook-signature"), request.body, now);
  if (!verified || !ppp::is_valid_identifier(id)) {
    metrics::count_webhook("bad-signature");
    return respond(problem(401, "Unauthorized", "webhook signature missing or invalid"));
  }
  auto decoded = acquirer::decode_event(request.body);
  if (!decoded || !ppp::is_valid_identifier(decoded->key)) {
    metrics::count_webhook("malformed");
    return respond(problem(400, "Bad Request", "webhook data needs paymentId and status"));
  }
  metrics::count_webhook("verified");
  actors::AcquirerEvent event;
  event.event_id = std::string(id);
  event.body_hash = crypto::to_hex(crypto::sha256(request.body));
  event.payment_id = std::move(decoded->key);
  event.authorization = std::move(decoded->authorization);
  service_.ingest_event(std::move(event), to_responder(respond));
}

// An acquirer kind's notifications (acquirers/*): the merchant's entry of that name and kind
// takes them; a merchant or acquirer that does not exist is answered as any unknown path.
void PppHandler::kind_webhook(size_t kind, const std::string& merchant, const std::string& acquirer,
                              const http::Request& request, const http::Responder& respond) {
  if (!options_.notify_acquirer(options_.acquirer_webhooks[kind].kind, merchant, acquirer, request, respond)) {
    respond(problem(404, "Not Found", "no such route"));
  }
}

// POS: the terminal app posts the serial number it scanned. Public (the app has no merchant
// credentials), so the submitUrl handed out carries the payment's own token; it only records
// which terminal takes the card — the charge starts on the next Create Payment.
void PppHandler::submit_terminal(std::string_view payment_id, http::Request& request, const http::Responder& respond) {
  auto doc = JsonValue::parse(request.body);
  std::string serial = doc ? doc->string_or("serialNumber") : "";
  if (!ppp::is_valid_identifier(payment_id) || !ppp::is_valid_identifier(serial)) {
    return respond(ppp_error(400, "invalid-request", "serialNumber is required: 1-128 of [A-Za-z0-9._:-]"));
  }
  service_.submit_terminal(std::string(payment_id), query_parameter(request.query, "token"), std::move(serial),
                           to_responder(respond));
}

// Only with the in-process stub (development and tests): resolve a pending payment now; the
// stub then reports it through its signed webhook like any later outcome. Only the payment's
// owner may, as for any other action on it, and the trail records who did.
void PppHandler::stub_trigger(http::Request& request, const http::Responder& respond) {
  auto doc = JsonValue::parse(request.body);
  std::string id = doc ? doc->string_or("paymentId") : "";
  std::string outcome = doc ? doc->string_or("outcome") : "";
  if (!ppp::is_valid_identifier(id) || (outcome != "approve" && outcome != "deny" && outcome != "expire")) {
    return respond(problem(400, "Bad Request", "need paymentId and outcome approve|deny|expire"));
  }
  service_.act_as_owner(std::move(id), std::move(request.principal), "stub trigger: " + outcome,
                        [trigger = options_.stub_trigger, outcome](const std::string& payment_id) {
                          return trigger(payment_id, outcome);
                        },
                        [respond](actors::Reply reply) {
                          if (reply.outcome == actors::Outcome::kNotFound) {
                            return respond(problem(404, "Not Found", "no such payment"));
                          }
                          respond(reply.outcome == actors::Outcome::kDone
                                      ? http::Response(200, R"({"triggered":true})")
                                      : problem(409, "Conflict", "the payment is no longer pending at the stub"));
                        });
}

// The PPP inbound route: its content is only a hint; the acquirer's status call decides.
void PppHandler::inbound(std::string_view payment_id, http::Request& request, const http::Responder& respond) {
  auto doc = JsonValue::parse(request.body);
  std::string request_id = doc ? doc->string_or("requestId") : "";
  std::string id(payment_id);
  service_.refresh(id, std::move(request.principal), [respond, id, request_id](actors::Reply reply) {
    JsonWriter w;
    w.begin_object().key("requestId").string(request_id).key("paymentId").string(id);
    unsigned status = answers::http_status(reply.outcome);
    w.key("responseData").begin_object().key("statusCode").number(status);
    w.key("contentType").string("application/json").key("content").string(answers::body_of(std::move(reply)));
    w.end_object();
    w.end_object();
    respond(http::Response(status >= 500 ? 500 : 200, std::move(w).take()));
  });
}

// The configuration flow: the token and credentials steps are the gateway's, with the
// credentials configured for the flow; the redirect step is the merchant's browser, public,
// and its token is the capability (docs/ppp-surface.md).
void PppHandler::flow_token(http::Request& request, const http::Responder& respond) {
  auto doc = JsonValue::parse(request.body);
  if (!doc || doc->string_or("applicationId") != "vtex") {
    return respond(ppp_error(400, "invalid-request", "applicationId must be \"vtex\" and returnUrl a URL"));
  }
  auto token = options_.onboarding->issue_token(request.principal, doc->string_or("returnUrl"));
  if (!token) {
    return respond(ppp_error(token.error().code == ErrorCode::kUnavailable ? 503 : 400, "invalid-request",
                             token.error().message));
  }
  JsonWriter w;
  w.begin_object().key("applicationId").string("vtex").key("token").string(*token).end_object();
  respond(http::Response(200, std::move(w).take()));
}

void PppHandler::flow_redirect(http::Request& request, const http::Responder& respond) {
  auto page = options_.onboarding->consent_page(query_parameter(request.query, "token"));
  if (!page) {
    return respond(problem(404, "Not Found", "this link is unknown or has expired; start again from the store"));
  }
  auto r = http::Response(200, std::move(*page), "text/html; charset=utf-8");
  r.headers.push_back({"cache-control", "no-store"});
  // Never inside another site's frame: a click on "Accept" must be the merchant's own.
  r.headers.push_back({"content-security-policy", "default-src 'none'; frame-ancestors 'none'"});
  r.headers.push_back({"x-frame-options", "DENY"});
  r.headers.push_back({"x-content-type-options", "nosniff"});
  respond(std::move(r));
}

void PppHandler::flow_credentials(http::Request& request, const http::Responder& respond) {
  options_.onboarding->exchange(std::string(query_parameter(request.query, "authorizationCode")),
                                [respond](Result<IssuedCredentials> issued) {
                                  if (!issued) {
                                    bool retry = issued.error().code == ErrorCode::kUnavailable;
                                    return respond(ppp_error(retry ? 503 : 404, retry ? "unavailable" : "not-found",
                                                             issued.error().message));
                                  }
                                  JsonWriter w;
                                  w.begin_object().key("applicationId").string("vtex");
                                  w.key("appKey").string(issued->app_key).key("appToken").string(issued->app_token);
                                  w.end_object();
                                  auto r = http::Response(200, std::move(w).take());
                                  r.headers.push_back({"cache-control", "no-store"});
                                  respond(std::move(r));
                                });
}

}  // namespace idempay::ppp
