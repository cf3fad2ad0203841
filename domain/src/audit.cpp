#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/audit.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iterator>

#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/domain/records.hpp"
#include "fields.hpp"

namespace idempay::domain {

std::string audit_prefix(const std::string& payment_id) { return payment_id + "/"; }

std::string audit_key(const std::string& payment_id, uint64_t seq) {
  // At least ten digits, zero-padded ("%010llu"), so that a trail's keys sort in seq order.
  char digits[20];
  auto end = std::to_chars(std::begin(digits), std::end(digits), seq).ptr;
  auto length = static_cast<size_t>(end - digits);
  std::string key = audit_prefix(payment_id);
  key.append(length < 10 ? 10 - length : 0, '0').append(digits, length);
  return key;
}

std::string log_pending_from(int64_t time_ms) {
  char when[24];
  std::snprintf(when, sizeof when, "%013lld", static_cast<long long>(std::max<int64_t>(0, time_ms)));
  return std::string(kLogPendingPrefix) + when;
}

std::string log_pending_key(const std::string& payment_id, uint64_t seq, int64_t time_ms) {
  return log_pending_from(time_ms) + "/" + audit_key(payment_id, seq);  // audit_key: "<paymentId>/<seq>"
}

std::string audit_head_key(const std::string& payment_id) { return audit_prefix(payment_id) + "~head"; }

std::string audit_tally_key(const std::string& payment_id) { return audit_prefix(payment_id) + "~tally"; }

namespace {
// In AuditKind's order.
constexpr std::string_view kKindNames[] = {
    "event_received",
    "event_processing_started",
    "event_processed",
    "event_duplicate_reused",
    "event_refused",
    "event_failed",
    "event_reconciled",
    "event_orphaned",
    "operation_received",
    "operation_processing_started",
    "operation_processed",
    "operation_pending",
    "operation_duplicate_reused",
    "operation_refused",
    "webhook_applied",
    "webhook_ignored",
    "webhook_duplicate",
    "webhook_conflict",
    "delivery_written",
    "callback_notified",
    "terminal_submitted",
    "access_refused",
    "acquirer_action_requested",
    "arrivals_counted",
    "acquirer_reported",
    "acquirer_failure_reported",
    "acquirer_hint",
};
}  // namespace

std::string_view to_string(AuditKind kind) { return kKindNames[static_cast<size_t>(kind)]; }

std::optional<AuditKind> audit_kind_from(std::string_view name) {
  for (size_t i = 0; i < std::size(kKindNames); ++i) {
    if (kKindNames[i] == name) {
      return static_cast<AuditKind>(i);
    }
  }
  return std::nullopt;
}

bool is_repeat(AuditKind kind) {
  switch (kind) {
    case AuditKind::kEventDuplicateReused:
    case AuditKind::kEventRefused:
    case AuditKind::kOperationDuplicateReused:
    case AuditKind::kOperationRefused:
    case AuditKind::kAccessRefused:
    case AuditKind::kWebhookDuplicate:
      return true;
    default:
      return false;
  }
}

namespace {
// Arrivals answered on a request thread are recorded a tick later, so they may come after a
// later one the actor answered itself: first and last are the extremes.
void count_in(ArrivalCount& row, int64_t now) {
  ++row.count;
  row.first = std::min(row.first, now);
  row.last = std::max(row.last, now);
}
}  // namespace

void ArrivalTally::add(const AuditEntry& e, int64_t now) {
  ++total_;
  for (auto& row : rows_) {
    if (row.kind == to_string(e.kind) && row.fingerprint == e.fingerprint && row.merchant == e.merchant) {
      return count_in(row, now);
    }
  }
  if (rows_.size() + 1 < kMaxRows) {
    rows_.push_back(ArrivalCount{std::string(to_string(e.kind)), e.fingerprint, e.merchant, 1, now, now});
    return;
  }
  if (rows_.size() + 1 == kMaxRows) {
    rows_.push_back(ArrivalCount{"other", "", "", 0, now, now});
  }
  count_in(rows_.back(), now);
}

}  // namespace idempay::domain

namespace idempay::domain::fields {

template <>
struct Codec<AuditKind> {
  static void write(JsonWriter& w, AuditKind v) { w.string(to_string(v)); }
  static bool read(const JsonValue& object, std::string_view name, AuditKind& v) {
    auto kind = audit_kind_from(object.string_or(name));
    if (kind) {
      v = *kind;
    }
    return kind.has_value();
  }
};

}  // namespace idempay::domain::fields

namespace idempay::domain {

namespace {

const auto kCountFields = std::make_tuple(IDEMPAY_FIELD("kind", kind), IDEMPAY_FIELD("fingerprint", fingerprint),
                                          IDEMPAY_FIELD("merchant", merchant), IDEMPAY_FIELD("count", count),
                                          IDEMPAY_FIELD("first", first), IDEMPAY_FIELD("last", last));

// An entry's hashed form: every field but the hash, in this order. The merchant and the signer
// are absent from entries written before they were named: those still verify.
const auto kHashedFields = std::make_tuple(
    IDEMPAY_FIELD("seq", seq), IDEMPAY_FIELD("time", time), IDEMPAY_FIELD("kind", kind), IDEMPAY_FIELD("ref", ref),
    IDEMPAY_FIELD("fingerprint", fingerprint), IDEMPAY_FIELD("before", before), IDEMPAY_FIELD("after", after),
    IDEMPAY_FIELD("detail", detail), IDEMPAY_FIELD_UNLESS_DEFAULT("merchant", merchant),
    IDEMPAY_FIELD_UNLESS_DEFAULT("signer", signer), IDEMPAY_FIELD("prev", prev));

const auto kEntryFields = std::tuple_cat(kHashedFields, std::make_tuple(IDEMPAY_FIELD("hash", hash)));

const auto kHeadFields = std::make_tuple(IDEMPAY_FIELD("seq", seq), IDEMPAY_FIELD("hash", hash));

}  // namespace

std::string ArrivalTally::encode() const {
  JsonWriter w;
  w.begin_array();
  for (const auto& r : rows_) {
    w.begin_object();
    fields::write(w, r, kCountFields);
    w.end_object();
  }
  w.end_array();
  return std::move(w).take();
}

Result<ArrivalTally> ArrivalTally::decode(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc || doc->type() != JsonValue::Type::kArray) {
    return make_error(ErrorCode::kInternal, "stored arrival counts are unreadable");
  }
  ArrivalTally out;
  for (const JsonValue& r : doc->items()) {
    ArrivalCount c;
    fields::read(r, c, kCountFields);
    out.total_ += c.count;
    out.rows_.push_back(std::move(c));
  }
  return out;
}

