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

// Nested records and the payment are written without the members that hold their default
// (empty strings, zeros, an empty document): a new card payment's record is a third shorter.
// Records written before (version 1: every member, always) read the same.
#define FIELD IDEMPAY_FIELD_UNLESS_DEFAULT

const auto kCardFields = std::make_tuple(  //
    FIELD("bin", bin), FIELD("last4", last4), FIELD("length", number_length), FIELD("expMonth", expiration_month),
    FIELD("expYear", expiration_year));

// What the shopper needs, as the payment record stores it (the same names as the acquirer's
// wire format used when it was first stored, but the store's own table: the wire may change).
const auto kDocumentFields = std::make_tuple(
    FIELD("paymentUrl", payment_url), FIELD("pixCode", pix_code), FIELD("pixQrPng", pix_qr_png),
    FIELD("boletoBarcode", boleto_barcode), FIELD("boletoLine", boleto_line),
    FIELD("boletoLineFormatted", boleto_line_formatted), FIELD("expiresIn", expires_in_seconds),
    FIELD("cardBrand", card_brand), FIELD("firstDigits", first_digits), FIELD("lastDigits", last_digits));

// The stored payment, version 2. Field names are those of the records already on disk; the
// state is always written (a record without one is refused).
const auto kPaymentFields = std::make_tuple(
    fields::version("v", 2), IDEMPAY_FIELD("state", state), FIELD("authorized", amounts.authorized),
    FIELD("settled", amounts.settled), FIELD("refunded", amounts.refunded),
    FIELD("maxValue", amounts.max_value), FIELD("currency", currency), FIELD("paymentMethod", payment_method),
    FIELD("orderId", order_id), FIELD("reference", reference), FIELD("transactionId", transaction_id),
    FIELD("merchant", merchant), FIELD("owner", owner), FIELD("acquirerRoute", acquirer_route),
    FIELD("fingerprint", fingerprint), FIELD("callbackUrl", callback_url), FIELD("card", card),
    FIELD("tid", tid), FIELD("nsu", nsu), FIELD("authorizationId", authorization_id),
    FIELD("acquirer", acquirer), FIELD("response", response), FIELD("acquirerRevision", acquirer_revision),
    FIELD("callbacks", callbacks), FIELD("document", document), FIELD("posPhase", pos_phase),
    FIELD("terminalSerial", terminal_serial), FIELD("createdAt", created_at), FIELD("updatedAt", updated_at),
    FIELD("leaseOwner", lease_owner), FIELD("leaseUntil", lease_until),
    FIELD("cancellationId", cancellation_id), FIELD("watchUntil", watch_until),
    IDEMPAY_FIELD_UNLESS_DEFAULT("traceparent", trace), IDEMPAY_FIELD_UNLESS_DEFAULT("tracestate", trace_state));

#undef FIELD

const auto kOperationFields = std::make_tuple(
    IDEMPAY_FIELD("kind", kind), IDEMPAY_FIELD("phase", phase), IDEMPAY_FIELD("paymentId", payment_id),
    IDEMPAY_FIELD("fingerprint", fingerprint),
    IDEMPAY_FIELD_UNLESS_DEFAULT("acquirerKey", acquirer_key),  // absent: stored before scoped requestIds
    IDEMPAY_FIELD("amount", amount), IDEMPAY_FIELD_UNLESS_DEFAULT("recipients", recipients),
    IDEMPAY_FIELD_UNLESS_DEFAULT("outcome", outcome), IDEMPAY_FIELD("response", response),
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

// A done operation's outcome, by name; absent when it succeeded (Outcome{}), or while the
// operation is in flight. Records written before outcomes were stored by name hold the HTTP
// status the answer was first sent with instead ("httpStatus": 200, 500 or 501; 0 in flight).
template <>
struct Codec<Outcome> {
  static constexpr std::pair<Outcome, std::string_view> kNames[] = {
      {Outcome::kDone, "done"}, {Outcome::kFailed, "failed"}, {Outcome::kManual, "manual"}};
  static void write(JsonWriter& w, Outcome v) {
    for (auto [outcome, label] : kNames) {
      if (outcome == v) {
        w.string(label);
        return;
      }
    }
    w.string("failed");
  }
  static bool read(const JsonValue& object, std::string_view name, Outcome& v) {
    if (!object.find(name)) {
      int64_t legacy = object.int_or("httpStatus");
      v = legacy == 501 ? Outcome::kManual : legacy == 200 || legacy == 0 ? Outcome::kDone : Outcome::kFailed;
      return true;
    }
    std::string stored = object.string_or(name);
    for (auto [outcome, label] : kNames) {
      if (label == stored) {
        v = outcome;
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

// A split as stored with its operation: an array, absent when there is none.
template <>
struct Codec<std::vector<ppp::Recipient>> {
  static bool is_default(const std::vector<ppp::Recipient>& v) { return v.empty(); }
  static void write(JsonWriter& w, const std::vector<ppp::Recipient>& v) {
    w.begin_array();
    for (const auto& r : v) {
      w.begin_object().key("id").string(r.id).key("name").string(r.name);
      w.key("documentType").string(r.document_type).key("document").string(r.document).key("role").string(r.role);
      w.key("amount").number(r.amount).key("chargeProcessingFee").boolean(r.charge_processing_fee);
      w.key("chargebackLiable").boolean(r.chargeback_liable).key("commission").number(r.commission_amount);
      w.end_object();
    }
    w.end_array();
  }
  static bool read(const JsonValue& object, std::string_view name, std::vector<ppp::Recipient>& v) {
    const JsonValue* list = object.find(name);
    if (list == nullptr) {
      return true;
    }
    if (list->type() != JsonValue::Type::kArray) {
      return false;
    }
    for (const JsonValue& item : list->items()) {
      ppp::Recipient r;
      r.id = item.string_or("id");
      r.name = item.string_or("name");
      r.document_type = item.string_or("documentType");
      r.document = item.string_or("document");
      r.role = item.string_or("role");
      r.amount = item.int_or("amount");
      r.charge_processing_fee = item.bool_or("chargeProcessingFee");
      r.chargeback_liable = item.bool_or("chargebackLiable");
      r.commission_amount = item.int_or("commission");
      v.push_back(std::move(r));
    }
    return true;
  }
};

template <>
struct Codec<CardSummary> : NestedCodec<CardSummary, kCardFields> {};

template <>
struct Codec<domain::PaymentDocument> : NestedCodec<domain::PaymentDocument, kDocumentFields> {};

}  // namespace idempay::domain::fields

namespace idempay::domain {

std::string encode(const PaymentRecord& r) { return fields::encode_object(r, kPaymentFields); }

Result<PaymentRecord> decode_payment(std::string_view json) {
  return fields::decode_object<PaymentRecord>(json, kPaymentFields, "payment");
}

std::string encode(const Watch& w) {
  JsonWriter out;
  out.begin_object().key("until").number(w.until).key("acquirer").string(w.acquirer).end_object();
  return std::move(out).take();
}

Result<Watch> decode_watch(std::string_view payment_id, std::string_view value) {
  auto doc = JsonValue::parse(value);
  if (!doc || doc->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kInvalidArgument, "a watch is a JSON object");
  }
  return Watch{std::string(payment_id), doc->int_or("until", 0), doc->string_or("acquirer")};
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
