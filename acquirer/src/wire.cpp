#include "wire.hpp"

#include "idempay/protocol/json_read.hpp"
#include "idempay/protocol/json_writer.hpp"

namespace idempay::acquirer::wire {

namespace {

Result<Cents> cents_of(const JsonValue& v, std::string_view name) {
  const JsonValue* f = v.find(name);
  if (f == nullptr || f->type() != JsonValue::Type::kNumber) {
    return make_error(ErrorCode::kInvalidArgument, std::string(name) + " must be a number");
  }
  return parse_decimal_amount(f->text());
}

std::optional<AuthorizationStatus> status_of(std::string_view s) {
  for (auto st : {AuthorizationStatus::kApproved, AuthorizationStatus::kDenied, AuthorizationStatus::kPending}) {
    if (to_string(st) == s) {
      return st;
    }
  }
  return std::nullopt;
}

// The fields an authorization answer and a webhook's data share.
Authorization authorization_fields(const JsonValue& v, AuthorizationStatus status) {
  Authorization a;
  a.status = status;
  a.tid = v.string_or("tid");
  a.nsu = v.string_or("nsu");
  a.authorization_id = v.string_or("authorizationId");
  a.acquirer = v.string_or("acquirer");
  a.code = v.string_or("code");
  a.message = v.string_or("message");
  a.revision = v.int_or("revision");
  return a;
}

std::optional<ppp::OperationKind> kind_of(std::string_view s) {
  for (auto k : {ppp::OperationKind::kCancel, ppp::OperationKind::kSettle, ppp::OperationKind::kRefund}) {
    if (ppp::to_string(k) == s) {
      return k;
    }
  }
  return std::nullopt;
}

// The JSON form of a PaymentDocument on the wire (the connector stores its own: domain/).
void write_document(JsonWriter& w, const PaymentDocument& d) {
  w.begin_object();
  w.key("paymentUrl").string(d.payment_url).key("pixCode").string(d.pix_code).key("pixQrPng").string(d.pix_qr_png);
  w.key("boletoBarcode").string(d.boleto_barcode).key("boletoLine").string(d.boleto_line);
  w.key("boletoLineFormatted").string(d.boleto_line_formatted).key("expiresIn").number(d.expires_in_seconds);
  w.key("cardBrand").string(d.card_brand).key("firstDigits").string(d.first_digits);
  w.key("lastDigits").string(d.last_digits);
  w.end_object();
}

PaymentDocument read_document(const JsonValue& d) {
  PaymentDocument out;
  out.payment_url = d.string_or("paymentUrl");
  out.pix_code = d.string_or("pixCode");
  out.pix_qr_png = d.string_or("pixQrPng");
  out.boleto_barcode = d.string_or("boletoBarcode");
  out.boleto_line = d.string_or("boletoLine");
  out.boleto_line_formatted = d.string_or("boletoLineFormatted");
  out.expires_in_seconds = d.int_or("expiresIn");
  out.card_brand = d.string_or("cardBrand");
  out.first_digits = d.string_or("firstDigits");
  out.last_digits = d.string_or("lastDigits");
  return out;
}

}  // namespace

std::string encode(const AuthorizeCall& c) {
  JsonWriter w;
  w.begin_object();
  w.key("key").string(c.key).key("amount").raw_number(format_amount(c.amount));
  w.key("currency").string(c.currency).key("paymentMethod").string(c.payment_method);
  w.key("merchantName").string(c.merchant_name).key("terminalSerial").string(c.terminal_serial);
  w.key("card").begin_object();
  w.key("number").string(c.card.number).key("holder").string(c.card.holder);
  w.key("csc").string(c.card.csc).key("expirationMonth").string(c.card.expiration_month);
  w.key("expirationYear").string(c.card.expiration_year);
  w.end_object();
  w.end_object();
  return std::move(w).take();
}

std::string encode(const OperationCall& c) {
  JsonWriter w;
  w.begin_object();
  w.key("kind").string(ppp::to_string(c.kind)).key("key").string(c.key);
  w.key("paymentKey").string(c.payment_key).key("tid").string(c.tid);
  w.key("amount").raw_number(format_amount(c.amount));
  w.end_object();
  return std::move(w).take();
}

std::string encode(const Authorization& a) {
  JsonWriter w;
  w.begin_object();
  w.key("status").string(to_string(a.status)).key("tid").string(a.tid).key("nsu").string(a.nsu);
  w.key("authorizationId").string(a.authorization_id).key("acquirer").string(a.acquirer);
  w.key("code").string(a.code).key("message").string(a.message).key("revision").number(a.revision);
  w.key("document");
  write_document(w, a.document);
  w.end_object();
  return std::move(w).take();
}

std::string encode(const OperationOutcome& o) {
  JsonWriter w;
  w.begin_object();
  w.key("succeeded").boolean(o.succeeded).key("pending").boolean(o.pending).key("manual").boolean(o.manual);
  w.key("id").string(o.id);
  w.key("amount").raw_number(format_amount(o.amount));
  w.key("code").string(o.code).key("message").string(o.message);
  w.end_object();
  return std::move(w).take();
}

Result<AuthorizeCall> decode_authorize_call(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  AuthorizeCall c;
  c.key = doc->string_or("key");
  auto amount = cents_of(*doc, "amount");
  if (!amount || c.key.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "authorize needs key and amount");
  }
  c.amount = *amount;
  c.currency = doc->string_or("currency");
  c.payment_method = doc->string_or("paymentMethod");
  c.merchant_name = doc->string_or("merchantName");
  c.terminal_serial = doc->string_or("terminalSerial");
  if (const JsonValue* card = doc->find("card"); card != nullptr) {
    c.card.number = card->string_or("number");
    c.card.holder = card->string_or("holder");
    c.card.csc = card->string_or("csc");
    c.card.expiration_month = card->string_or("expirationMonth");
    c.card.expiration_year = card->string_or("expirationYear");
  }
  return c;
}

