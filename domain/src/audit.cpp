#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/audit.hpp"

#include <cstdio>

#include "idempay/protocol/crypto.hpp"
#include "idempay/protocol/json_read.hpp"
#include "idempay/protocol/json_writer.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::domain {

std::string audit_prefix(const std::string& payment_id) { return payment_id + "/"; }

std::string audit_key(const std::string& payment_id, uint64_t seq) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%010llu", static_cast<unsigned long long>(seq));
  return audit_prefix(payment_id) + digits;
}

std::string audit_head_key(const std::string& payment_id) { return audit_prefix(payment_id) + "~head"; }

std::string audit_tally_key(const std::string& payment_id) { return audit_prefix(payment_id) + "~tally"; }

bool is_repeat(std::string_view kind) {
  for (std::string_view k : {"event_duplicate_reused", "event_refused", "operation_duplicate_reused",
                             "operation_refused", "access_refused", "webhook_duplicate"}) {
    if (kind == k) {
      return true;
    }
  }
  return false;
}

void ArrivalTally::add(const AuditEntry& e, int64_t now) {
  ++total_;
  for (auto& row : rows_) {
    if (row.kind == e.kind && row.fingerprint == e.fingerprint && row.merchant == e.merchant) {
      ++row.count;
      row.last = now;
      return;
    }
  }
  if (rows_.size() + 1 < kMaxRows) {
    rows_.push_back(ArrivalCount{e.kind, e.fingerprint, e.merchant, 1, now, now});
    return;
  }
  if (rows_.size() + 1 == kMaxRows) {
    rows_.push_back(ArrivalCount{"other", "", "", 0, now, now});
  }
  ++rows_.back().count;
  rows_.back().last = now;
}

std::string ArrivalTally::encode() const {
  JsonWriter w;
  w.begin_array();
  for (const auto& r : rows_) {
    w.begin_object().key("kind").string(r.kind).key("fingerprint").string(r.fingerprint);
    w.key("merchant").string(r.merchant).key("count").number(static_cast<int64_t>(r.count));
    w.key("first").number(r.first).key("last").number(r.last).end_object();
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
    ArrivalCount c{r.string_or("kind"), r.string_or("fingerprint"), r.string_or("merchant"),
                   static_cast<uint64_t>(r.int_or("count")), r.int_or("first"), r.int_or("last")};
    out.total_ += c.count;
    out.rows_.push_back(std::move(c));
  }
  return out;
}

namespace {
void write_fields(JsonWriter& w, const AuditEntry& e) {
  w.key("seq").number(static_cast<int64_t>(e.seq)).key("time").number(e.time);
  w.key("kind").string(e.kind).key("ref").string(e.ref).key("fingerprint").string(e.fingerprint);
  w.key("before").string(e.before).key("after").string(e.after).key("detail").string(e.detail);
  if (!e.merchant.empty()) {  // absent from entries written before merchants were named: they still verify
    w.key("merchant").string(e.merchant);
  }
  w.key("prev").string(e.prev);
}

// The hashed form: every field but the hash.
std::string hashed_form(const AuditEntry& e) {
  JsonWriter w;
  w.begin_object();
  write_fields(w, e);
  w.end_object();
  return std::move(w).take();
}

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
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  AuditEntry e;
  e.seq = static_cast<uint64_t>(doc->int_or("seq"));
  e.time = doc->int_or("time");
  e.kind = doc->string_or("kind");
  e.ref = doc->string_or("ref");
  e.fingerprint = doc->string_or("fingerprint");
  e.before = doc->string_or("before");
  e.after = doc->string_or("after");
  e.detail = doc->string_or("detail");
  e.merchant = doc->string_or("merchant");
  e.prev = doc->string_or("prev");
  e.hash = doc->string_or("hash");
  return e;
}

std::string encode(const AuditHead& h) {
  JsonWriter w;
  w.begin_object().key("seq").number(static_cast<int64_t>(h.seq)).key("hash").string(h.hash).end_object();
  return std::move(w).take();
}

Result<AuditHead> decode_head(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  return AuditHead{static_cast<uint64_t>(doc->int_or("seq")), doc->string_or("hash")};
}

AuditEntry audit_entry(std::string kind, std::string ref, std::string fingerprint, std::string_view before,
                       std::string_view after, std::string detail) {
  AuditEntry e;
  e.kind = std::move(kind);
  e.ref = std::move(ref);
  e.fingerprint = std::move(fingerprint);
  e.before = std::string(before);
  e.after = std::string(after);
  e.detail = std::move(detail);
  return e;
}

AuditEntry AuditChain::append(const std::string& payment_id, AuditEntry entry, storage::Batch& writes) {
  entry.seq = head_.seq + 1;
  entry.time = now_unix_ms();
  entry.prev = head_.hash;
  std::string stored = seal(entry);
  head_ = AuditHead{entry.seq, entry.hash};
  // Blind writes: each entry's key is new, and the head is only ever written by this chain.
  writes.push_back({Space::kAudit, audit_key(payment_id, entry.seq), std::move(stored), std::nullopt, true});
  // The head is rewritten with each entry; a batch holding several keeps only the last one.
  for (auto it = writes.begin(); it != writes.end(); ++it) {
    if (it->keyspace == Space::kAudit && it->key == audit_head_key(payment_id)) {
      writes.erase(it);
      break;
    }
  }
  writes.push_back({Space::kAudit, audit_head_key(payment_id), encode(head_), std::nullopt, true});
  return entry;
}

}  // namespace idempay::domain
