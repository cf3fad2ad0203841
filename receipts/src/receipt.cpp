#include "idempay/receipts/receipt.hpp"

#include <algorithm>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/money.hpp"
#include "idempay/domain/lifecycle.hpp"
#include "idempay/signing/jose.hpp"

namespace idempay::receipts {

Result<ReceiptClaims> claims_of(const domain::PaymentSnapshot& stored, const std::string& payment_id,
                                const std::string& owner) {
  if (!stored.record) {
    return make_error(ErrorCode::kNotFound, "no such payment");
  }
  const auto& r = *stored.record;
  ReceiptClaims c;
  c.payment_id = payment_id;
  c.merchant = owner;
  c.state = std::string(to_string(r.state));
  c.currency = r.currency;
  c.authorized = format_amount_fixed(r.amounts.authorized);
  c.settled = format_amount_fixed(r.amounts.settled);
  c.refunded = format_amount_fixed(r.amounts.refunded);
  c.audit_seq = stored.head.seq;
  c.audit_head = stored.head.hash;
  c.issued_at = domain::now_unix_ms() / 1000;
  return c;
}

std::string claims_json(const ReceiptClaims& c) {
  JsonWriter w(256);
  w.begin_object()
      .key("paymentId").string(c.payment_id)
      .key("merchant").string(c.merchant)
      .key("state").string(c.state)
      .key("currency").string(c.currency)
      .key("authorized").string(c.authorized)
      .key("settled").string(c.settled)
      .key("refunded").string(c.refunded)
      .key("auditSeq").number(static_cast<int64_t>(c.audit_seq))
      .key("auditHead").string(c.audit_head)
      .key("iat").number(c.issued_at)
      .end_object();
  return std::move(w).take();
}

std::string issue(const signing::SigningKey& key, const ReceiptClaims& claims) {
  return signing::sign_compact(key, kReceiptType, claims_json(claims));
}

Result<CheckedReceipt> check(std::string_view jws, const std::vector<signing::PublicKey>& anchor) {
  auto parsed = signing::parse_compact(jws);
  if (!parsed) {
    return tl::unexpected(parsed.error());
  }
  if (parsed->typ != kReceiptType) {
    return make_error(ErrorCode::kInvalidArgument, "not a receipt (typ \"" + parsed->typ + "\")");
  }
  auto key = std::find_if(anchor.begin(), anchor.end(), [&](const auto& k) { return k.kid == parsed->kid; });
  if (key == anchor.end()) {
    return make_error(ErrorCode::kInvalidArgument, "signed by key \"" + parsed->kid + "\", which the anchor does not list");
  }
  if (!signing::verify_compact(*parsed, *key)) {
    return make_error(ErrorCode::kInvalidArgument, "the signature does not verify under key " + key->kid);
  }
  auto json = JsonValue::parse(parsed->payload);
  if (!json || json->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kInvalidArgument, "the receipt's payload is not a JSON object");
  }
  CheckedReceipt out;
  out.kid = key->kid;
  auto& c = out.claims;
  c.payment_id = json->string_or("paymentId");
  c.merchant = json->string_or("merchant");
  c.state = json->string_or("state");
  c.currency = json->string_or("currency");
  c.authorized = json->string_or("authorized");
  c.settled = json->string_or("settled");
  c.refunded = json->string_or("refunded");
  c.audit_seq = static_cast<uint64_t>(json->int_or("auditSeq"));
  c.audit_head = json->string_or("auditHead");
  c.issued_at = json->int_or("iat");
  return out;
}

}  // namespace idempay::receipts
