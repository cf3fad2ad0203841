#include "idempay/answers/report.hpp"

#include "idempay/base/json_writer.hpp"
#include "idempay/base/money.hpp"

namespace idempay::answers {

std::string payment_report_json(const domain::PaymentReport& r) {
  JsonWriter w;
  w.begin_object().key("paymentId").string(r.payment_id).key("merchant").string(r.owner).key("state").string(r.state);
  if (!r.trace_id.empty()) {
    w.key("traceId").string(r.trace_id);
  }
  w.key("paymentMethod").string(r.payment_method).key("currency").string(r.currency);
  w.key("authorized").raw_number(format_amount(r.authorized));
  w.key("settled").raw_number(format_amount(r.settled));
  w.key("refunded").raw_number(format_amount(r.refunded));
  w.key("tid").string(r.tid).key("nsu").string(r.nsu).key("authorizationId").string(r.authorization_id);
  w.key("callbackUrl").string(r.callback_url).key("posPhase").string(r.pos_phase);
  w.key("card").begin_object().key("bin").string(r.card_bin).key("last4").string(r.card_last4).end_object();
  w.key("answer").string(r.response);
  w.key("operations").begin_array();
  for (const auto& op : r.operations) {
    w.begin_object().key("requestId").string(op.request_id).key("kind").string(op.kind).key("phase").string(op.phase);
    w.key("amount").raw_number(format_amount(op.amount)).key("outcome").string(op.outcome);
    w.key("answer").string(op.response).end_object();
  }
  w.end_array().key("deliveries").begin_array();
  for (const auto& d : r.deliveries) {
    w.begin_object().key("deliveryId").string(d.id).key("url").string(d.url).key("dead").boolean(d.dead);
    w.key("attempts").number(d.attempts).key("lastStatus").number(d.last_status).key("lastError").string(d.last_error);
    w.key("deadReason").string(d.dead_reason).key("createdAt").number(d.created_at);
    w.key("nextAttemptAt").number(d.next_attempt_at).end_object();
  }
  w.end_array().key("audit").begin_array();
  for (const auto& e : r.audit) {
    w.begin_object().key("seq").number(static_cast<int64_t>(e.seq)).key("time").number(e.time).key("kind").string(e.kind);
    w.key("ref").string(e.ref).key("before").string(e.before).key("after").string(e.after);
    w.key("detail").string(e.detail).key("actor").string(e.merchant).key("hash").string(e.hash);
    w.key("signer").string(e.signer).end_object();
  }
  w.end_array().key("countedArrivals").begin_array();
  for (const auto& c : r.counted) {
    w.begin_object().key("kind").string(c.kind).key("actor").string(c.merchant).key("fingerprint").string(c.fingerprint);
    w.key("count").number(static_cast<int64_t>(c.count)).key("first").number(c.first).key("last").number(c.last);
    w.key("sealedIn").number(static_cast<int64_t>(c.sealed_in)).end_object();
  }
  w.end_array().end_object();
  return std::move(w).take();
}

std::string receipt_json(std::string_view jws, std::string_view kid, std::string_view claims_json) {
  std::string out = "{\"receipt\":";
  append_json_string(out, jws);
  out += ",\"kid\":";
  append_json_string(out, kid);
  out += ",\"claims\":";
  out += claims_json;  // written by the receipt's own encoder: a JSON object
  out += "}";
  return out;
}

}  // namespace idempay::answers
