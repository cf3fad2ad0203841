// Streaming validation of PPP request bodies with simdjson On-Demand: one pass, no DOM.
#include "idempay/base/crypto.hpp"
#include "idempay/protocol/ppp.hpp"
#include "order_parse.hpp"
#include "parse_fields.hpp"

namespace idempay::ppp {

using namespace parse;  // the typed readers of parse_fields.hpp

namespace {
Status read_card(od::value v, CardSecret& card, std::string& proxy_bin, int64_t& proxy_length) {
  return read_object(v, "card", [&](std::string_view key, od::value value) -> Status {
    if (key == "number") return read_string(value, "card.number", card.number, true);
    if (key == "holder") return read_string(value, "card.holder", card.holder, true);
    if (key == "csc") return read_string(value, "card.csc", card.csc, true);
    if (key == "numberToken") return read_string(value, "card.numberToken", card.number_token, true);
    if (key == "holderToken") return read_string(value, "card.holderToken", card.holder_token, true);
    if (key == "cscToken") return read_string(value, "card.cscToken", card.csc_token, true);
    if (key == "bin") return read_string(value, "card.bin", proxy_bin, true);
    if (key == "numberLength" || key == "numberLenght") {
      return read_integer(value, "card.numberLength", proxy_length);
    }
    if (key == "expiration") {
      return read_object(value, "card.expiration", [&](std::string_view k, od::value e) -> Status {
        if (k == "month") return read_string(e, "card.expiration.month", card.expiration_month, true);
        if (k == "year") return read_string(e, "card.expiration.year", card.expiration_year, true);
        return {};
      });
    }
    return {};
  });
}

// Runs `parse_root` over the body's root object and rejects trailing content.
template <class ParseRoot>
Status parse_document(std::string& body, ParseRoot&& parse_root) {
  if (body.size() > kMaxBodyBytes) {
    return make_error(ErrorCode::kInvalidArgument, "body is too large");
  }
  body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  thread_local od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(simdjson::padded_string_view(body.data(), body.size(), body.capacity()))
                   .get(doc)) {
    return tl::unexpected(json_error(e));
  }
  od::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) {
    return make_error(ErrorCode::kInvalidArgument, "body must be a JSON object");
  }
  if (auto s = for_each_field(root, parse_root); !s) {
    return s;
  }
  const char* location = nullptr;
  if (doc.current_location().get(location) != simdjson::OUT_OF_BOUNDS) {
    return make_error(ErrorCode::kInvalidArgument, "malformed JSON body: trailing content");
  }
  return {};
}

Status require(bool present, std::string_view field) {
  if (!present) {
    return tl::unexpected(field_error(field, "is required"));
  }
  return {};
}

Status check_create(const CreatePaymentRequest& r, uint32_t seen) {
  static constexpr std::string_view kRequired[] = {
      "paymentId", "transactionId", "reference", "orderId", "paymentMethod", "value", "currency",
      "callbackUrl"};
  for (size_t i = 0; i < std::size(kRequired); ++i) {
    if (auto s = require((seen & (1u << i)) != 0, kRequired[i]); !s) {
      return s;
    }
  }
  if (!is_valid_identifier(r.payment_id)) {
    return tl::unexpected(field_error("paymentId", "must be 1-128 characters of [A-Za-z0-9._:-]"));
  }
  if (r.currency.size() != 3 || !std::isupper(static_cast<unsigned char>(r.currency[0])) ||
      !std::isupper(static_cast<unsigned char>(r.currency[1])) ||
      !std::isupper(static_cast<unsigned char>(r.currency[2]))) {
    return tl::unexpected(field_error("currency", "must be an ISO 4217 code such as BRL"));
  }
  if (r.payment_method.empty() || r.payment_method.size() > 64) {
    return tl::unexpected(field_error("paymentMethod", "must be a payment method name"));
  }
  if (r.value == 0 && !r.verification_only) {
    return tl::unexpected(field_error("value", "must be positive"));
  }
  if (r.installments < 0 || r.installments > 99) {
    return tl::unexpected(field_error("installments", "must be between 0 and 99"));
  }
  if (r.callback_url.rfind("http://", 0) != 0 && r.callback_url.rfind("https://", 0) != 0) {
    return tl::unexpected(field_error("callbackUrl", "must be an http(s) URL"));
  }
  // Only the Secure Proxy can put card data where a token stands.
  bool tokenized = !r.card.number_token.empty() || !r.card.holder_token.empty() || !r.card.csc_token.empty();
  if (tokenized && r.secure_proxy_url.empty()) {
    return tl::unexpected(field_error("card", "tokens need a secureProxyUrl to be resolved"));
  }
  if (tokenized && !r.card.number.empty()) {
    return tl::unexpected(field_error("card", "carries both a number and a numberToken"));
  }
  return {};
}

}  // namespace

