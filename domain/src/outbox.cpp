#include "idempay/domain/outbox.hpp"

#include <algorithm>

#include "idempay/protocol/json_read.hpp"
#include "idempay/protocol/json_writer.hpp"

namespace idempay::domain {

std::string encode(const OutboxEntry& e) {
  JsonWriter w;
  w.begin_object();
  w.key("id").string(e.id).key("paymentId").string(e.payment_id).key("merchant").string(e.merchant);
  w.key("url").string(e.url);
  w.key("body").string(e.body).key("attempts").number(e.attempts);
  w.key("createdAt").number(e.created_at).key("nextAttemptAt").number(e.next_attempt_at);
  w.key("lastStatus").number(e.last_status).key("lastError").string(e.last_error);
  w.key("deadReason").string(e.dead_reason);
  w.end_object();
  return std::move(w).take();
}

Result<OutboxEntry> decode_outbox(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  OutboxEntry e;
  e.id = doc->string_or("id");
  e.payment_id = doc->string_or("paymentId");
  e.merchant = doc->string_or("merchant");
  e.url = doc->string_or("url");
  e.body = doc->string_or("body");
  e.attempts = static_cast<int>(doc->int_or("attempts"));
  e.created_at = doc->int_or("createdAt");
  e.next_attempt_at = doc->int_or("nextAttemptAt");
  e.last_status = static_cast<unsigned>(doc->int_or("lastStatus"));
  e.last_error = doc->string_or("lastError");
  e.dead_reason = doc->string_or("deadReason");
  if (e.id.empty() || e.url.empty()) {
    return make_error(ErrorCode::kInternal, "outbox entry without id or url");
  }
  return e;
}

FailureKind classify(const CallbackResult& r) {
  if (r.status == 0) {
    bool refused = r.error.code == ErrorCode::kForbidden || r.error.code == ErrorCode::kInvalidArgument;
    return refused ? FailureKind::kPermanent : FailureKind::kRetry;
  }
  if (r.status == 410 || (r.status >= 300 && r.status < 400)) {
    return FailureKind::kPermanent;
  }
  if (r.status == 408 || r.status == 429 || r.status >= 500) {
    return FailureKind::kRetry;
  }
  return FailureKind::kRetrySlow;
}

std::chrono::milliseconds retry_delay(const CallbackOptions& options, int attempt, FailureKind kind,
                                      int64_t retry_after_seconds, std::mt19937_64& random) {
  using std::chrono::milliseconds;
  int64_t base = std::max<int64_t>(1, options.retry_base.count());
  int64_t cap = std::max<int64_t>(base, options.retry_cap.count());
  int shift = std::clamp(attempt - 1, 0, 40);
  int64_t ceiling = base > (cap >> shift) ? cap : std::min(cap, base << shift);
  int64_t delay = std::uniform_int_distribution<int64_t>(0, ceiling)(random);
  if (kind == FailureKind::kRetrySlow) {
    delay = std::max(delay, std::min(cap, 60 * base));
  }
  if (retry_after_seconds >= 0) {
    delay = std::max(delay, std::min(cap, retry_after_seconds * 1000));
  }
  return milliseconds(std::min(delay, cap));
}

}  // namespace idempay::domain
