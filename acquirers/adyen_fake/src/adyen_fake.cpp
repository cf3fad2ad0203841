#include "idempay/acquirers/adyen_fake.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "idempay/acquirers/adyen.hpp"
#include "idempay/acquirers/boleto.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/delayer.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/timestamps.hpp"
#include "idempay/base/webhooks.hpp"
#include "idempay/http/client.hpp"
#include "idempay/http/routes.hpp"
#include "idempay/protocol/card.hpp"
#include "idempay/tracing/recent.hpp"

namespace idempay::acquirer {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace route {
enum : int {
  kPayments,
  kCapture,
  kRefund,
  kCancel,
  kCancelByReference,
  kFailNext,
  kNotifyTo,
  kLedger,
  kPayBoleto,
  kExpireBoleto
};
}

std::vector<http::Route> routes() {
  return {
      {"POST", "/payments", route::kPayments},
      {"POST", "/payments/{}/captures", route::kCapture},
      {"POST", "/payments/{}/refunds", route::kRefund},
      {"POST", "/payments/{}/cancels", route::kCancel},
      {"POST", "/cancels", route::kCancelByReference},
      {"POST", "/fake/fail-next/{}", route::kFailNext},
      {"POST", "/fake/notification-url", route::kNotifyTo},
      {"GET", "/fake/ledger", route::kLedger},
      {"POST", "/fake/pay/{}", route::kPayBoleto},
      {"POST", "/fake/expire/{}", route::kExpireBoleto},
  };
}

// A ServiceError, as the document's error answers are.
http::Response service_error(unsigned status, std::string_view code, std::string_view message, std::string_view type) {
  JsonWriter w;
  w.begin_object().key("errorCode").string(code).key("errorType").string(type).key("message").string(message);
  w.key("status").number(status).end_object();
  return http::Response(status, std::move(w).take());
}

struct FakePayment {
  std::string psp_reference;
  std::string reference;
  std::string merchant_account;
  std::string currency;
  int64_t amount = 0;          ///< minor units
  std::string method = "visa";  ///< the notification's paymentMethod: a card's brand, or boletobancario
  std::string status;  ///< Authorised, Refused, Received, RedirectShopper, PresentToShopper (a boleto),
                       ///< Expired, Cancelled
  std::string final_status;    ///< what a Received or RedirectShopper payment becomes
  int64_t captured = 0;
  int64_t refunded = 0;
  int authorisations = 0;      ///< how many times it was authorised: the ledger's promise is one
  std::string auth_code;       ///< a card's authorisation code, once authorised
  std::string card_reason;     ///< what an authorised AUTHORISATION's reason says: authCode:last4:expiry
  bool fail_next = false;      ///< its next capture or refund fails
};

struct Modification {
  std::string kind;  ///< capture, refund, cancel, technical-cancel
  std::string psp_reference;
  std::string payment_psp_reference;
  int64_t amount = 0;
  bool succeeded = false;
  std::string idempotency_key;
};

// What a used Idempotency-Key answered, and the body it was used with.
struct StoredAnswer {
  std::string body_hash;
  http::Response response{200, ""};
};

}  // namespace

