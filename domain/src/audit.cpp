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

Result<QueuedHead> decode_queued_head(std::string_view value) {
  constexpr size_t kHashHex = 64;
  if (value.size() < kHashHex || value.size() > kHashHex + 1) {
    return make_error(ErrorCode::kInvalidArgument, "not a queued head");
  }
  QueuedHead head{std::string(value.substr(0, kHashHex)), 0};
  if (value.size() > kHashHex) {
    head.recovery = value.back();
    if (head.recovery != kLeftUnresolved && head.recovery != kResolved) {
      return make_error(ErrorCode::kInvalidArgument, "not a queued head");
    }
  }
  return head;
}

Result<std::pair<std::string, uint64_t>> parse_log_pending_key(std::string_view key) {
  constexpr size_t kId = kLogPendingPrefix.size() + kLogPendingTimeDigits + 1;  // "p/<time>/"
  auto slash = key.rfind('/');
  if (key.compare(0, kLogPendingPrefix.size(), kLogPendingPrefix) != 0 || slash == std::string_view::npos ||
      slash <= kId) {
    return make_error(ErrorCode::kInvalidArgument, "not a queue key");
  }
  uint64_t seq = 0;
  auto digits = key.substr(slash + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "not a queue key");
  }
  return std::make_pair(std::string(key.substr(kId, slash - kId)), seq);
}

namespace {
// The batch's queue entry for `payment_id`'s head ("p/<time>/<paymentId>/<seq>").
bool is_queued_head_of(const storage::Write& w, const std::string& payment_id) {
  constexpr size_t kAfterTime = kLogPendingPrefix.size() + kLogPendingTimeDigits + 1;
  const size_t slash = kAfterTime + payment_id.size();
  return w.keyspace == Space::kLog && w.key.size() > slash && w.key[slash] == '/' &&
         w.key.compare(kAfterTime, payment_id.size(), payment_id) == 0 &&
         w.key.compare(0, kLogPendingPrefix.size(), kLogPendingPrefix) == 0;
}
}  // namespace

void fold_recovery_into_log_queue(const std::string& payment_id, storage::Batch& batch) {
  // recovery_key(payment_id), "<paymentId>/", matched without making it: this runs on every
  // commit of a payment's actor, and most have no recovery write.
  auto indexed = std::find_if(batch.begin(), batch.end(), [&payment_id](const storage::Write& w) {
    return w.keyspace == Space::kRecovery && w.key.size() == payment_id.size() + 1 && w.key.back() == '/' &&
           w.key.compare(0, payment_id.size(), payment_id) == 0;
  });
  auto queued = std::find_if(batch.rbegin(), batch.rend(),
                             [&payment_id](const storage::Write& w) { return is_queued_head_of(w, payment_id); });
  if (indexed == batch.end() || queued == batch.rend() || !queued->value) {
    return;
  }
  queued->value->push_back(indexed->value ? kLeftUnresolved : kResolved);
  batch.erase(indexed);
}

void RecoveryLetters::add(const std::string& payment_id, uint64_t seq, char letter) {
  if (letter == 0) {
    return;
  }
  auto [it, added] = seen_.try_emplace(payment_id, Seen{seq, letter, seq, letter});
  Seen& s = it->second;
  if (!added && seq < s.first_seq) {
    s.first_seq = seq;
    s.first = letter;
  }
  if (!added && seq > s.last_seq) {
    s.last_seq = seq;
    s.last = letter;
  }
}

std::map<std::string, char> RecoveryLetters::newest() const {
  std::map<std::string, char> out;
  for (const auto& [id, s] : seen_) {
    out.emplace_hint(out.end(), id, s.last);
  }
  return out;
}

void RecoveryLetters::carry_over(storage::Batch& batch) const {
  for (const auto& [id, s] : seen_) {
    if (s.last == kLeftUnresolved) {
      batch.push_back({Space::kRecovery, recovery_key(id), std::string(), std::nullopt, true});
    } else if (s.first == kResolved) {
      batch.push_back({Space::kRecovery, recovery_key(id), std::nullopt, std::nullopt, true});
    }
  }
}

Result<std::map<std::string, char>> recovery_letters_in_queue(storage::Store& store) {
  auto queued = store.scan(Space::kLog, kLogPendingPrefix, SIZE_MAX);
  if (!queued) {
    return tl::unexpected(queued.error());
  }
  RecoveryLetters letters;
  for (const auto& [key, value] : *queued) {
    auto head = decode_queued_head(value.value);
    auto at = parse_log_pending_key(key);
    if (head && at) {
      letters.add(at->first, at->second, head->recovery);
    }
  }
  return letters.newest();
}

std::string audit_entries_end(const std::string& payment_id) { return audit_prefix(payment_id) + "~"; }

std::string legacy_audit_head_key(const std::string& payment_id) { return audit_prefix(payment_id) + "~head"; }

bool is_entries_key(std::string_view key, std::string_view payment_id) {
  const size_t id = payment_id.size();  // "<paymentId>/<seq>", not "<paymentId>/~..."
  return key.size() > id + 1 && key.compare(0, id, payment_id) == 0 && key[id] == '/' && key[id + 1] != '~';
}

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

Result<std::vector<AuditEntry>> decode_audit_batch(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc || (doc->type() != JsonValue::Type::kArray && doc->type() != JsonValue::Type::kObject)) {
    return make_error(ErrorCode::kInternal, "stored audit entries are unreadable");
  }
  std::vector<AuditEntry> out;
  auto read_one = [&out](const JsonValue& object) {
    AuditEntry e;
    if (object.type() != JsonValue::Type::kObject || !fields::read(object, e, kEntryFields)) {
      return false;
    }
    out.push_back(std::move(e));
    return true;
  };
  bool read = doc->type() == JsonValue::Type::kObject
                  ? read_one(*doc)
                  : std::all_of(doc->items().begin(), doc->items().end(), read_one);
  if (!read || out.empty()) {
    return make_error(ErrorCode::kInternal, "stored audit entries are unreadable");
  }
  return out;
}

Result<AuditHead> head_of(std::string_view stored_entries) {
  auto entries = decode_audit_batch(stored_entries);
  if (!entries) {
    return tl::unexpected(entries.error());
  }
  return AuditHead{entries->back().seq, std::move(entries->back().hash)};
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
  auto queued = [&payment_id](const storage::Write& w) { return is_queued_head_of(w, payment_id); };
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
  // The batch's entries for this payment go into one key: looked for from the end, where the
  // entry before this one left it (only the log's queue entry follows it), so that a burst of
  // thousands of entries in one batch costs each entry the same.
  auto holds_entries = [&payment_id](const storage::Write& w) {
    return w.keyspace == Space::kAudit && w.value && is_entries_key(w.key, payment_id);
  };
  if (auto it = std::find_if(writes.rbegin(), writes.rend(), holds_entries); it != writes.rend()) {
    std::string& value = *it->value;
    value.back() = ',';  // "[..., e]" -> "[..., e, entry]"
    value.append(stored).push_back(']');
  } else {
    // A new key per batch: blind, or guarded put only where none is (see guard()).
    writes.push_back({Space::kAudit, audit_key(payment_id, entry.seq), "[" + stored + "]",
                      guarded_ ? std::optional<uint64_t>(0) : std::nullopt, !guarded_});
  }
  queue_for_log(payment_id, entry.time, writes);
  return entry;
}

}  // namespace idempay::domain
