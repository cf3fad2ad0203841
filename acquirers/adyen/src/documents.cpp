#include "documents.hpp"

#include <algorithm>
#include <array>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/timestamps.hpp"

namespace idempay::acquirer::adyen {

namespace {

// ISO 3166 alpha-3 (the gateway's) to alpha-2 (Adyen's), for the countries the gateway's
// stores sell from and to most; an address in another country is left out of the request.
constexpr std::array<std::pair<std::string_view, std::string_view>, 24> kCountries{{
    {"ARG", "AR"}, {"BOL", "BO"}, {"BRA", "BR"}, {"CAN", "CA"}, {"CHL", "CL"}, {"COL", "CO"},
    {"CRI", "CR"}, {"DEU", "DE"}, {"DOM", "DO"}, {"ECU", "EC"}, {"ESP", "ES"}, {"FRA", "FR"},
    {"GBR", "GB"}, {"GTM", "GT"}, {"ITA", "IT"}, {"MEX", "MX"}, {"NLD", "NL"}, {"PAN", "PA"},
    {"PER", "PE"}, {"PRT", "PT"}, {"PRY", "PY"}, {"SLV", "SV"}, {"URY", "UY"}, {"USA", "US"},
}};

std::string_view alpha2(std::string_view alpha3) {
  for (auto [three, two] : kCountries) {
    if (three == alpha3) {
      return two;
    }
  }
  return {};
}

void write_amount(JsonWriter& w, int64_t minor_units, const std::string& currency) {
  w.key("amount").begin_object().key("currency").string(currency).key("value").number(minor_units).end_object();
}

void write_address(JsonWriter& w, std::string_view name, const ppp::Address& a) {
  std::string_view country = alpha2(a.country);
  if (country.empty() || a.street.empty() || a.city.empty() || a.postal_code.empty()) {
    return;  // the document requires all of them
  }
  w.key(name).begin_object();
  w.key("city").string(a.city).key("country").string(country);
  w.key("houseNumberOrName").string(a.number.empty() ? "s/n" : a.number);
  w.key("postalCode").string(a.postal_code);
  if (!a.state.empty()) {
    w.key("stateOrProvince").string(a.state);
  }
  w.key("street").string(a.street);
  w.end_object();
}

void write_card(JsonWriter& w, const CardSecret& card, bool tokens) {
  std::string month = card.expiration_month.size() == 1 ? "0" + card.expiration_month : card.expiration_month;
  std::string year = card.expiration_year.size() == 2 ? "20" + card.expiration_year : card.expiration_year;
  w.key("paymentMethod").begin_object();
  w.key("type").string("scheme");
  w.key("number").string(tokens ? card.number_token : card.number);
  w.key("expiryMonth").string(month).key("expiryYear").string(year);
  const std::string& cvc = tokens ? card.csc_token : card.csc;
  if (!cvc.empty()) {
    w.key("cvc").string(cvc);
  }
  const std::string& holder = tokens ? card.holder_token : card.holder;
  if (!holder.empty()) {
    w.key("holderName").string(holder);
  }
  w.end_object();
}

void write_shopper(JsonWriter& w, const ppp::OrderData& order) {
  const ppp::Buyer& b = order.buyer;
  if (!b.email.empty()) {
    w.key("shopperEmail").string(b.email);
  }
  if (!order.ip_address.empty()) {
    w.key("shopperIP").string(order.ip_address);
  }
  if (!b.first_name.empty() || !b.last_name.empty()) {
    w.key("shopperName").begin_object().key("firstName").string(b.first_name).key("lastName").string(b.last_name).end_object();
  }
  if (!b.document.empty() && !b.is_corporate) {
    w.key("socialSecurityNumber").string(b.document);
  }
  if (!b.phone.empty()) {
    w.key("telephoneNumber").string(b.phone);
  }
  if (!order.device_fingerprint.empty() && order.device_fingerprint.size() <= 5000) {
    w.key("deviceFingerprint").string(order.device_fingerprint);
  }
  write_address(w, "billingAddress", order.billing_address);
  write_address(w, "deliveryAddress", order.shipping_address);
}

void write_line_items(JsonWriter& w, const ppp::OrderData& order, const std::string& currency) {
  if (order.items.empty()) {
    return;
  }
  std::vector<std::pair<const ppp::Item*, int64_t>> priced;
  for (const auto& item : order.items) {
    auto price = adyen_minor_units(item.price, currency);
    if (!price) {
      return;  // a price the currency cannot carry: no line items rather than wrong ones
    }
    priced.emplace_back(&item, *price);
  }
  w.key("lineItems").begin_array();
  for (const auto& [item, price] : priced) {
    w.begin_object();
    w.key("amountIncludingTax").number(price);
    w.key("description").string(item->name.substr(0, 10'000));
    w.key("id").string(item->id);
    w.key("quantity").number(item->quantity);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string payment_request(const AuthorizeCall& call, int64_t minor_units, const AdyenOptions& options,
                            bool card_tokens) {
  JsonWriter w;
  w.begin_object();
  write_amount(w, minor_units, call.currency);
  if (call.installments > 1) {
    w.key("installments").begin_object().key("value").number(call.installments).end_object();
  }
  w.key("merchantAccount").string(options.merchant_account);
  write_card(w, call.card, card_tokens);
  w.key("reference").string(call.key);
  w.key("returnUrl").string(options.return_url);
  w.key("shopperInteraction").string("Ecommerce");
  write_shopper(w, call.order);
  write_line_items(w, call.order, call.currency);
  w.end_object();
  return std::move(w).take();
}

Result<std::string> boleto_request(const AuthorizeCall& call, int64_t minor_units,
                                   const AdyenOptions& options, int64_t due_unix_ms) {
  const ppp::Buyer& b = call.order.buyer;
  const ppp::Address& a = call.order.billing_address;
  std::string document = b.is_corporate && !b.corporate_document.empty() ? b.corporate_document : b.document;
  std::string first = b.first_name;
  std::string last = b.last_name;
  if (b.is_corporate && !b.corporate_name.empty()) {
    first = b.corporate_name;  // a company's boleto is issued in its name
    last = b.trade_name.empty() ? b.corporate_name : b.trade_name;
  }
  bool digits = !document.empty() && document.find_first_not_of("0123456789") == std::string::npos;
  if (first.empty() || last.empty() || !digits || (document.size() != 11 && document.size() != 14)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a boleto needs the buyer's first and last name and CPF (11 digits) or CNPJ (14)");
  }
  if (alpha2(a.country) != "BR" || a.street.empty() || a.city.empty() || a.postal_code.empty()
      || a.state.empty()) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "a boleto needs the buyer's billing address in Brazil: street, city, postal code and state");
  }
  JsonWriter w;
  w.begin_object();
  write_amount(w, minor_units, call.currency);
  write_address(w, "billingAddress", a);
  w.key("deliverAt").string(format_rfc3339(due_unix_ms));
  w.key("merchantAccount").string(options.merchant_account);
  w.key("paymentMethod").begin_object().key("type").string("boletobancario").end_object();
  w.key("reference").string(call.key);
  w.key("returnUrl").string(options.return_url);
  if (!b.email.empty()) {
    w.key("shopperEmail").string(b.email);
  }
  w.key("shopperName").begin_object();
  w.key("firstName").string(first.substr(0, 80)).key("lastName").string(last.substr(0, 80));
  w.end_object();
  w.key("socialSecurityNumber").string(document);
  w.end_object();
  return std::move(w).take();
}

Result<PaymentResult> read_payment_response(std::string_view body) {
  auto parsed = JsonValue::parse(body);
  if (!parsed || parsed->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kUnavailable, "Adyen's answer to /payments is not a JSON object");
  }
  PaymentResult r;
  r.result_code = parsed->string_or("resultCode");
  r.psp_reference = parsed->string_or("pspReference");
  r.refusal_reason = parsed->string_or("refusalReason");
  r.refusal_reason_code = parsed->string_or("refusalReasonCode");
  if (const JsonValue* extra = parsed->find("additionalData"); extra != nullptr) {
    r.auth_code = extra->string_or("authCode");
  }
  if (const JsonValue* action = parsed->find("action"); action != nullptr) {
    r.action_type = action->string_or("type");
    r.redirect_url = action->string_or("url");
    r.redirect_method = action->string_or("method");
    r.voucher_url = action->string_or("downloadUrl");
    r.voucher_reference = action->string_or("reference");
    r.voucher_expires_at = action->string_or("expiresAt");
  }
  if (r.result_code.empty()) {
    return make_error(ErrorCode::kUnavailable, "Adyen's answer to /payments has no resultCode");
  }
  return r;
}

std::string modification_request(const std::string& merchant_account, const std::string& reference, int64_t minor_units,
                                  const std::string& currency, bool with_amount) {
  JsonWriter w;
  w.begin_object();
  if (with_amount) {
    write_amount(w, minor_units, currency);
  }
  w.key("merchantAccount").string(merchant_account);
  w.key("reference").string(reference);
  w.end_object();
  return std::move(w).take();
}

std::string reference_cancel_request(const std::string& merchant_account, const std::string& payment_reference) {
  JsonWriter w;
  w.begin_object();
  w.key("merchantAccount").string(merchant_account);
  w.key("paymentReference").string(payment_reference);
  w.key("reference").string(payment_reference);
  w.end_object();
  return std::move(w).take();
}

Result<std::string> read_modification_response(std::string_view body) {
  auto parsed = JsonValue::parse(body);
  if (!parsed || parsed->type() != JsonValue::Type::kObject || parsed->string_or("status") != "received" ||
      parsed->string_or("pspReference").empty()) {
    return make_error(ErrorCode::kUnavailable, "Adyen's answer to a modification is not {status: received, pspReference}");
  }
  return parsed->string_or("pspReference");
}

ServiceError read_service_error(unsigned status, std::string_view body) {
  ServiceError e;
  auto parsed = JsonValue::parse(body);
  if (parsed && parsed->type() == JsonValue::Type::kObject) {
    e.error_code = parsed->string_or("errorCode");
    e.message = parsed->string_or("message");
  }
  if (e.message.empty()) {
    e.message = "HTTP " + std::to_string(status);
  }
  std::string shown = e.message.substr(0, 200);
  std::replace_if(shown.begin(), shown.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }, ' ');
  e.message = std::move(shown);
  return e;
}

}  // namespace idempay::acquirer::adyen
