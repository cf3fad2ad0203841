#include "idempay/answers/answers.hpp"

#include <algorithm>

#include "idempay/base/json_writer.hpp"

namespace idempay::answers {

using domain::PaymentDocumentFacts;
using ppp::MethodFamily;
using ppp::OperationKind;

namespace {

// The fields a method's family adds to a payment's answer, as the gateway's apps read them;
// each is written only when non-empty.
struct MethodFields {
  int64_t delay_to_cancel = 0;
  std::string payment_url;            ///< boleto or redirect URL
  std::string bank_issue_invoice_id;  ///< deprecated boleto URL, same as payment_url
  std::string redirect_url;           ///< deprecated redirect URL, same as payment_url
  std::string payment_app_name;       ///< paymentAppData.appName
  std::string payment_app_payload;    ///< paymentAppData.payload, a JSON string
  std::string identification_number;  ///< boleto typeable line, 47 digits
  std::string identification_number_formatted;
  std::string bar_code_image_type;    ///< "i25" for boleto
  std::string bar_code_image_number;  ///< 44 digits
  std::string card_brand;             ///< POS: an approved payment's card fragments
  std::string first_digits;
  std::string last_digits;
};

void add_open_fields(const PaymentDocumentFacts& f, MethodFields& out) {
  const ppp::PaymentDocument& d = f.document;
  switch (f.family) {
    case MethodFamily::kCard:
      // A 3-D Secure challenge: the shopper follows the page, the outcome comes by webhook.
      if (!d.payment_url.empty()) {
        out.payment_url = out.redirect_url = d.payment_url;
      }
      return;
    case MethodFamily::kPix:
      if (!d.pix_code.empty()) {
        JsonWriter payload;
        payload.begin_object().key("code").string(d.pix_code).key("qrCodeBase64Image").string(d.pix_qr_png).end_object();
        out.payment_app_name = "vtex.pix-payment";
        out.payment_app_payload = payload.str();
      }
      return;
    case MethodFamily::kBankInvoice:
      out.payment_url = out.bank_issue_invoice_id = d.payment_url;
      out.identification_number = d.boleto_line;
      out.identification_number_formatted = d.boleto_line_formatted;
      out.bar_code_image_type = "i25";
      out.bar_code_image_number = d.boleto_barcode;
      return;
    case MethodFamily::kRedirect:
      out.payment_url = out.redirect_url = d.payment_url;
      return;
    case MethodFamily::kPos:
      if (!f.pos_submit_url.empty()) {
        JsonWriter payload;
        payload.begin_object().key("submitUrl").string(f.pos_submit_url).end_object();
        out.payment_app_name = "vtex.terminal-connector-app";
        out.payment_app_payload = payload.str();
      } else {
        out.payment_app_name = "vtex.challenge-wait-for-confirmation";
        out.payment_app_payload = R"({"secondsWaiting":300})";
      }
      return;
  }
}

MethodFields method_fields(const std::optional<PaymentDocumentFacts>& facts, int64_t delay_to_cancel) {
  MethodFields out;
  out.delay_to_cancel = delay_to_cancel;
  if (!facts) {
    return out;
  }
  const PaymentDocumentFacts& f = *facts;
  const ppp::PaymentDocument& d = f.document;
  out.delay_to_cancel = d.expires_in_seconds > 0 ? d.expires_in_seconds : delay_to_cancel;
  if (f.family == MethodFamily::kPix) {
    out.delay_to_cancel = std::clamp<int64_t>(out.delay_to_cancel, 900, 3600);
  }
  if (f.family == MethodFamily::kPos) {
    out.delay_to_cancel = 600;  // at least the 300 s the wait app polls
    if (f.approved) {
      out.card_brand = d.card_brand;
      out.first_digits = d.first_digits;
      out.last_digits = d.last_digits;
    }
  }
  if (f.open) {
    add_open_fields(f, out);
  }
  return out;
}

}  // namespace

std::string write_payment(const domain::PaymentAnswer& a) {
  const MethodFields m = method_fields(a.method, a.delay_to_cancel);
  JsonWriter w(512);  // an answer with its payment app data and identifiers: a few hundred bytes
  w.begin_object();
  w.key("paymentId").string(a.payment_id);
  w.key("status").string(a.status);
  // The schema types authorizationId and tid as required strings: "" when not issued.
  w.key("authorizationId").string(a.authorization_id);
  w.key("tid").string(a.tid);
  w.key("nsu").string_or_null(a.nsu);
  w.key("acquirer").string_or_null(a.acquirer);
  w.key("code").string_or_null(a.code);
  w.key("message").string_or_null(a.message);
  w.key("delayToAutoSettle").number(a.delay_to_auto_settle);
  w.key("delayToAutoSettleAfterAntifraud").number(a.delay_to_auto_settle_after_antifraud);
  w.key("delayToCancel").number(m.delay_to_cancel);
  auto optional = [&w](std::string_view key, const std::string& value) {
    if (!value.empty()) {
      w.key(key).string(value);
    }
  };
  optional("paymentUrl", m.payment_url);
  optional("bankIssueInvoiceId", m.bank_issue_invoice_id);
  optional("redirectUrl", m.redirect_url);
  if (!m.payment_app_name.empty()) {
    w.key("paymentAppData").begin_object();
    w.key("appName").string(m.payment_app_name).key("payload").string(m.payment_app_payload);
    w.end_object();
  }
  optional("identificationNumber", m.identification_number);
  optional("identificationNumberFormatted", m.identification_number_formatted);
  optional("barCodeImageType", m.bar_code_image_type);
  optional("barCodeImageNumber", m.bar_code_image_number);
  optional("cardBrand", m.card_brand);
  optional("firstDigits", m.first_digits);
  optional("lastDigits", m.last_digits);
  if (a.max_value > 0) {
    // In money units, like `value` (the protocol's examples; its schema says integer).
    w.key("maxValue").raw_number(format_amount(a.max_value));
  }
  w.end_object();
  return std::move(w).take();
}

std::string write_operation(const domain::OperationAnswer& a) {
  static constexpr std::string_view kIdField[] = {"cancellationId", "settleId", "refundId"};
  JsonWriter w;
  w.begin_object();
  w.key("paymentId").string(a.payment_id);
  w.key(kIdField[static_cast<size_t>(a.kind)]).string_or_null(a.id);
  if (a.kind != OperationKind::kCancel) {
    w.key("value").raw_number(format_amount(a.value));
  }
  w.key("code").string_or_null(a.code);
  w.key("message").string(a.message);
  w.key("requestId").string(a.request_id);
  w.end_object();
  return std::move(w).take();
}

std::string write_error(std::string_view code, std::string_view message) {
  JsonWriter w;
  w.begin_object();
  w.key("status").string("error");
  w.key("code").string(code);
  w.key("message").string(message);
  w.end_object();
  return std::move(w).take();
}

std::string write_refusal(const domain::Refused& r) {
  if (!r.operation) {
    return write_error(code_of(r.refusal), r.message);
  }
  const domain::OperationRef& op = *r.operation;
  return write_operation({op.kind, op.payment_id, op.request_id, "", 0, std::string(code_of(r.refusal)), r.message});
}

std::string body_of(domain::Reply reply) {
  return reply.refused ? write_refusal(*reply.refused) : std::move(reply.body);
}

unsigned http_status(domain::Outcome outcome) {
  using domain::Outcome;
  switch (outcome) {
    case Outcome::kDone: return 200;
    case Outcome::kNotFound: return 404;
    case Outcome::kRefused: return 400;
    case Outcome::kConflict: return 409;
    case Outcome::kRetry: return 503;
    case Outcome::kFailed: return 500;
    case Outcome::kManual: return 501;
  }
  return 500;
}

std::string PppAnswers::received(bool duplicate) const {
  return duplicate ? R"({"received":true,"duplicate":true})" : R"({"received":true})";
}

std::string PppAnswers::terminal_accepted() const { return R"({"accepted":true})"; }

}  // namespace idempay::answers