std::string_view to_string(OperationKind kind) {
  switch (kind) {
    case OperationKind::kCancel: return "cancellation";
    case OperationKind::kSettle: return "settlement";
    case OperationKind::kRefund: return "refund";
  }
  return "operation";
}

bool is_valid_identifier(std::string_view id) {
  // "." and ".." cannot be a URL's path segment (every client resolves them away), and an id
  // goes into the paths of the routes that name its payment.
  if (id.empty() || id.size() > 128 || id == "." || id == "..") {
    return false;
  }
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != ':' && c != '-') {
      return false;
    }
  }
  return true;
}

Result<CreatePaymentRequest> parse_create_payment(std::string& body) {
  CreatePaymentRequest r;
  std::string proxy_bin;
  int64_t proxy_length = 0;
  uint32_t seen = 0;
  auto on_field = [&](std::string_view key, od::value v) -> Status {
    auto str = [&](uint32_t bit, std::string& out, bool nullable) {
      seen |= bit;
      return read_string(v, key, out, nullable);
    };
    if (key == "paymentId") return str(1u << 0, r.payment_id, false);
    if (key == "transactionId") return str(1u << 1, r.transaction_id, false);
    if (key == "reference") return str(1u << 2, r.reference, false);
    if (key == "orderId") return str(1u << 3, r.order_id, false);
    if (key == "paymentMethod") return str(1u << 4, r.payment_method, false);
    if (key == "value") {
      seen |= 1u << 5;
      return read_amount(v, key, r.value);
    }
    if (key == "currency") return str(1u << 6, r.currency, false);
    if (key == "callbackUrl") return str(1u << 7, r.callback_url, false);
    if (key == "merchantName") return str(0, r.merchant_name, true);
    if (key == "shopperInteraction") return str(0, r.shopper_interaction, true);
    if (key == "returnUrl") return str(0, r.return_url, true);
    if (key == "inboundRequestUrl" || key == "inboundRequestsUrl") {
      return str(0, r.inbound_request_url, true);
    }
    if (key == "secureProxyUrl") return str(0, r.secure_proxy_url, true);
    if (key == "installments") return read_integer(v, key, r.installments);
    if (key == "verificationOnly") return read_bool(v, key, r.verification_only);
    if (key == "sandBoxMode" || key == "sandboxMode") return read_bool(v, key, r.sandbox);
    if (key == "card") return read_card(v, r.card, proxy_bin, proxy_length);
    if (key == "recipients") return read_recipients(v, r.recipients);
    if (auto order = read_order_member(key, v, r.order)) return *order;
    return {};
  };
  if (auto s = parse_document(body, on_field); !s) {
    return tl::unexpected(s.error());
  }
  if (auto s = check_create(r, seen); !s) {
    return tl::unexpected(s.error());
  }
  r.card_summary = summarize_card(r.card, proxy_bin, static_cast<int>(proxy_length));
  return r;
}

