#include "idempay/base/json_writer.hpp"
#include "idempay/protocol/ppp.hpp"

namespace idempay::ppp {

std::string write_create_payment_response(const CreatePaymentResponse& r) {
  JsonWriter w;
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

}  // namespace idempay::ppp