struct AdyenFake::State {
  explicit State(AdyenFakeOptions o) : options(std::move(o)), client(std::make_unique<http::Client>()), table(routes()) {}
  // Later work stops first (it sends through the client), then the client's thread.
  ~State() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    delayer.reset();
    client.reset();
  }

  AdyenFakeOptions options;
  std::unique_ptr<http::Client> client;
  std::unique_ptr<Delayer> delayer = std::make_unique<Delayer>();
  http::RouteTable table;

  mutable std::mutex mutex;  // guards what follows
  bool stopping = false;
  std::map<std::string, FakePayment> payments;          // by pspReference
  std::map<std::string, std::string> by_reference;      // merchant account + reference -> pspReference
  std::map<std::string, StoredAnswer> answers;          // by Idempotency-Key
  std::vector<Modification> modifications;
  std::map<std::string, uint64_t> requests;
  tracing::RecentTraceparents traceparents;  // what a test checks propagation by
  std::deque<std::string> notifications_sent;           // the bodies, for a look at their shape
  uint64_t notification_attempts = 0, notifications_accepted = 0, notifications_abandoned = 0;
  uint64_t sequence = 0;

  // 16 characters, as Adyen's pspReferences are; every run of the fake hands out others.
  std::string next_psp_reference() {
    std::string digits = std::to_string(now_ms() % 10'000'000'000LL) + std::to_string(100'000 + ++sequence % 900'000);
    return ("F" + digits + "000000000000000").substr(0, 16);
  }

  http::Response answer(const http::Request& request);
  http::Response pay(const JsonValue& body, std::vector<std::pair<std::string, std::string>>& later_notices);
  http::Response issue_boleto(const JsonValue& body, const std::string& account, const JsonValue& amount);
  http::Response settle_boleto(const std::string& psp_reference, bool paid);
  http::Response modify(int kind, const std::string& psp_reference, const JsonValue& body, const std::string& key);
  http::Response cancel_by_reference(const JsonValue& body, const std::string& key);
  std::string ledger() const;

  // -- notifications ------------------------------------------------------------------------

  std::string notification(const FakePayment& p, std::string_view event, bool success, std::string_view psp_reference,
                           std::string_view original, int64_t amount, std::string_view reason) const {
    AdyenNotification n;
    n.event_code = std::string(event);
    n.psp_reference = std::string(psp_reference);
    n.original_reference = std::string(original);
    n.merchant_account = p.merchant_account;
    n.merchant_reference = p.reference;
    n.value = std::to_string(amount);
    n.currency = p.currency;
    n.success = success ? "true" : "false";
    JsonWriter w;
    w.begin_object().key("live").string("false").key("notificationItems").begin_array();
    w.begin_object().key("NotificationRequestItem").begin_object();
    w.key("additionalData").begin_object().key("hmacSignature").string(adyen_signature(n, options.hmac_key)).end_object();
    w.key("amount").begin_object().key("currency").string(n.currency).key("value").number(amount).end_object();
    w.key("eventCode").string(n.event_code).key("eventDate").string(format_rfc3339(now_ms()));
    w.key("merchantAccountCode").string(n.merchant_account).key("merchantReference").string(n.merchant_reference);
    if (!n.original_reference.empty()) {
      w.key("originalReference").string(n.original_reference);
    }
    w.key("paymentMethod").string(p.method).key("pspReference").string(n.psp_reference);
    if (!reason.empty()) {
      w.key("reason").string(reason);
    }
    w.key("success").string(n.success);
    w.end_object().end_object().end_array().end_object();
    return std::move(w).take();
  }

  // Sent until it is answered 200 "[accepted]", the delay doubling between attempts.
  void notify(std::string body, int attempt = 1) {
    std::string url;
    {
      std::lock_guard lock(mutex);
      url = options.notification_url;
      if (stopping || url.empty()) {
        return;
      }
      ++notification_attempts;
      if (attempt == 1) {
        notifications_sent.push_back(body);
        if (notifications_sent.size() > 1000) {
          notifications_sent.pop_front();
        }
      }
    }
    http::OutboundRequest r;
    r.method = "POST";
    r.url = url;
    r.headers = {{"content-type", "application/json"}};
    if (!options.notification_username.empty()) {
      r.headers.push_back({"authorization", "Basic " + webhooks::base64_encode(options.notification_username + ":" +
                                                                               options.notification_password)});
    }
    r.body = body;
    r.allow_private = true;  // a fake for loopback tests and local trials
    r.total_timeout = std::chrono::milliseconds(5'000);
    client->send(std::move(r), [this, body, attempt](Result<http::ClientResponse> answer) {
      bool accepted = answer && answer->status == 200 && answer->body == "[accepted]";
      if (accepted || attempt >= options.notification_attempts) {
        std::lock_guard lock(mutex);
        ++(accepted ? notifications_accepted : notifications_abandoned);
        return;
      }
      spdlog::info("adyen-fake: notification attempt {} not accepted ({}); trying again", attempt,
                   answer ? "HTTP " + std::to_string(answer->status) : answer.error().message);
      delayer->after(options.notification_retry_base * (1 << std::min(attempt - 1, 6)),
                     [this, body, attempt] { notify(body, attempt + 1); });
    });
  }

  void notify_later(std::chrono::milliseconds delay, std::string body) {
    delayer->after(delay, [this, body = std::move(body)]() mutable { notify(std::move(body)); });
  }
};

namespace {

// The in-process stub's card rules, in Adyen's words.
struct CardRule {
  std::string status;        ///< the first answer's resultCode
  std::string final_status;  ///< Authorised or Refused, at once or later
  std::string refusal_code;
  std::string refusal_reason;
};

CardRule rule_for(const std::string& number) {
  if (number == "4000000000003220" || number == "4000000000003238") {
    return {"RedirectShopper", number.back() == '0' ? "Authorised" : "Refused", "", ""};
  }
  if (number == "4222222222222224" || number == "4222222222222225") {
    return {"Received", number.back() == '4' ? "Authorised" : "Refused", "", ""};
  }
  if (number == "4444333322221112") {
    return {"Refused", "Refused", "2", "Refused"};
  }
  if (number != "4444333322221111" && !is_valid_pan(number)) {
    return {"Refused", "Refused", "8", "Invalid Card Number"};
  }
  return {"Authorised", "Authorised", "", ""};
}

bool ends_as_authorised(const FakePayment& p) { return p.status == "Authorised"; }

}  // namespace

http::Response AdyenFake::State::pay(const JsonValue& body, std::vector<std::pair<std::string, std::string>>& notices) {
  const JsonValue* amount = body.find("amount");
  const JsonValue* method = body.find("paymentMethod");
  std::string reference = body.string_or("reference");
  std::string account = body.string_or("merchantAccount");
  if (amount == nullptr || method == nullptr || reference.empty() || account.empty() || body.string_or("returnUrl").empty()) {
    return service_error(422, "000", "amount, merchantAccount, paymentMethod, reference and returnUrl are required", "validation");
  }
  if (!options.merchant_accounts.empty() &&
      std::find(options.merchant_accounts.begin(), options.merchant_accounts.end(), account) == options.merchant_accounts.end()) {
    return service_error(403, "901", "Invalid Merchant Account", "security");
  }
  if (method->string_or("type") == "boletobancario") {
    return issue_boleto(body, account, *amount);
  }
  if (method->string_or("type") != "scheme" || method->string_or("expiryYear").size() != 4 ||
      method->string_or("expiryMonth").size() != 2) {
    return service_error(422, "000", "paymentMethod: a card (scheme) with expiryMonth MM and expiryYear YYYY", "validation");
  }
  CardRule rule = rule_for(method->string_or("number"));
  FakePayment p;
  p.psp_reference = next_psp_reference();
  p.reference = reference;
  p.merchant_account = account;
  p.currency = amount->string_or("currency");
  p.amount = amount->int_or("value", 0);
  p.status = rule.status;
  p.final_status = rule.final_status;
  p.authorisations = rule.status == "Authorised" ? 1 : 0;
  std::string number = method->string_or("number");
  p.auth_code = p.psp_reference.substr(10, 6);
  p.card_reason = p.auth_code + ":" + (number.size() >= 4 ? number.substr(number.size() - 4) : "0000") + ":"
                  + method->string_or("expiryMonth") + "/" + method->string_or("expiryYear");
  JsonWriter w;
  w.begin_object();
  if (rule.status == "Authorised") {
    // Sent in the answer when the account is set to (Customer Area: additional data).
    w.key("additionalData").begin_object().key("authCode").string(p.auth_code).end_object();
  }
  if (rule.status == "RedirectShopper") {
    w.key("action").begin_object().key("method").string("GET").key("paymentMethodType").string("scheme");
    w.key("type").string("redirect");
    w.key("url").string("https://checkoutshopper-test.adyen.com/checkoutshopper/threeDS/redirect?MD=" + p.psp_reference);
    w.end_object();
  }
  w.key("amount").begin_object().key("currency").string(p.currency).key("value").number(p.amount).end_object();
  w.key("merchantReference").string(reference).key("pspReference").string(p.psp_reference);
  if (rule.status == "Refused") {
    w.key("refusalReason").string(rule.refusal_reason).key("refusalReasonCode").string(rule.refusal_code);
  }
  w.key("resultCode").string(rule.status).end_object();
  bool decided = rule.status == "Authorised" || rule.status == "Refused";
  bool authorised = decided ? rule.status == "Authorised" : rule.final_status == "Authorised";
  std::string notice = notification(p, "AUTHORISATION", authorised, p.psp_reference, "", p.amount,
                                    authorised ? p.card_reason
                                    : decided  ? rule.refusal_reason
                                               : "Refused");
  notices.emplace_back(decided ? "now" : "later", std::move(notice));
  if (!decided) {
    notices.emplace_back("decide", p.psp_reference);
  }
  by_reference[account + "\n" + reference] = p.psp_reference;
  payments[p.psp_reference] = std::move(p);
  return http::Response(200, std::move(w).take());
}

// A boleto: the buyer's name, CPF or CNPJ and billing address in Brazil required, as Adyen's
// boleto page asks; answered PresentToShopper with a voucher action (its page, its typeable
// line, its expiry at deliverAt). Pending until paid or expired (/fake/pay, /fake/expire).
http::Response AdyenFake::State::issue_boleto(const JsonValue& body, const std::string& account,
                                              const JsonValue& amount) {
  const JsonValue* name = body.find("shopperName");
  const JsonValue* address = body.find("billingAddress");
  std::string document = body.string_or("socialSecurityNumber");
  bool named =
      name != nullptr && !name->string_or("firstName").empty() && !name->string_or("lastName").empty();
  bool located = address != nullptr && address->string_or("country") == "BR";
  for (const char* field : {"street", "houseNumberOrName", "city", "postalCode", "stateOrProvince"}) {
    located = located && !address->string_or(field).empty();
  }
  bool cpf_or_cnpj = (document.size() == 11 || document.size() == 14)
                     && document.find_first_not_of("0123456789") == std::string::npos;
  if (!named || !located || !cpf_or_cnpj || amount.string_or("currency") != "BRL") {
    return service_error(422, "000",
                         "boletobancario: shopperName, socialSecurityNumber (CPF or CNPJ), a billingAddress "
                         "in BR and an amount in BRL are required",
                         "validation");
  }
  int64_t now = now_ms();
  auto due = parse_rfc3339(body.string_or("deliverAt"));
  int64_t due_ms = due && *due > now ? *due : now + 3LL * 86'400'000;
  FakePayment p;
  p.psp_reference = next_psp_reference();
  p.reference = body.string_or("reference");
  p.merchant_account = account;
  p.currency = "BRL";
  p.amount = amount.int_or("value", 0);
  p.method = "boletobancario";
  p.status = "PresentToShopper";
  std::string free_field = crypto::to_hex(crypto::sha256(p.psp_reference));
  for (char& c : free_field) {
    c = static_cast<char>('0' + (static_cast<unsigned char>(c) % 10));
  }
  auto boleto = make_boleto("033", due_ms / 86'400'000, p.amount, free_field.substr(0, 25));
  if (!boleto) {
    return service_error(422, "000", "boletobancario: " + boleto.error().message, "validation");
  }
  // Adyen writes a boleto's expiry without an offset, in Brasília time (UTC-3).
  std::string expires_at = format_rfc3339(due_ms - 3 * 3'600'000).substr(0, 19);
  JsonWriter w;
  w.begin_object().key("action").begin_object();
  w.key("downloadUrl").string("https://test.adyen.com/hpp/generationBoleto.shtml?data=" + p.psp_reference);
  w.key("expiresAt").string(expires_at);
  w.key("initialAmount")
      .begin_object()
      .key("currency")
      .string("BRL")
      .key("value")
      .number(p.amount)
      .end_object();
  w.key("paymentMethodType").string("boletobancario").key("reference").string(boleto->line_formatted);
  w.key("totalAmount")
      .begin_object()
      .key("currency")
      .string("BRL")
      .key("value")
      .number(p.amount)
      .end_object();
  w.key("type").string("voucher").end_object();
  w.key("merchantReference").string(p.reference).key("pspReference").string(p.psp_reference);
  w.key("resultCode").string("PresentToShopper").end_object();
  by_reference[account + "\n" + p.reference] = p.psp_reference;
  payments[p.psp_reference] = std::move(p);
  return http::Response(200, std::move(w).take());
}

// The shopper pays a boleto (AUTHORISATION, captured with it), or it expires unpaid
// (OFFER_CLOSED); only one still payable.
http::Response AdyenFake::State::settle_boleto(const std::string& psp_reference, bool paid) {
  auto it = payments.find(psp_reference);
  if (it == payments.end() || it->second.method != "boletobancario") {
    return service_error(404, "000", "no such boleto", "validation");
  }
  FakePayment& p = it->second;
  if (p.status != "PresentToShopper") {
    return service_error(409, "000", "the boleto is " + p.status + ", no longer payable", "validation");
  }
  p.status = paid ? "Authorised" : "Expired";
  if (paid) {
    p.authorisations += 1;
    p.captured = p.amount;
  }
  notify_later(std::chrono::milliseconds(20), notification(p, paid ? "AUTHORISATION" : "OFFER_CLOSED", true,
                                                           p.psp_reference, "", p.amount, ""));
  return http::Response(200, paid ? R"({"paid":true})" : R"({"expired":true})");
}

http::Response AdyenFake::State::modify(int kind, const std::string& psp, const JsonValue& body, const std::string& key) {
  auto it = payments.find(psp);
  if (it == payments.end() || body.string_or("merchantAccount") != it->second.merchant_account) {
    return service_error(422, "167", "Original pspReference required for this operation", "validation");
  }
  FakePayment& p = it->second;
  Modification m;
  m.kind = kind == route::kCapture ? "capture" : kind == route::kRefund ? "refund" : "cancel";
  m.psp_reference = next_psp_reference();
  m.payment_psp_reference = psp;
  m.idempotency_key = key;
  const JsonValue* amount = body.find("amount");
  if (kind != route::kCancel && (amount == nullptr || amount->string_or("currency") != p.currency)) {
    return service_error(422, "000", "amount with the payment's currency is required", "validation");
  }
  m.amount = kind == route::kCancel ? p.amount : amount->int_or("value", 0);
  std::string event = kind == route::kCapture ? "CAPTURE" : kind == route::kRefund ? "REFUND" : "CANCELLATION";
  std::string reason;
  if (kind == route::kCapture) {
    m.succeeded = ends_as_authorised(p) && m.amount > 0 && p.captured + m.amount <= p.amount && !p.fail_next;
    p.captured += m.succeeded ? m.amount : 0;
  } else if (kind == route::kRefund) {
    m.succeeded = m.amount > 0 && p.refunded + m.amount <= p.captured && !p.fail_next;
    p.refunded += m.succeeded ? m.amount : 0;
  } else {
    // A card authorised and not captured is voided; a boleto not paid yet is withdrawn.
    m.succeeded = (ends_as_authorised(p) && p.captured == 0) || p.status == "PresentToShopper";
    if (m.succeeded) {
      p.status = "Cancelled";
    }
  }
  if (!m.succeeded) {
    reason = p.fail_next ? "Failed by the acquirer" : "Insufficient balance on payment";
    if (p.fail_next && kind != route::kCancel) {
      event += "_FAILED";
    }
    p.fail_next = false;
  }
  std::string notice = notification(p, event, m.succeeded || event.find("_FAILED") != std::string::npos, m.psp_reference,
                                    psp, m.amount, reason);
  JsonWriter w;
  w.begin_object();
  if (kind != route::kCancel) {
    w.key("amount").begin_object().key("currency").string(p.currency).key("value").number(m.amount).end_object();
  }
  w.key("merchantAccount").string(p.merchant_account).key("paymentPspReference").string(psp);
  w.key("pspReference").string(m.psp_reference);
  if (!body.string_or("reference").empty()) {
    w.key("reference").string(body.string_or("reference"));
  }
  w.key("status").string("received").end_object();
  modifications.push_back(std::move(m));
  notify_later(std::chrono::milliseconds(50), std::move(notice));
  return http::Response(201, std::move(w).take());
}

http::Response AdyenFake::State::cancel_by_reference(const JsonValue& body, const std::string& key) {
  std::string account = body.string_or("merchantAccount");
  std::string reference = body.string_or("paymentReference");
  if (account.empty() || reference.empty()) {
    return service_error(422, "000", "merchantAccount and paymentReference are required", "validation");
  }
  Modification m;
  m.kind = "technical-cancel";
  m.psp_reference = next_psp_reference();
  m.idempotency_key = key;
  auto found = by_reference.find(account + "\n" + reference);
  if (found != by_reference.end()) {
    FakePayment& p = payments.at(found->second);
    m.payment_psp_reference = p.psp_reference;
    m.succeeded = p.captured == 0 && p.status != "Refused";
    if (m.succeeded) {
      p.status = "Cancelled";
    }
    notify_later(std::chrono::milliseconds(50), notification(p, "TECHNICAL_CANCEL", m.succeeded, m.psp_reference,
                                                             p.psp_reference, p.amount, ""));
  }
  JsonWriter w;
  w.begin_object().key("merchantAccount").string(account).key("paymentReference").string(reference);
  w.key("pspReference").string(m.psp_reference);
  if (!body.string_or("reference").empty()) {
    w.key("reference").string(body.string_or("reference"));
  }
  w.key("status").string("received").end_object();
  modifications.push_back(std::move(m));
  return http::Response(201, std::move(w).take());
}

std::string AdyenFake::State::ledger() const {
  std::lock_guard lock(mutex);
  JsonWriter w;
  w.begin_object().key("payments").begin_array();
  for (const auto& [psp, p] : payments) {
    w.begin_object().key("pspReference").string(psp).key("reference").string(p.reference);
    w.key("merchantAccount")
        .string(p.merchant_account)
        .key("status")
        .string(p.status)
        .key("method")
        .string(p.method);
    w.key("amount").number(p.amount).key("currency").string(p.currency).key("captured").number(p.captured);
    w.key("refunded").number(p.refunded).key("authorisations").number(p.authorisations);
    w.key("authCode").string(p.auth_code).end_object();
  }
  w.end_array().key("modifications").begin_array();
  for (const auto& m : modifications) {
    w.begin_object().key("kind").string(m.kind).key("pspReference").string(m.psp_reference);
    w.key("paymentPspReference").string(m.payment_psp_reference).key("amount").number(m.amount);
    w.key("succeeded").boolean(m.succeeded).key("idempotencyKey").string(m.idempotency_key).end_object();
  }
  w.end_array().key("notifications").begin_object();
  w.key("attempts").number(static_cast<int64_t>(notification_attempts));
  w.key("accepted").number(static_cast<int64_t>(notifications_accepted));
  w.key("abandoned").number(static_cast<int64_t>(notifications_abandoned));
  w.key("bodies").begin_array();
  for (const auto& body : notifications_sent) {
    w.string(body);
  }
  w.end_array().end_object().key("requests").begin_object();
  for (const auto& [name, count] : requests) {
    w.key(name).number(static_cast<int64_t>(count));
  }
  w.end_object().key("traceparents");
  traceparents.write(w);
  w.end_object();
  return std::move(w).take();
}

http::Response AdyenFake::State::answer(const http::Request& request) {
  auto found = table.find(request.method, request.path);
  if (!found.match) {
    return service_error(found.allow.empty() ? 404 : 405, "000", "no such route", "validation");
  }
  const int id = found.match->id;
  const auto& params = found.match->params;
  {
    std::lock_guard lock(mutex);
    std::string route = request.method + " " + std::string(found.match->pattern);
    ++requests[route];
    traceparents.note(std::move(route), request.header("traceparent"));
  }
  if (id == route::kLedger) {
    return http::Response(200, ledger());
  }
  if (id == route::kFailNext) {
    std::lock_guard lock(mutex);
    auto it = payments.find(params[0]);
    if (it == payments.end()) {
      return service_error(404, "000", "no such payment", "validation");
    }
    it->second.fail_next = true;
    return http::Response(200, R"({"failNext":true})");
  }
  if (id == route::kPayBoleto || id == route::kExpireBoleto) {
    std::lock_guard lock(mutex);
    return settle_boleto(params[0], id == route::kPayBoleto);
  }
  if (id == route::kNotifyTo) {
    // Where notifications go from now on, as a merchant sets it in Adyen's Customer Area.
    auto doc = JsonValue::parse(request.body);
    std::lock_guard lock(mutex);
    options.notification_url = doc ? doc->string_or("url") : "";
    return http::Response(200, R"({"notificationUrl":"set"})");
  }
  if (request.header("x-api-key") != options.api_key || options.api_key.empty()) {
    return service_error(401, "000", "HTTP Status Response - Unauthorized", "security");
  }
  auto body = JsonValue::parse(request.body);
  if (!body || body->type() != JsonValue::Type::kObject) {
    return service_error(400, "702", "Structure of request is invalid", "validation");
  }
  std::string key(request.header("idempotency-key"));
  std::string body_hash = crypto::to_hex(crypto::sha256(request.method + " " + request.path + "\n" + request.body));
  std::vector<std::pair<std::string, std::string>> notices;
  http::Response response(500, "");
  {
    std::lock_guard lock(mutex);
    if (!key.empty()) {
      if (key.size() > 64) {
        return service_error(422, "000", "Idempotency-Key: at most 64 characters", "validation");
      }
      if (auto used = answers.find(key); used != answers.end()) {
        return used->second.body_hash == body_hash
                   ? used->second.response
                   : service_error(422, "704", "request already processed or in progress", "validation");
      }
    }
    switch (id) {
      case route::kPayments:
        response = pay(*body, notices);
        break;
      case route::kCancelByReference:
        response = cancel_by_reference(*body, key);
        break;
      default:
        response = modify(id, params[0], *body, key);
    }
    if (!key.empty() && response.status / 100 == 2) {
      answers[key] = StoredAnswer{body_hash, response};
    }
  }
  for (auto& [when, what] : notices) {
    if (when == "now") {
      // Before the answer when asked to (a notification that overtakes it), else just after.
      options.notify_before_answer ? notify(what) : notify_later(std::chrono::milliseconds(20), what);
    } else if (when == "later") {
      notify_later(options.pending_delay, what);
    } else {
      delayer->after(options.pending_delay, [this, psp = what] {
        std::lock_guard lock(mutex);
        auto it = payments.find(psp);
        if (it != payments.end() && it->second.status != "Cancelled") {
          it->second.status = it->second.final_status;
          it->second.authorisations += it->second.final_status == "Authorised" ? 1 : 0;
        }
      });
    }
  }
  return response;
}

AdyenFake::AdyenFake(AdyenFakeOptions options) : state_(std::make_unique<State>(std::move(options))) {}
AdyenFake::~AdyenFake() = default;

std::string AdyenFake::ledger_json() const { return state_->ledger(); }

void AdyenFake::handle(http::Request request, http::Responder respond) {
  http::Response response = state_->answer(request);
  // The latency is the Checkout API's: the fake's own routes (its ledger) answer at once.
  if (state_->options.latency.count() == 0 || request.path.rfind("/fake/", 0) == 0) {
    return respond(std::move(response));
  }
  // Done now, answered later: a client that dies meanwhile never learns what it did.
  state_->delayer->after(state_->options.latency,
                         [respond, response = std::move(response)]() mutable { respond(std::move(response)); });
}

}  // namespace idempay::acquirer
