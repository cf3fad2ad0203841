#include "idempay/domain/records.hpp"

#include <chrono>

#include "fields.hpp"

namespace idempay::domain {

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Payment ids never contain '/' (see ppp::parse_create_payment), so the first one ends the id.
std::string recovery_key(const std::string& payment_id, const std::string& request_id) {
  return payment_id + "/" + request_id;
}

std::pair<std::string, std::string> parse_recovery_key(std::string_view key) {
  auto slash = key.find('/');
  if (slash == std::string_view::npos) {
    return {std::string(key), {}};
  }
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

namespace {

const auto kCardFields = std::make_tuple(  //
    IDEMPAY_FIELD("bin", bin), IDEMPAY_FIELD("last4", last4), IDEMPAY_FIELD("length", number_length),
    IDEMPAY_FIELD("expMonth", expiration_month), IDEMPAY_FIELD("expYear", expiration_year));

// What the shopper needs, as the payment record stores it (the same names as the acquirer's
// wire format used when it was first stored, but the store's own table: the wire may change).
const auto kDocumentFields = std::make_tuple(
    IDEMPAY_FIELD("paymentUrl", payment_url), IDEMPAY_FIELD("pixCode", pix_code),
    IDEMPAY_FIELD("pixQrPng", pix_qr_png), IDEMPAY_FIELD("boletoBarcode", boleto_barcode),
    IDEMPAY_FIELD("boletoLine", boleto_line), IDEMPAY_FIELD("boletoLineFormatted", boleto_line_formatted),
    IDEMPAY_FIELD("expiresIn", expires_in_seconds), IDEMPAY_FIELD("cardBrand", card_brand),
    IDEMPAY_FIELD("firstDigits", first_digits), IDEMPAY_FIELD("lastDigits", last_digits));

// The stored payment. Field names and order are those of the records already on disk.
const auto kPaymentFields = std::make_tuple(
    IDEMPAY_FIELD("state", state), IDEMPAY_FIELD("authorized", amounts.authorized),
    IDEMPAY_FIELD("settled", amounts.settled), IDEMPAY_FIELD("refunded", amounts.refunded),
    IDEMPAY_FIELD("currency", currency), IDEMPAY_FIELD("paymentMethod", payment_method),
    IDEMPAY_FIELD("orderId", order_id), IDEMPAY_FIELD("reference", reference),
    IDEMPAY_FIELD("transactionId", transaction_id), IDEMPAY_FIELD("merchant", merchant),
    IDEMPAY_FIELD("owner", owner), IDEMPAY_FIELD("acquirerRoute", acquirer_route),
    IDEMPAY_FIELD("fingerprint", fingerprint), IDEMPAY_FIELD("callbackUrl", callback_url),
    IDEMPAY_FIELD("card", card), IDEMPAY_FIELD("tid", tid), IDEMPAY_FIELD("nsu", nsu),
    IDEMPAY_FIELD("authorizationId", authorization_id), IDEMPAY_FIELD("acquirer", acquirer),
    IDEMPAY_FIELD("response", response), IDEMPAY_FIELD("acquirerRevision", acquirer_revision),
    IDEMPAY_FIELD("callbacks", callbacks), IDEMPAY_FIELD("document", document),
    IDEMPAY_FIELD("posPhase", pos_phase), IDEMPAY_FIELD("terminalSerial", terminal_serial),
    IDEMPAY_FIELD("createdAt", created_at), IDEMPAY_FIELD("updatedAt", updated_at));

const auto kOperationFields = std::make_tuple(
    IDEMPAY_FIELD("kind", kind), IDEMPAY_FIELD("phase", phase), IDEMPAY_FIELD("paymentId", payment_id),
    IDEMPAY_FIELD("fingerprint", fingerprint),
    IDEMPAY_FIELD_UNLESS_DEFAULT("acquirerKey", acquirer_key),  // absent: stored before scoped requestIds
    IDEMPAY_FIELD("amount", amount), IDEMPAY_FIELD("httpStatus", http_status), IDEMPAY_FIELD("response", response),
    IDEMPAY_FIELD("updatedAt", updated_at));

}  // namespace

}  // namespace idempay::domain

namespace idempay::domain::fields {

template <>
struct Codec<PaymentState> {
  static void write(JsonWriter& w, PaymentState v) { w.string(to_string(v)); }
  static bool read(const JsonValue& object, std::string_view name, PaymentState& v) {
    auto state = payment_state_from_string(object.string_or(name));
    if (state) {
      v = *state;
    }
    return state.has_value();
  }
};

template <>
struct Codec<ppp::OperationKind> {
  static void write(JsonWriter& w, ppp::OperationKind v) { w.string(ppp::to_string(v)); }
  static bool read(const JsonValue& object, std::string_view name, ppp::OperationKind& v) {
    std::string kind = object.string_or(name);
    for (auto k : {ppp::OperationKind::kCancel, ppp::OperationKind::kSettle, ppp::OperationKind::kRefund}) {
      if (ppp::to_string(k) == kind) {
        v = k;
        return true;
      }
    }
    return false;
  }
};

template <>
struct Codec<OperationPhase> {
  static void write(JsonWriter& w, OperationPhase v) { w.string(v == OperationPhase::kDone ? "done" : "processing"); }
  static bool read(const JsonValue& object, std::string_view name, OperationPhase& v) {
    v = object.string_or(name) == "done" ? OperationPhase::kDone : OperationPhase::kProcessing;
    return true;
  }
};

template <>
struct Codec<CardSummary> : NestedCodec<CardSummary, kCardFields> {};

template <>
struct Codec<acquirer::PaymentDocument> : NestedCodec<acquirer::PaymentDocument, kDocumentFields> {};

}  // namespace idempay::domain::fields

namespace idempay::domain {

std::string encode(const PaymentRecord& r) { return fields::encode_object(r, kPaymentFields); }

Result<PaymentRecord> decode_payment(std::string_view json) {
  return fields::decode_object<PaymentRecord>(json, kPaymentFields, "payment");
}

std::string operation_key(const std::string& payment_id, const std::string& request_id) {
  return payment_id + "/" + request_id;
}

std::string_view request_id_of(std::string_view operation_key) {
  auto slash = operation_key.find('/');
  return slash == std::string_view::npos ? operation_key : operation_key.substr(slash + 1);
}

std::string encode(const OperationRecord& r) { return fields::encode_object(r, kOperationFields); }

Result<OperationRecord> decode_operation(std::string_view json) {
  return fields::decode_object<OperationRecord>(json, kOperationFields, "operation");
}

}  // namespace idempay::domain
