#include "order_parse.hpp"

#include <arpa/inet.h>

namespace idempay::ppp::parse {

namespace {

// A JSON number (or numeric string) kept as its text: an interest rate has as many decimals
// as the gateway sends, and the acquirer gets exactly those.
Status read_decimal_text(od::value v, const FieldPath& field, std::string& out) {
  std::string_view text;
  if (auto s = read_number_text(v, field, text); !s) {
    return s;
  }
  out.clear();
  if (text.empty()) {
    return {};  // null
  }
  bool digits = !text.empty() && text.size() <= 16;
  size_t dots = 0;
  for (char c : text) {
    dots += c == '.';
    digits = digits && (std::isdigit(static_cast<unsigned char>(c)) || c == '.');
  }
  if (!digits || dots > 1 || text.front() == '.' || text.back() == '.') {
    return tl::unexpected(field_error(field, "must be a non-negative decimal number"));
  }
  out.assign(text);
  return {};
}

Status read_address(od::value v, const FieldPath& field, Address& a) {
  auto s = read_object(v, field, [&](std::string_view key, od::value value) -> Status {
    FieldPath at(field, key);
    if (key == "country") return read_text(value, at, a.country, 3);
    if (key == "street") return read_text(value, at, a.street);
    if (key == "number") return read_text(value, at, a.number, 32);
    if (key == "complement") return read_text(value, at, a.complement);
    if (key == "neighborhood") return read_text(value, at, a.neighborhood);
    if (key == "postalCode") return read_text(value, at, a.postal_code, 16);
    if (key == "city") return read_text(value, at, a.city);
    if (key == "state") return read_text(value, at, a.state, 64);
    return {};
  });
  if (s && !a.country.empty() && (a.country.size() != 3 || !std::isupper(static_cast<unsigned char>(a.country[0])))) {
    return tl::unexpected(field_error(FieldPath(field, "country"), "must be an ISO 3166 alpha-3 code such as BRA"));
  }
  return s;
}

Status read_buyer(od::value v, Buyer& b) {
  const FieldPath buyer("miniCart.buyer");
  return read_object(v, buyer, [&](std::string_view key, od::value value) -> Status {
    FieldPath at(buyer, key);
    if (key == "id") return read_text(value, at, b.id, 128);
    if (key == "firstName") return read_text(value, at, b.first_name);
    if (key == "lastName") return read_text(value, at, b.last_name);
    if (key == "document") return read_text(value, at, b.document, 64);
    if (key == "documentType") return read_text(value, at, b.document_type, 32);
    if (key == "email") return read_text(value, at, b.email, 254);
    if (key == "phone") return read_text(value, at, b.phone, 32);
    if (key == "isCorporate") return read_bool(value, at, b.is_corporate);
    if (key == "corporateName") return read_text(value, at, b.corporate_name);
    if (key == "tradeName") return read_text(value, at, b.trade_name);
    if (key == "corporateDocument") return read_text(value, at, b.corporate_document, 64);
    return {};
  });
}

Status read_item(od::value v, const FieldPath& items, size_t index, Item& item) {
  FieldPath name(items, index);
  bool has_quantity = false;
  auto s = read_object(v, name, [&](std::string_view key, od::value value) -> Status {
    FieldPath at(name, key);
    if (key == "id") return read_text(value, at, item.id, 128);
    if (key == "name") return read_text(value, at, item.name, 512);
    if (key == "price") return read_amount(value, at, item.price);
    if (key == "discount") return read_amount(value, at, item.discount);
    if (key == "deliveryType") return read_text(value, at, item.delivery_type, 64);
    if (key == "categoryId") return read_text(value, at, item.category_id, 128);
    if (key == "sellerId") return read_text(value, at, item.seller_id, 128);
    if (key == "quantity") {
      has_quantity = true;
      return read_integer(value, at, item.quantity);
    }
    return {};
  });
  if (s && has_quantity && (item.quantity < 1 || item.quantity > 1'000'000)) {
    return tl::unexpected(field_error(FieldPath(name, "quantity"), "must be between 1 and 1000000"));
  }
  return s;
}

Status read_mini_cart(od::value v, OrderData& order) {
  return read_object(v, "miniCart", [&](std::string_view key, od::value value) -> Status {
    if (key == "shippingValue") return read_amount(value, "miniCart.shippingValue", order.shipping_value);
    if (key == "taxValue") return read_amount(value, "miniCart.taxValue", order.tax_value);
    if (key == "buyer") return read_buyer(value, order.buyer);
    if (key == "shippingAddress") return read_address(value, "miniCart.shippingAddress", order.shipping_address);
    if (key == "billingAddress") return read_address(value, "miniCart.billingAddress", order.billing_address);
    if (key == "items") {
      const FieldPath items("miniCart.items");
      return read_array(value, items, 500, [&](size_t index, od::value item) {
        order.items.emplace_back();
        return read_item(item, items, index, order.items.back());
      });
    }
    return {};
  });
}

Status read_merchant_settings(od::value v, OrderData& order) {
  const FieldPath settings("merchantSettings");
  return read_array(v, settings, 50, [&](size_t index, od::value item) -> Status {
    FieldPath at(settings, index);
    std::pair<std::string, std::string> setting;
    auto s = read_object(item, at, [&](std::string_view key, od::value value) -> Status {
      if (key == "name") return read_text(value, FieldPath(at, key), setting.first, 64);
      if (key == "value") return read_text(value, FieldPath(at, key), setting.second, 1024);
      return {};
    });
    if (s && setting.first.empty()) {
      return tl::unexpected(field_error(FieldPath(at, "name"), "is required"));
    }
    order.merchant_settings.push_back(std::move(setting));
    return s;
  });
}

bool is_ip_address(const std::string& text) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, text.c_str(), buffer) == 1 || inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

}  // namespace