namespace {
std::string hashed_form(const AuditEntry& e) { return fields::encode_object(e, kHashedFields); }

// The stored form: the hashed form with the hash (hex, nothing to escape) as its last member.
std::string with_hash(std::string hashed, const std::string& hash) {
  hashed.pop_back();
  hashed.append(",\"hash\":\"").append(hash).append("\"}");
  return hashed;
}
}  // namespace

std::string compute_hash(const AuditEntry& e) { return crypto::to_hex(crypto::sha256(hashed_form(e))); }

std::string seal(AuditEntry& e) {
  std::string hashed = hashed_form(e);
  e.hash = crypto::to_hex(crypto::sha256(hashed));
  return with_hash(std::move(hashed), e.hash);
}

std::string encode(const AuditEntry& e) { return with_hash(hashed_form(e), e.hash); }

Result<AuditEntry> decode_audit(std::string_view json) {
  return fields::decode_object<AuditEntry>(json, kEntryFields, "audit entry");
}

std::string encode(const AuditHead& h) { return fields::encode_object(h, kHeadFields); }

Result<AuditHead> decode_head(std::string_view json) {
  return fields::decode_object<AuditHead>(json, kHeadFields, "audit head");
}

AuditEntry audit_entry(AuditKind kind, std::string ref, std::string fingerprint, std::string_view before,
                       std::string_view after, std::string detail) {
  AuditEntry e;
  e.kind = kind;
  e.ref = std::move(ref);
  e.fingerprint = std::move(fingerprint);
  e.before = std::string(before);
  e.after = std::string(after);
  e.detail = std::move(detail);
  return e;
}

// The batch's head for the transparency log, replacing the one an earlier entry of the same
// batch queued (just before the head, where that entry's append left it).
void AuditChain::queue_for_log(const std::string& payment_id, int64_t time_ms, storage::Batch& writes) const {
  constexpr size_t kAfterTime = kLogPendingPrefix.size() + kLogPendingTimeDigits + 1;
  const size_t slash = kAfterTime + payment_id.size();  // "p/<time>/<paymentId>/<seq>"
  auto queued = [&payment_id, slash](const storage::Write& w) {
    return w.keyspace == Space::kLog && w.key.size() > slash && w.key[slash] == '/' &&
           w.key.compare(kAfterTime, payment_id.size(), payment_id) == 0;
  };
  if (auto it = std::find_if(writes.rbegin(), writes.rend(), queued); it != writes.rend()) {
    writes.erase(std::next(it).base());
  }
  writes.push_back({Space::kLog, log_pending_key(payment_id, head_.seq, time_ms), head_.hash, std::nullopt, true});
}

AuditEntry AuditChain::append(const std::string& payment_id, AuditEntry entry, storage::Batch& writes) {
  entry.seq = head_.seq + 1;
  if (entry.time == 0) {  // set already for an arrival answered earlier without the actor
    entry.time = now_unix_ms();
  }
  entry.prev = head_.hash;
  if (signer_ != nullptr) {  // an entry chained again after a lost race names the key now in force
    entry.signer = signer_->kid();
  }
  std::string stored = seal(entry);
  head_ = AuditHead{entry.seq, entry.hash};
  // Blind writes: each entry's key is new, and the head is only ever written by this chain
  // (guarded: by whoever holds the head's current version).
  // Guarded, an entry is also put only where none is: no batch ever replaces another's entry.
  writes.push_back({Space::kAudit, audit_key(payment_id, entry.seq), std::move(stored),
                    guarded_ ? std::optional<uint64_t>(0) : std::nullopt, !guarded_});
  // The head is rewritten with each entry; a batch holding several keeps only the last one,
  // conditioned on the version the batch's first entry was chained from. It is looked for
  // from the end, where the entry before this one left it: a burst of thousands of entries
  // in one batch (repeats recorded while a shared store's commit is in flight) costs each
  // entry the same, not one step per entry already in the batch.
  std::string head_key = audit_head_key(payment_id);
  std::optional<uint64_t> expected;
  auto is_head = [&head_key](const storage::Write& w) {
    return w.keyspace == Space::kAudit && w.key == head_key;
  };
  if (auto it = std::find_if(writes.rbegin(), writes.rend(), is_head); it != writes.rend()) {
    expected = it->expected_etag;
    writes.erase(std::next(it).base());
  }
  if (guarded_ && !expected) {
    expected = head_etag_++;  // a new batch: it moves the head's version by one
  }
  writes.push_back({Space::kAudit, std::move(head_key), encode(head_), expected, !guarded_});
  queue_for_log(payment_id, entry.time, writes);
  return entry;
}

}  // namespace idempay::domain
