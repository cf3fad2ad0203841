#include "idempay/acquirers/adyen.hpp"

#include <spdlog/spdlog.h>

#include "documents.hpp"
#include "idempay/acquirers/boleto.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/timestamps.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/http/client.hpp"
#include "idempay/protocol/methods.hpp"

namespace idempay::acquirer {

std::string adyen_idempotency_key(std::string_view purpose, std::string_view id) {
  return "idempay-" +
         crypto::to_hex(crypto::sha256("idempay adyen " + std::string(purpose) + "\n" + std::string(id))).substr(0, 48);
}

std::string adyen_reference(std::string_view merchant_account, std::string_view payment_id) {
  return "adyen/" + std::string(merchant_account) + "/" + std::string(payment_id);
}

namespace {

// ISO 4217 currencies whose minor unit is not the hundredth, as Adyen lists them.
constexpr std::string_view kNoDecimals[] = {"BIF", "CLP", "CVE", "DJF", "GNF", "IDR", "ISK", "JPY", "KMF", "KRW",
                                            "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"};
constexpr std::string_view kThreeDecimals[] = {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"};

Result<int> exponent(std::string_view currency) {
  bool shaped = currency.size() == 3 && std::all_of(currency.begin(), currency.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  if (!shaped) {
    return make_error(ErrorCode::kInvalidArgument, "not an ISO 4217 currency code");
  }
  for (auto c : kNoDecimals) {
    if (c == currency) {
      return 0;
    }
  }
  for (auto c : kThreeDecimals) {
    if (c == currency) {
      return 3;
    }
  }
  return 2;
}

}  // namespace

Result<int64_t> adyen_minor_units(Cents amount, std::string_view currency) {
  auto e = exponent(currency);
  if (!e) {
    return tl::unexpected(e.error());
  }
  if (*e == 3) {
    return amount * 10;
  }
  if (*e == 0) {
    if (amount % 100 != 0) {
      return make_error(ErrorCode::kInvalidArgument, std::string(currency) + " has no decimals");
    }
    return amount / 100;
  }
  return amount;
}

Result<Cents> adyen_cents(int64_t minor_units, std::string_view currency) {
  auto e = exponent(currency);
  if (!e) {
    return tl::unexpected(e.error());
  }
  if (*e == 3) {
    if (minor_units % 10 != 0) {
      return make_error(ErrorCode::kInvalidArgument, "an amount finer than a hundredth");
    }
    return minor_units / 10;
  }
  return *e == 0 ? minor_units * 100 : minor_units;
}

namespace {

constexpr const char* kAcquirerName = "Adyen";
constexpr int64_t kDay = 86'400;
// The first answer and a notification's final outcome: the core applies a newer one only.
constexpr int64_t kPendingRevision = 1;
constexpr int64_t kFinalRevision = 2;
// ServiceError 704: a request under this Idempotency-Key is in progress or had another body.
constexpr std::string_view kKeyInUse = "704";

Authorization outcome(AuthorizationStatus status, std::string tid, std::string code, std::string message) {
  Authorization a;
  a.status = status;
  a.tid = std::move(tid);
  a.nsu = a.tid;
  a.acquirer = kAcquirerName;
  a.code = std::move(code);
  a.message = std::move(message);
  a.revision = status == AuthorizationStatus::kPending ? kPendingRevision : kFinalRevision;
  return a;
}

using domain::now_unix_ms;

bool is_boleto(const std::string& method) {
  return ppp::method_family(method) == ppp::MethodFamily::kBankInvoice;
}

// When a voucher stops being payable: Adyen's expiresAt, with its offset or, as Adyen writes a
// boleto's ("2026-12-10T00:00:00"), without one, in Brasília time (UTC-3, no daylight saving).
std::optional<int64_t> voucher_expiry(const std::string& expires_at) {
  if (auto at = parse_rfc3339(expires_at)) {
    return *at;
  }
  if (auto local = parse_rfc3339(expires_at + "-03:00")) {
    return *local;
  }
  return std::nullopt;
}

// A boleto issued (PresentToShopper with a voucher): undefined, with the boleto's page, its
// typeable line and bar code, payable until its expiry, which the gateway's delay to cancel
// follows. Its payment comes by notification (AUTHORISATION), its expiry too (OFFER_CLOSED).
Authorization boleto_issued(const adyen::PaymentResult& r, int64_t now_ms) {
  Authorization a = outcome(AuthorizationStatus::kPending, r.psp_reference, "PresentToShopper",
                            "the shopper pays the boleto; Adyen reports it by notification");
  a.document.payment_url = r.voucher_url;
  if (auto boleto = boleto_from_line(r.voucher_reference)) {
    a.document.boleto_line = boleto->line;
    a.document.boleto_line_formatted = boleto->line_formatted;
    a.document.boleto_barcode = boleto->barcode;
  } else {
    spdlog::warn("adyen: the boleto of {} has no valid typeable line ({}); the shopper has its page only",
                 r.psp_reference, boleto.error().message);
  }
  if (auto expiry = voucher_expiry(r.voucher_expires_at); expiry && *expiry > now_ms) {
    a.document.expires_in_seconds = (*expiry - now_ms + 999) / 1000;
  }
  return a;
}

// What a PaymentResponse means for the payment (docs/acquirers.md lists what is not mapped).
Authorization authorization_of(const adyen::PaymentResult& r, int64_t now_ms) {
  const std::string& code = r.result_code;
  if (code == "Authorised") {
    Authorization a = outcome(AuthorizationStatus::kApproved, r.psp_reference, "Authorised", "authorised");
    a.authorization_id = r.auth_code;
    return a;
  }
  if (code == "Refused" || code == "Error" || code == "Cancelled") {
    std::string reason = r.refusal_reason.empty() ? code : r.refusal_reason;
    return outcome(AuthorizationStatus::kDenied, r.psp_reference, r.refusal_reason_code.empty() ? code : r.refusal_reason_code,
                   reason);
  }
  if (code == "Received" || code == "Pending") {
    return outcome(AuthorizationStatus::kPending, r.psp_reference, code, "Adyen reports the outcome by notification");
  }
  if (code == "PresentToShopper" && r.action_type == "voucher") {
    return boleto_issued(r, now_ms);
  }
  if (code == "RedirectShopper" && r.redirect_method == "GET" && !r.redirect_url.empty()) {
    Authorization a = outcome(AuthorizationStatus::kPending, r.psp_reference, code, "the shopper must authenticate");
    a.document.payment_url = r.redirect_url;
    a.document.expires_in_seconds = 900;
    return a;
  }
  // Native 3-D Secure 2 (IdentifyShopper, ChallengeShopper), a redirect by POST, a partial
  // authorisation (never asked for) and the like need the shopper's page: not this connector.
  return outcome(AuthorizationStatus::kDenied, r.psp_reference, "unsupported-result",
                 "Adyen answered " + code.substr(0, 40) + ", which idempay does not carry out");
}

class AdyenAcquirer final : public Acquirer {
public:
  explicit AdyenAcquirer(AdyenOptions options)
      : options_(std::move(options)),
        client_(std::make_unique<http::Client>(proxy_client_options(options_.secure_proxy))) {
    while (!options_.base_url.empty() && options_.base_url.back() == '/') {
      options_.base_url.pop_back();
    }
  }
  ~AdyenAcquirer() override { client_.reset(); }

  void authorize(AuthorizeCall call, Callback<Authorization> done) override;
  void operate(OperationCall call, Callback<OperationOutcome> done) override;
  // Checkout has no status call: an outcome not heard is awaited from the AUTHORISATION
  // notification, which Adyen sends for every payment it received (docs/acquirers.md).
  void status(std::string key, Callback<std::optional<Authorization>> done) override {
    (void)key;
    Authorization awaited = outcome(AuthorizationStatus::kPending, "", "awaiting-notification",
                                    "the outcome comes by Adyen's AUTHORISATION notification");
    awaited.revision = 0;
    done(std::optional<Authorization>(std::move(awaited)));
  }
  // A boleto's outcome not heard: the gateway's retry sends it again, under the same key and in
  // the same bytes, and Adyen answers with the boleto it issued the first time (if any).
  void status_of(std::string key, const std::string& payment_method,
                 Callback<std::optional<Authorization>> done) override {
    if (is_boleto(payment_method)) {
      return done(std::optional<Authorization>());
    }
    status(std::move(key), std::move(done));
  }
  std::string reference(const std::string& key) const override {
    return adyen_reference(options_.merchant_account, key);
  }

private:
  using Answer = std::function<void(Result<http::ClientResponse>)>;
  void post(const std::string& path, std::string idempotency_key, std::string body, Answer done);
  void post_through_proxy(const std::string& proxy_url, std::string idempotency_key, std::string body, Answer done);

  AdyenOptions options_;
  std::unique_ptr<http::Client> client_;
};

void AdyenAcquirer::post(const std::string& path, std::string idempotency_key, std::string body, Answer done) {
  http::OutboundRequest r;
  r.method = "POST";
  r.url = options_.base_url + path;
  r.headers = {{"x-api-key", options_.api_key},
               {"idempotency-key", std::move(idempotency_key)},
               {"content-type", "application/json"},
               {"accept", "application/json"}};
  r.body = std::move(body);
  r.connect_timeout = options_.timeout;
  r.total_timeout = options_.timeout;
  r.max_response_bytes = 256 * 1024;
  r.allow_private = true;  // the API's URL is the operator's configuration, not a request's
  client_->send(std::move(r), std::move(done));
}

// The gateway puts the card data in place of the tokens and relays Adyen's answer; the
// Idempotency-Key goes along, so a retry through the proxy is the same request.
void AdyenAcquirer::post_through_proxy(const std::string& proxy_url, std::string idempotency_key, std::string body,
                                       Answer done) {
  constexpr std::string_view kForward = "x-provider-forward-";
  http::OutboundRequest r;
  r.method = "POST";
  r.url = proxy_url;
  r.headers = {{"content-type", "application/json"},
               {"accept", "application/json"},
               {std::string(kForward) + "to", options_.base_url + "/payments"},
               {std::string(kForward) + "x-api-key", options_.api_key},
               {std::string(kForward) + "idempotency-key", std::move(idempotency_key)}};
  r.body = std::move(body);
  r.connect_timeout = options_.timeout;
  r.total_timeout = options_.timeout;
  r.max_response_bytes = 256 * 1024;
  r.allow_private = options_.secure_proxy.allow_private;
  client_->send(std::move(r), std::move(done));
}

// An answer whose outcome the adapter cannot know: the payment may or may not have been made.
tl::unexpected<Error> unknown(std::string_view what, const Result<http::ClientResponse>& r) {
  std::string why = r ? "HTTP " + std::to_string(r->status) + ": " + adyen::read_service_error(r->status, r->body).message
                      : r.error().message;
  return make_error(ErrorCode::kTimeout, "Adyen " + std::string(what) + ": " + why);
}

void AdyenAcquirer::authorize(AuthorizeCall call, Callback<Authorization> done) {
  auto minor = adyen_minor_units(call.amount, call.currency);
  if (!minor) {
    return done(outcome(AuthorizationStatus::kDenied, "", "amount", "Adyen cannot take this amount: " + minor.error().message));
  }
  if (!call.recipients.empty()) {
    // Adyen's splits are not mapped: a split the gateway asked for is refused, never dropped.
    return done(outcome(AuthorizationStatus::kDenied, "", "split-unsupported",
                        "this connector does not split payments through Adyen"));
  }
  bool boleto = is_boleto(call.payment_method);
  bool tokens = !boleto && through_secure_proxy(call);
  std::string body;
  if (boleto) {
    // Due when the method's delay to cancel ends (a day at least) after the payment was first
    // asked for: a retry sends the same bytes under the same key, which Adyen answers with the
    // boleto it issued first.
    int64_t asked = call.first_asked_at > 0 ? call.first_asked_at : now_unix_ms();
    int64_t due = asked + std::max<int64_t>(call.payable_for_seconds, kDay) * 1000;
    auto request = adyen::boleto_request(call, *minor, options_, due);
    if (!request) {
      return done(outcome(AuthorizationStatus::kDenied, "", "boleto-data", request.error().message));
    }
    body = std::move(*request);
  } else {
    body = adyen::payment_request(call, *minor, options_, tokens);
  }
  std::string key = adyen_idempotency_key("payment", call.key);
  auto answered = [done = std::move(done)](Result<http::ClientResponse> r) {
    if (r && r->status == 200) {
      auto result = adyen::read_payment_response(r->body);
      return result ? done(authorization_of(*result, now_unix_ms())) : done(tl::unexpected(result.error()));
    }
    if (r && (r->status == 401 || r->status == 403)) {
      // Refused before anything was done: the credentials are the operator's to fix.
      return done(make_error(ErrorCode::kUnavailable, "Adyen refused the credentials: HTTP " + std::to_string(r->status)));
    }
    if (r && (r->status == 400 || r->status == 422)) {
      auto error = adyen::read_service_error(r->status, r->body);
      if (error.error_code != kKeyInUse) {
        return done(outcome(AuthorizationStatus::kDenied, "", error.error_code.empty() ? "invalid" : error.error_code,
                            "Adyen refused the payment request: " + error.message));
      }
    }
    done(unknown("/payments", r));  // the notification, or the gateway's cancellation, settles it
  };
  if (tokens) {
    return post_through_proxy(call.secure_proxy_url, std::move(key), std::move(body), std::move(answered));
  }
  post("/payments", std::move(key), std::move(body), std::move(answered));
}

OperationOutcome refused(std::string code, std::string message) {
  OperationOutcome o;
  o.code = std::move(code);
  o.message = std::move(message);
  return o;
}

// A boleto is captured when it is paid, and Checkout has no way back to a bank slip's payer:
// settlements are records, refunds (and cancelling a paid boleto) the merchant's to do by hand.
// Cancelling one still unpaid withdraws it (POST /payments/{pspReference}/cancels).
std::optional<OperationOutcome> boleto_operation(const OperationCall& call) {
  OperationOutcome o;
  switch (call.kind) {
    case ppp::OperationKind::kSettle:
      o.succeeded = true;
      o.id = "settled-" + call.tid;
      o.amount = call.amount;
      return o;
    case ppp::OperationKind::kRefund:
      o.manual = true;
      o.message = "a boleto's money goes back to the shopper by bank transfer, not through Adyen";
      return o;
    case ppp::OperationKind::kCancel:
      if (!call.authorized) {
        return std::nullopt;
      }
      o.manual = true;
      o.message = "a paid boleto is not voided: return the money to the shopper by bank transfer";
      return o;
  }
  return std::nullopt;
}

void AdyenAcquirer::operate(OperationCall call, Callback<OperationOutcome> done) {
  if (is_boleto(call.payment_method)) {
    if (auto decided = boleto_operation(call)) {
      return done(std::move(*decided));
    }
  }
  std::string path;
  std::string body;
  std::string purpose;
  auto minor = adyen_minor_units(call.amount, call.currency.empty() ? "BRL" : call.currency);
  if (call.kind != ppp::OperationKind::kCancel && !minor) {
    return done(refused("amount", "Adyen cannot take this amount: " + minor.error().message));
  }
  if (!call.recipients.empty()) {
    return done(refused("split-unsupported", "this connector does not split payments through Adyen"));
  }
  switch (call.kind) {
    case ppp::OperationKind::kSettle:
      purpose = "capture";
      path = "/payments/" + call.tid + "/captures";
      body = adyen::modification_request(options_.merchant_account, call.payment_key, *minor, call.currency, true);
      break;
    case ppp::OperationKind::kRefund:
      purpose = "refund";
      path = "/payments/" + call.tid + "/refunds";
      body = adyen::modification_request(options_.merchant_account, call.payment_key, *minor, call.currency, true);
      break;
    case ppp::OperationKind::kCancel:
      purpose = "cancel";
      // A payment whose answer never came has no pspReference: it is cancelled by the
      // connector's reference, whether or not Adyen received it.
      path = call.tid.empty() ? "/cancels" : "/payments/" + call.tid + "/cancels";
      body = call.tid.empty() ? adyen::reference_cancel_request(options_.merchant_account, call.payment_key)
                              : adyen::modification_request(options_.merchant_account, call.payment_key, 0, {}, false);
      break;
  }
  if (call.kind != ppp::OperationKind::kCancel && call.tid.empty()) {
    return done(refused("no-psp-reference", "the payment has no Adyen pspReference"));
  }
  Cents amount = call.amount;
  post(path, adyen_idempotency_key(purpose, call.key), std::move(body),
       [amount, what = path.substr(path.rfind('/')), done = std::move(done)](Result<http::ClientResponse> r) {
         if (r && r->status == 201) {
           auto id = adyen::read_modification_response(r->body);
           if (!id) {
             return done(tl::unexpected(id.error()));
           }
           // Received: carried out by Adyen, its result reported by notification; a later
           // failure is recorded where operators see it (docs/acquirers.md).
           OperationOutcome o;
           o.succeeded = true;
           o.id = *id;
           o.amount = amount;
           return done(o);
         }
         if (r && (r->status == 401 || r->status == 403)) {
           return done(make_error(ErrorCode::kUnavailable, "Adyen refused the credentials: HTTP " + std::to_string(r->status)));
         }
         if (r && (r->status == 400 || r->status == 422)) {
           auto error = adyen::read_service_error(r->status, r->body);
           if (error.error_code != kKeyInUse) {
             return done(refused(error.error_code.empty() ? "refused" : error.error_code, "Adyen: " + error.message));
           }
         }
         done(unknown(what, r));  // retried under the same Idempotency-Key
       });
}

}  // namespace

std::unique_ptr<domain::Acquirer> make_adyen_acquirer(AdyenOptions options) {
  return std::make_unique<AdyenAcquirer>(std::move(options));
}

}  // namespace idempay::acquirer
