#include "idempay/domain/records.hpp"

#include <chrono>

#include "idempay/protocol/json_read.hpp"
#include "idempay/protocol/json_writer.hpp"

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

std::string encode(const PaymentRecord& r) {
  JsonWriter w;
  w.begin_object();
  w.key("state").string(to_string(r.state));
  w.key("authorized").number(r.amounts.authorized);
  w.key("settled").number(r.amounts.settled);
  w.key("refunded").number(r.amounts.refunded);
  w.key("currency").string(r.currency).key("paymentMethod").string(r.payment_method);
  w.key("orderId").string(r.order_id).key("reference").string(r.reference);
  w.key("transactionId").string(r.transaction_id).key("merchant").string(r.merchant);
  w.key("owner").string(r.owner).key("acquirerRoute").string(r.acquirer_route);
  w.key("fingerprint").string(r.fingerprint).key("callbackUrl").string(r.callback_url);
  w.key("card").begin_object();
  w.key("bin").string(r.card.bin).key("last4").string(r.card.last4);
  w.key("length").number(r.card.number_length);
  w.key("expMonth").string(r.card.expiration_month).key("expYear").string(r.card.expiration_year);
  w.end_object();
  w.key("tid").string(r.tid).key("nsu").string(r.nsu);
  w.key("authorizationId").string(r.authorization_id).key("acquirer").string(r.acquirer);
  w.key("response").string(r.response);
  w.key("acquirerRevision").number(r.acquirer_revision).key("callbacks").number(r.callbacks);
  w.key("document");
  acquirer::write_document(w, r.document);
  w.key("posPhase").string(r.pos_phase).key("terminalSerial").string(r.terminal_serial);
  w.key("createdAt").number(r.created_at).key("updatedAt").number(r.updated_at);
  w.end_object();
  return std::move(w).take();
}

Result<PaymentRecord> decode_payment(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  auto state = payment_state_from_string(doc->string_or("state"));
  if (!state) {
    return make_error(ErrorCode::kInternal, "stored payment has an unknown state");
  }
  PaymentRecord r;
  r.state = *state;
  r.amounts = Amounts{doc->int_or("authorized"), doc->int_or("settled"), doc->int_or("refunded")};
  r.currency = doc->string_or("currency");
  r.payment_method = doc->string_or("paymentMethod");
  r.order_id = doc->string_or("orderId");
  r.reference = doc->string_or("reference");
  r.transaction_id = doc->string_or("transactionId");
  r.merchant = doc->string_or("merchant");
  r.owner = doc->string_or("owner");
  r.acquirer_route = doc->string_or("acquirerRoute");
  r.fingerprint = doc->string_or("fingerprint");
  r.callback_url = doc->string_or("callbackUrl");
  if (const JsonValue* card = doc->find("card"); card != nullptr) {
    r.card.bin = card->string_or("bin");
    r.card.last4 = card->string_or("last4");
    r.card.number_length = static_cast<int>(card->int_or("length"));
    r.card.expiration_month = card->string_or("expMonth");
    r.card.expiration_year = card->string_or("expYear");
  }
  r.tid = doc->string_or("tid");
  r.nsu = doc->string_or("nsu");
  r.authorization_id = doc->string_or("authorizationId");
  r.acquirer = doc->string_or("acquirer");
  r.response = doc->string_or("response");
  r.acquirer_revision = doc->int_or("acquirerRevision");
  r.callbacks = doc->int_or("callbacks");
  if (const JsonValue* d = doc->find("document"); d != nullptr) {
    r.document = acquirer::read_document(*d);
  }
  r.pos_phase = doc->string_or("posPhase");
  r.terminal_serial = doc->string_or("terminalSerial");
  r.created_at = doc->int_or("createdAt");
  r.updated_at = doc->int_or("updatedAt");
  return r;
}

std::string operation_key(const std::string& payment_id, const std::string& request_id) {
  return payment_id + "/" + request_id;
}

std::string_view request_id_of(std::string_view operation_key) {
  auto slash = operation_key.find('/');
  return slash == std::string_view::npos ? operation_key : operation_key.substr(slash + 1);
}

std::string encode(const OperationRecord& r) {
  JsonWriter w;
  w.begin_object();
  w.key("kind").string(ppp::to_string(r.kind));
  w.key("phase").string(r.phase == OperationPhase::kDone ? "done" : "processing");
  w.key("paymentId").string(r.payment_id).key("fingerprint").string(r.fingerprint);
  if (!r.acquirer_key.empty()) {
    w.key("acquirerKey").string(r.acquirer_key);
  }
  w.key("amount").number(r.amount).key("httpStatus").number(r.http_status);
  w.key("response").string(r.response).key("updatedAt").number(r.updated_at);
  w.end_object();
  return std::move(w).take();
}

Result<OperationRecord> decode_operation(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  OperationRecord r;
  std::string kind = doc->string_or("kind");
  bool known = false;
  for (auto k : {ppp::OperationKind::kCancel, ppp::OperationKind::kSettle, ppp::OperationKind::kRefund}) {
    if (ppp::to_string(k) == kind) {
      r.kind = k;
      known = true;
    }
  }
  if (!known) {
    return make_error(ErrorCode::kInternal, "stored operation has an unknown kind");
  }
  r.phase = doc->string_or("phase") == "done" ? OperationPhase::kDone : OperationPhase::kProcessing;
  r.payment_id = doc->string_or("paymentId");
  r.fingerprint = doc->string_or("fingerprint");
  r.acquirer_key = doc->string_or("acquirerKey");
  r.amount = doc->int_or("amount");
  r.http_status = static_cast<unsigned>(doc->int_or("httpStatus"));
  r.response = doc->string_or("response");
  r.updated_at = doc->int_or("updatedAt");
  return r;
}

}  // namespace idempay::domain