Result<OperationCall> decode_operation_call(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  OperationCall c;
  auto kind = kind_of(doc->string_or("kind"));
  auto amount = cents_of(*doc, "amount");
  c.key = doc->string_or("key");
  if (!kind || !amount || c.key.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "operation needs kind, key and amount");
  }
  c.kind = *kind;
  c.amount = *amount;
  c.payment_key = doc->string_or("paymentKey");
  c.tid = doc->string_or("tid");
  return c;
}

Result<Authorization> decode_authorization(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  auto status = status_of(doc->string_or("status"));
  if (!status) {
    return make_error(ErrorCode::kUnavailable, "acquirer answered an unknown status");
  }
  Authorization a = authorization_fields(*doc, *status);
  if (const JsonValue* d = doc->find("document"); d != nullptr) {
    a.document = read_document(*d);
  }
  return a;
}

}  // namespace idempay::acquirer::wire

namespace idempay::acquirer {

std::string encode_event(const AuthorizationEvent& event) {
  const Authorization& a = event.authorization;
  JsonWriter w;
  w.begin_object().key("type").string("authorization.updated").key("data").begin_object();
  w.key("paymentId").string(event.key).key("status").string(to_string(a.status));
  w.key("tid").string(a.tid).key("nsu").string(a.nsu).key("authorizationId").string(a.authorization_id);
  w.key("acquirer").string(a.acquirer).key("code").string(a.code).key("message").string(a.message);
  w.key("revision").number(a.revision);
  w.end_object().end_object();
  return std::move(w).take();
}

Result<AuthorizationEvent> decode_event(std::string_view body) {
  auto doc = JsonValue::parse(body);
  const JsonValue* data = doc ? doc->find("data") : nullptr;
  auto status = data ? wire::status_of(data->string_or("status")) : std::nullopt;
  if (!status || data->string_or("paymentId").empty()) {
    return make_error(ErrorCode::kInvalidArgument, "webhook data needs paymentId and status");
  }
  return AuthorizationEvent{data->string_or("paymentId"), wire::authorization_fields(*data, *status)};
}

}  // namespace idempay::acquirer

namespace idempay::acquirer::wire {

Result<OperationOutcome> decode_operation_outcome(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  OperationOutcome o;
  o.succeeded = doc->bool_or("succeeded");
  o.pending = doc->bool_or("pending");
  o.manual = doc->bool_or("manual");
  if (o.succeeded + o.pending + o.manual > 1) {
    return make_error(ErrorCode::kInvalidArgument, "an operation outcome is one of succeeded, pending and manual");
  }
  o.id = doc->string_or("id");
  o.amount = cents_of(*doc, "amount").value_or(0);
  o.code = doc->string_or("code");
  o.message = doc->string_or("message");
  return o;
}

}  // namespace idempay::acquirer::wire