Result<OperationRequest> parse_operation(OperationKind kind, std::string_view path_payment_id,
                                         std::string& body) {
  OperationRequest r;
  r.kind = kind;
  bool has_value = false;
  auto on_field = [&](std::string_view key, od::value v) -> Status {
    if (key == "paymentId") return read_string(v, key, r.payment_id, false);
    if (key == "requestId") return read_string(v, key, r.request_id, false);
    if (key == "transactionId") return read_string(v, key, r.transaction_id, true);
    if (key == "authorizationId") return read_string(v, key, r.authorization_id, true);
    if (key == "tid") return read_string(v, key, r.tid, true);
    if (key == "settleId") return read_string(v, key, r.settle_id, true);
    if (key == "value") {
      has_value = true;
      // A cancellation's `value` is documented in cents and is informational only:
      // a cancellation always voids the whole authorization.
      Cents ignored = 0;
      return read_amount(v, key, kind == OperationKind::kCancel ? ignored : r.value);
    }
    if (key == "recipients" && kind != OperationKind::kCancel) return read_recipients(v, r.recipients);
    return {};
  };
  if (auto s = parse_document(body, on_field); !s) {
    return tl::unexpected(s.error());
  }
  if (!is_valid_identifier(r.request_id)) {
    return tl::unexpected(field_error("requestId", "is required: 1-128 characters of [A-Za-z0-9._:-]"));
  }
  if (!r.payment_id.empty() && r.payment_id != path_payment_id) {
    return tl::unexpected(field_error("paymentId", "does not match the payment in the URL"));
  }
  r.payment_id = std::string(path_payment_id);
  if (kind != OperationKind::kCancel && !has_value) {
    return tl::unexpected(field_error("value", "is required"));
  }
  return r;
}

namespace {
constexpr std::string_view kFingerprintV2 = "v2:";

// Version 1 joined the fields with '|' unescaped: orderId "A|B" with reference "C" read the
// same as orderId "A" with reference "B|C". Kept only to recognise payments stored with it.
std::string payment_fingerprint_v1(std::string_view key, const CreatePaymentRequest& r) {
  std::string canonical = "payment/v1|" + std::to_string(r.value) + "|" + r.currency + "|" +
                          r.payment_method + "|" + r.order_id + "|" + r.reference + "|" +
                          r.card_summary.bin + "|" + r.card_summary.last4;
  return crypto::to_hex(crypto::hmac_sha256(key, canonical));
}

// Each field as its length, ':' and its bytes: no choice of field contents reads as another.
void append_field(std::string& out, std::string_view field) {
  out.append(std::to_string(field.size())).push_back(':');
  out.append(field);
}
}  // namespace

std::string payment_fingerprint(std::string_view key, const CreatePaymentRequest& r) {
  std::string canonical = "payment/v2";
  const std::string value = std::to_string(r.value);
  for (std::string_view field : {std::string_view(value), std::string_view(r.currency),
                                 std::string_view(r.payment_method), std::string_view(r.order_id),
                                 std::string_view(r.reference), std::string_view(r.card_summary.bin),
                                 std::string_view(r.card_summary.last4)}) {
    append_field(canonical, field);
  }
  return std::string(kFingerprintV2) + crypto::to_hex(crypto::hmac_sha256(key, canonical));
}

bool same_payment(std::string_view key, std::string_view stored, std::string_view current,
                  const CreatePaymentRequest& request) {
  if (stored.substr(0, kFingerprintV2.size()) == kFingerprintV2) {
    return stored == current;
  }
  return stored == payment_fingerprint_v1(key, request);
}

std::string operation_fingerprint(std::string_view key, const OperationRequest& r) {
  std::string canonical = "operation/v1|" + std::string(to_string(r.kind)) + "|" + r.payment_id +
                          "|" + std::to_string(r.value);
  // A split is part of what the operation is; without one the fingerprint is the one stored
  // before splits existed.
  for (const Recipient& recipient : r.recipients) {
    canonical += "|recipient";
    for (std::string_view field : {std::string_view(recipient.id), std::string_view(recipient.role)}) {
      append_field(canonical, field);
    }
    canonical += "|" + std::to_string(recipient.amount) + "|" + std::to_string(recipient.commission_amount) +
                 (recipient.charge_processing_fee ? "F" : "f") + (recipient.chargeback_liable ? "C" : "c");
  }
  return crypto::to_hex(crypto::hmac_sha256(key, canonical));
}

}  // namespace idempay::ppp