std::optional<Status> read_order_member(std::string_view key, od::value v, OrderData& order) {
  if (key == "installmentsInterestRate") return read_decimal_text(v, key, order.installments_interest_rate);
  if (key == "installmentsValue") return read_amount(v, key, order.installments_value);
  if (key == "deviceFingerprint") return read_text(v, key, order.device_fingerprint, 512);
  if (key == "totalCartValue") return read_amount(v, key, order.total_cart_value);
  if (key == "miniCart") return read_mini_cart(v, order);
  if (key == "merchantSettings") return read_merchant_settings(v, order);
  if (key == "ipAddress") {
    auto s = read_text(v, key, order.ip_address, 64);
    if (s && !order.ip_address.empty() && !is_ip_address(order.ip_address)) {
      return tl::unexpected(field_error(key, "must be an IPv4 or IPv6 address"));
    }
    return s;
  }
  return std::nullopt;
}

Status read_recipients(od::value v, std::vector<Recipient>& out) {
  const FieldPath recipients("recipients");
  return read_array(v, recipients, 100, [&](size_t index, od::value item) -> Status {
    FieldPath name(recipients, index);
    Recipient& r = out.emplace_back();
    return read_object(item, name, [&](std::string_view key, od::value value) -> Status {
      FieldPath at(name, key);
      if (key == "id") return read_text(value, at, r.id, 128);
      if (key == "name") return read_text(value, at, r.name);
      if (key == "documentType") return read_text(value, at, r.document_type, 32);
      if (key == "document") return read_text(value, at, r.document, 64);
      if (key == "role") return read_text(value, at, r.role, 32);
      if (key == "amount") return read_amount(value, at, r.amount);
      if (key == "chargeProcessingFee") return read_bool(value, at, r.charge_processing_fee);
      if (key == "chargebackLiable") return read_bool(value, at, r.chargeback_liable);
      // Spelled both ways in the gateway's documents.
      if (key == "commissionAmount" || key == "comissionAmount") return read_amount(value, at, r.commission_amount);
      return {};
    });
  });
}

}  // namespace idempay::ppp::parse

namespace idempay::ppp {

Status check_split(const std::vector<Recipient>& recipients, Cents total) {
  using parse::field_error;
  using parse::FieldPath;
  const FieldPath path("recipients");
  Cents sum = 0;
  for (size_t i = 0; i < recipients.size(); ++i) {
    const Recipient& r = recipients[i];
    FieldPath at(path, i);
    if (r.id.empty()) {
      return tl::unexpected(field_error(FieldPath(at, "id"), "is required"));
    }
    if (r.role != "seller" && r.role != "marketplace") {
      return tl::unexpected(field_error(FieldPath(at, "role"), "must be \"seller\" or \"marketplace\""));
    }
    if (r.commission_amount > r.amount) {
      return tl::unexpected(field_error(FieldPath(at, "commissionAmount"), "exceeds the recipient's amount"));
    }
    sum += r.amount;
  }
  if (!recipients.empty() && sum != total) {
    return tl::unexpected(field_error("recipients", "amounts add up to " + format_amount(sum) + ", not to the value " +
                                                        format_amount(total)));
  }
  return {};
}

}  // namespace idempay::ppp
