#include "idempay/domain/outbox.hpp"

#include <algorithm>

#include "fields.hpp"

namespace idempay::domain {

namespace {

const auto kOutboxFields = std::make_tuple(
    IDEMPAY_FIELD("id", id), IDEMPAY_FIELD("paymentId", payment_id), IDEMPAY_FIELD("merchant", merchant),
    IDEMPAY_FIELD("url", url), IDEMPAY_FIELD("body", body), IDEMPAY_FIELD("attempts", attempts),
    IDEMPAY_FIELD("createdAt", created_at), IDEMPAY_FIELD("nextAttemptAt", next_attempt_at),
    IDEMPAY_FIELD("lastStatus", last_status), IDEMPAY_FIELD("lastError", last_error),
    IDEMPAY_FIELD("deadReason", dead_reason), IDEMPAY_FIELD_UNLESS_DEFAULT("claimOwner", claim_owner),
    IDEMPAY_FIELD_UNLESS_DEFAULT("claimUntil", claim_until), IDEMPAY_FIELD_UNLESS_DEFAULT("traceparent", trace),
    IDEMPAY_FIELD_UNLESS_DEFAULT("tracestate", trace_state));

}  // namespace

bool claimable(const OutboxEntry& e, const std::string& instance, int64_t now) {
  bool claimed_elsewhere = !e.claim_owner.empty() && e.claim_owner != instance && e.claim_until > now;
  return !claimed_elsewhere && e.next_attempt_at <= now;
}

std::string encode(const OutboxEntry& e) { return fields::encode_object(e, kOutboxFields); }

Result<OutboxEntry> decode_outbox(std::string_view json) {
  auto e = fields::decode_object<OutboxEntry>(json, kOutboxFields, "outbox entry");
  if (!e) {
    return e;
  }
  if (e->id.empty() || e->url.empty()) {
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
