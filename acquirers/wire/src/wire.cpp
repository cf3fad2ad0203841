#include "idempay/acquirers/wire.hpp"

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"

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
  a.max_value = v.find("maxValue") != nullptr ? cents_of(v, "maxValue").value_or(0) : 0;
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

void write_address(JsonWriter& w, const ppp::Address& a) {
  w.begin_object();
  w.key("country").string(a.country).key("street").string(a.street).key("number").string(a.number);
  w.key("complement").string(a.complement).key("neighborhood").string(a.neighborhood);
  w.key("postalCode").string(a.postal_code).key("city").string(a.city).key("state").string(a.state);
  w.end_object();
}

void write_order(JsonWriter& w, const ppp::OrderData& o) {
  w.begin_object();
  if (!o.installments_interest_rate.empty()) {
    w.key("installmentsInterestRate").raw_number(o.installments_interest_rate);
  }
  w.key("installmentsValue").raw_number(format_amount(o.installments_value));
  w.key("deviceFingerprint").string(o.device_fingerprint).key("ipAddress").string(o.ip_address);
  w.key("shippingValue").raw_number(format_amount(o.shipping_value));
  w.key("taxValue").raw_number(format_amount(o.tax_value));
  w.key("totalCartValue").raw_number(format_amount(o.total_cart_value));
  const ppp::Buyer& b = o.buyer;
  w.key("buyer").begin_object();
  w.key("id").string(b.id).key("firstName").string(b.first_name).key("lastName").string(b.last_name);
  w.key("document").string(b.document).key("documentType").string(b.document_type);
  w.key("email").string(b.email).key("phone").string(b.phone).key("isCorporate").boolean(b.is_corporate);
  w.key("corporateName").string(b.corporate_name).key("tradeName").string(b.trade_name);
  w.key("corporateDocument").string(b.corporate_document);
  w.end_object();
  w.key("shippingAddress");
  write_address(w, o.shipping_address);
  w.key("billingAddress");
  write_address(w, o.billing_address);
  w.key("items").begin_array();
  for (const auto& i : o.items) {
    w.begin_object();
    w.key("id").string(i.id).key("name").string(i.name).key("price").raw_number(format_amount(i.price));
    w.key("quantity").number(i.quantity).key("discount").raw_number(format_amount(i.discount));
    w.key("deliveryType").string(i.delivery_type).key("categoryId").string(i.category_id);
    w.key("sellerId").string(i.seller_id);
    w.end_object();
  }
  w.end_array();
  w.key("merchantSettings").begin_array();
  for (const auto& [name, value] : o.merchant_settings) {
    w.begin_object().key("name").string(name).key("value").string(value).end_object();
  }
  w.end_array();
  w.end_object();
}

void write_recipients(JsonWriter& w, const std::vector<ppp::Recipient>& recipients) {
  w.begin_array();
  for (const auto& r : recipients) {
    w.begin_object();
    w.key("id").string(r.id).key("name").string(r.name).key("documentType").string(r.document_type);
    w.key("document").string(r.document).key("role").string(r.role);
    w.key("amount").raw_number(format_amount(r.amount));
    w.key("chargeProcessingFee").boolean(r.charge_processing_fee).key("chargebackLiable").boolean(r.chargeback_liable);
    w.key("commissionAmount").raw_number(format_amount(r.commission_amount));
    w.end_object();
  }
  w.end_array();
}

// What the stub reads of the order: the terms and what was bought (no personal data).
ppp::OrderData read_order(const JsonValue& order) {
  ppp::OrderData o;
  if (const JsonValue* rate = order.find("installmentsInterestRate"); rate != nullptr) {
    o.installments_interest_rate = rate->text();
  }
  o.installments_value = cents_of(order, "installmentsValue").value_or(0);
  o.device_fingerprint = order.string_or("deviceFingerprint");
  o.ip_address = order.string_or("ipAddress");
  if (const JsonValue* items = order.find("items"); items != nullptr && items->type() == JsonValue::Type::kArray) {
    for (const JsonValue& item : items->items()) {
      ppp::Item i;
      i.id = item.string_or("id");
      i.quantity = item.int_or("quantity");
      i.price = cents_of(item, "price").value_or(0);
      o.items.push_back(std::move(i));
    }
  }
  return o;
}

// What the stub keeps of a split: who and how much (it moves no money by recipient).
std::vector<ppp::Recipient> read_recipients(const JsonValue& doc) {
  std::vector<ppp::Recipient> out;
  if (const JsonValue* list = doc.find("recipients"); list != nullptr && list->type() == JsonValue::Type::kArray) {
    for (const JsonValue& item : list->items()) {
      ppp::Recipient r;
      r.id = item.string_or("id");
      r.role = item.string_or("role");
      r.amount = cents_of(item, "amount").value_or(0);
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

std::string encode(const AuthorizeCall& c) {
  JsonWriter w;
  w.begin_object();
  w.key("key").string(c.key).key("amount").raw_number(format_amount(c.amount));
  w.key("currency").string(c.currency).key("paymentMethod").string(c.payment_method);
  w.key("merchantName").string(c.merchant_name).key("terminalSerial").string(c.terminal_serial);
  w.key("installments").number(c.installments).key("shopperInteraction").string(c.shopper_interaction);
  w.key("order");
  write_order(w, c.order);
  w.key("recipients");
  write_recipients(w, c.recipients);
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
  w.key("recipients");
  write_recipients(w, c.recipients);
  w.end_object();
  return std::move(w).take();
}

std::string encode(const Authorization& a) {
  JsonWriter w;
  w.begin_object();
  w.key("status").string(to_string(a.status)).key("tid").string(a.tid).key("nsu").string(a.nsu);
  w.key("authorizationId").string(a.authorization_id).key("acquirer").string(a.acquirer);
  w.key("code").string(a.code).key("message").string(a.message).key("revision").number(a.revision);
  if (a.max_value > 0) {
    w.key("maxValue").raw_number(format_amount(a.max_value));
  }
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
  c.installments = doc->int_or("installments", 1);
  c.shopper_interaction = doc->string_or("shopperInteraction");
  if (const JsonValue* order = doc->find("order"); order != nullptr) {
    c.order = read_order(*order);
  }
  c.recipients = read_recipients(*doc);
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
  c.recipients = read_recipients(*doc);
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
