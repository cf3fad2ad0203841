#include <algorithm>

#include "idempay/base/json_writer.hpp"
#include "idempay/protocol/ppp.hpp"

namespace idempay::ppp {

std::string write_create_payment_response(const CreatePaymentResponse& r) {
  JsonWriter w(512);  // an answer with its payment app data and identifiers: a few hundred bytes
  w.begin_object();
  w.key("paymentId").string(r.payment_id);
  w.key("status").string(r.status);
  // The schema types authorizationId and tid as required strings: "" when not issued.
  w.key("authorizationId").string(r.authorization_id);
  w.key("tid").string(r.tid);
  w.key("nsu").string_or_null(r.nsu);
  w.key("acquirer").string_or_null(r.acquirer);
  w.key("code").string_or_null(r.code);
  w.key("message").string_or_null(r.message);
  w.key("delayToAutoSettle").number(r.delay_to_auto_settle);
  w.key("delayToAutoSettleAfterAntifraud").number(r.delay_to_auto_settle_after_antifraud);
  w.key("delayToCancel").number(r.delay_to_cancel);
  auto optional = [&w](std::string_view key, const std::string& value) {
    if (!value.empty()) {
      w.key(key).string(value);
    }
  };
  optional("paymentUrl", r.payment_url);
  optional("bankIssueInvoiceId", r.bank_issue_invoice_id);
  optional("redirectUrl", r.redirect_url);
  if (!r.payment_app_name.empty()) {
    w.key("paymentAppData").begin_object();
    w.key("appName").string(r.payment_app_name).key("payload").string(r.payment_app_payload);
    w.end_object();
  }
  optional("identificationNumber", r.identification_number);
  optional("identificationNumberFormatted", r.identification_number_formatted);
  optional("barCodeImageType", r.bar_code_image_type);
  optional("barCodeImageNumber", r.bar_code_image_number);
  optional("cardBrand", r.card_brand);
  optional("firstDigits", r.first_digits);
  optional("lastDigits", r.last_digits);
  if (r.max_value > 0) {
    // In money units, like `value` (the protocol's examples; its schema says integer).
    w.key("maxValue").raw_number(format_amount(r.max_value));
  }
  w.end_object();
  return std::move(w).take();
}

std::string write_operation_response(const OperationResponse& r) {
  static constexpr std::string_view kIdField[] = {"cancellationId", "settleId", "refundId"};
  JsonWriter w;
  w.begin_object();
  w.key("paymentId").string(r.payment_id);
  w.key(kIdField[static_cast<size_t>(r.kind)]).string_or_null(r.id);
  if (r.kind != OperationKind::kCancel) {
    w.key("value").raw_number(format_amount(r.value));
  }
  w.key("code").string_or_null(r.code);
  w.key("message").string(r.message);
  w.key("requestId").string(r.request_id);
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


void add_method_fields(const PaymentDocumentFacts& f, CreatePaymentResponse& out) {
  const PaymentDocument& d = f.document;
  if (d.expires_in_seconds > 0) {
    out.delay_to_cancel = d.expires_in_seconds;
  }
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
  if (!f.open) {
    return;
  }
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

}  // namespace idempay::ppp
