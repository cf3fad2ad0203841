#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/inspection.hpp"

#include <map>
#include <set>

#include "idempay/domain/audit.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/money.hpp"
#include "idempay/domain/outbox.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::domain {

namespace {

using storage::Keyspace;

std::string without_query(const std::string& url) { return url.substr(0, url.find('?')); }

// All operations, by payment.
Result<std::map<std::string, std::vector<std::pair<std::string, OperationRecord>>>> operations_by_payment(
    storage::Store& store, std::string_view prefix = {}) {
  std::map<std::string, std::vector<std::pair<std::string, OperationRecord>>> out;
  auto all = store.scan(Space::kOperations, prefix, SIZE_MAX);
  if (!all) {
    return tl::unexpected(all.error());
  }
  for (const auto& [key, v] : *all) {
    auto op = decode_operation(v.value);
    if (op) {
      out[op->payment_id].emplace_back(std::string(request_id_of(key)), std::move(*op));
    }
  }
  return out;
}

bool indexed(storage::Store& store, const std::string& key) {
  auto got = store.get(Space::kRecovery, key);
  return got && *got;
}

// Start-up recovery finds unfinished work only through the index (and its newest changes,
// still letters in the log's queue): a record missing from it would never be reconciled, a
// stale key would be reconciled at every start for nothing.
void check_recovery_index(storage::Store& store, const std::string& id, const PaymentRecord& r,
                          const std::vector<std::pair<std::string, OperationRecord>>& ops,
                          const std::map<std::string, char>& letters, std::vector<Inconsistency>& out) {
  auto letter = letters.find(id);
  bool listed = letter != letters.end() ? letter->second == kLeftUnresolved : indexed(store, recovery_key(id));
  if (is_unresolved(r.state) != listed) {
    out.push_back({id, is_unresolved(r.state) ? "unresolved payment missing from the recovery index"
                                              : "recovery index names a resolved payment"});
  }
  for (const auto& [request_id, op] : ops) {
    bool in_flight = op.phase == OperationPhase::kProcessing;
    if (in_flight != indexed(store, recovery_key(id, request_id))) {
      out.push_back({id, "operation " + request_id +
                             (in_flight ? " in flight but missing from the recovery index"
                                        : " done but still in the recovery index")});
    }
  }
}

// A payment's stored trail: its chain in order, the copy of its head a store of format 1 keeps,
// whether a batch lies under a key that is not its first entry's, and its arrival counts not
// yet sealed into the chain.
struct StoredTrail {
  std::vector<AuditEntry> entries;
  std::optional<AuditHead> legacy_head;
  bool misplaced = false;
  ArrivalTally pending;
};

Result<StoredTrail> stored_trail(storage::Store& store, const std::string& payment_id) {
  auto rows = store.scan(Space::kAudit, audit_prefix(payment_id), SIZE_MAX);
  if (!rows) {
    return tl::unexpected(rows.error());
  }
  StoredTrail trail;
  for (const auto& [key, v] : *rows) {
    if (key == legacy_audit_head_key(payment_id)) {
      trail.legacy_head = decode_head(v.value).value_or(AuditHead{});
      continue;
    }
    if (key == audit_tally_key(payment_id)) {
      trail.pending = ArrivalTally::decode(v.value).value_or(ArrivalTally{});
      continue;
    }
    auto batch = decode_audit_batch(v.value);
    if (!batch) {
      return tl::unexpected(batch.error());
    }
    // The trail is read in key order: a key that lies about its entries breaks it.
    trail.misplaced = trail.misplaced || key != audit_key(payment_id, batch->front().seq);
    std::move(batch->begin(), batch->end(), std::back_inserter(trail.entries));
  }
  return trail;
}

// The chain's own integrity: contiguous sequence, each entry linked to and hashed over the
// previous one, each batch under the key of its first entry, and in a store of format 1 not
// yet migrated, the stored head naming the last entry. (A store of format 2 keeps no copy of
// the head: the chain ends where its last entry is, and the transparency log holds the heads
// it had, which `audit verify` replays.)
void check_chain(const std::string& id, const StoredTrail& trail, const std::set<std::string>* published_keys,
                 std::vector<Inconsistency>& out) {
  const auto& entries = trail.entries;
  const auto& head = trail.legacy_head;
  if (trail.misplaced) {
    out.push_back({id, "audit entries stored under a key that is not their first entry's"});
  }
  std::string prev;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (e.seq != i + 1) {
      out.push_back({id, "audit entry " + std::to_string(i + 1) + " is missing (found " + std::to_string(e.seq) + ")"});
      return;
    }
    if (e.prev != prev) {
      out.push_back({id, "audit entry " + std::to_string(e.seq) + " does not link to the entry before it"});
    }
    if (compute_hash(e) != e.hash) {
      out.push_back({id, "audit entry " + std::to_string(e.seq) + " was altered (hash mismatch)"});
    }
    if (published_keys != nullptr && !e.signer.empty() && published_keys->count(e.signer) == 0) {
      out.push_back({id, "audit entry " + std::to_string(e.seq) + " names signing key " + e.signer +
                             ", which the store has not published"});
    }
    prev = e.hash;
  }
  if (head && (head->seq != entries.size() || head->hash != prev)) {
    out.push_back({id, "audit chain head does not match its last entry (entries deleted?)"});
  }
}

void check_payment(const std::string& id, const PaymentRecord& r, const std::vector<AuditEntry>& entries,
                   const std::vector<std::pair<std::string, OperationRecord>>& ops, std::vector<Inconsistency>& out) {
  if (entries.empty()) {
    out.push_back({id, "payment has no audit trail"});
  }
  std::string last_state;
  for (const auto& e : entries) {
    if (!e.after.empty()) {
      last_state = e.after;
    }
  }
  if (!last_state.empty() && last_state != to_string(r.state)) {
    out.push_back({id, "stored state " + std::string(to_string(r.state)) + " disagrees with the audit trail (" +
                           last_state + ")"});
  }
  Cents settled = 0;
  Cents refunded = 0;
  for (const auto& [request_id, op] : ops) {
    if (op.phase != OperationPhase::kDone || op.outcome != Outcome::kDone) {
      continue;
    }
    auto body = JsonValue::parse(op.response);
    Cents amount = 0;
    if (body && body->find("value") != nullptr) {
      amount = parse_decimal_amount(body->find("value")->text()).value_or(0);
    }
    settled += op.kind == ppp::OperationKind::kSettle ? amount : 0;
    refunded += op.kind == ppp::OperationKind::kRefund ? amount : 0;
  }
  if (settled != r.amounts.settled || refunded != r.amounts.refunded) {
    out.push_back({id, "settled/refunded totals disagree with the stored operations"});
  }
}

}  // namespace

Result<PaymentReport> inspect_payment(storage::Store& store, const std::string& payment_id, bool legacy_operations) {
  auto got = store.get(Space::kPayments, payment_id);
  if (!got) {
    return tl::unexpected(got.error());
  }
  if (!*got) {
    return make_error(ErrorCode::kNotFound, "no payment " + payment_id);
  }
  auto r = decode_payment((*got)->value);
  if (!r) {
    return tl::unexpected(r.error());
  }
  PaymentReport out;
  out.payment_id = payment_id;
  out.state = std::string(to_string(r->state));
  out.owner = r->owner;
  // "00-<trace id>-<span id>-<flags>": the trace id is what a tracing backend is searched by.
  out.trace_id = r->trace.size() >= 35 ? r->trace.substr(3, 32) : std::string();
  out.payment_method = r->payment_method;
  out.currency = r->currency;
  out.authorized = r->amounts.authorized;
  out.settled = r->amounts.settled;
  out.refunded = r->amounts.refunded;
  out.tid = r->tid;
  out.nsu = r->nsu;
  out.authorization_id = r->authorization_id;
  out.callback_url = without_query(r->callback_url);
  out.pos_phase = r->pos_phase;
  out.card_bin = r->card.bin;
  out.card_last4 = r->card.last4;
  out.response = r->response;
  auto ops = operations_by_payment(store, legacy_operations ? "" : operation_key(payment_id, ""));
  if (!ops) {
    return tl::unexpected(ops.error());
  }
  for (const auto& [request_id, op] : (*ops)[payment_id]) {
    out.operations.push_back({request_id, std::string(ppp::to_string(op.kind)),
                              op.phase == OperationPhase::kDone ? "done" : "processing", op.amount,
                              op.phase == OperationPhase::kDone ? std::string(to_string(op.outcome)) : "",
                              op.response});
  }
  auto deliveries = list_deliveries(store, delivery_prefix(payment_id));
  if (!deliveries) {
    return tl::unexpected(deliveries.error());
  }
  for (auto& d : *deliveries) {
    if (d.payment_id == payment_id) {
      d.url = without_query(d.url);
      out.deliveries.push_back(std::move(d));
    }
  }
  auto trail = stored_trail(store, payment_id);
  if (!trail) {
    return tl::unexpected(trail.error());
  }
  auto add_counts = [&out](const ArrivalTally& tally, uint64_t sealed_in) {
    for (const auto& c : tally.rows()) {
      out.counted.push_back({c.kind, c.fingerprint, c.merchant, c.count, c.first, c.last, sealed_in});
    }
  };
  for (const auto& e : trail->entries) {
    out.audit.push_back({e.seq, e.time, std::string(to_string(e.kind)), e.ref, e.before, e.after, e.detail, e.hash,
                         e.merchant, e.signer});
    if (e.kind == AuditKind::kArrivalsCounted) {
      add_counts(ArrivalTally::decode(e.detail).value_or(ArrivalTally{}), e.seq);
    }
  }
  add_counts(trail->pending, 0);
  return out;
}

Result<std::vector<Inconsistency>> verify_store(storage::Store& store, const std::optional<std::string>& payment_id,
                                                const std::set<std::string>* published_keys) {
  std::vector<Inconsistency> out;
  auto letters = recovery_letters_in_queue(store);  // before the index: see its comment
  if (!letters) {
    return tl::unexpected(letters.error());
  }
  auto payments = store.scan(Space::kPayments, payment_id.value_or(""), SIZE_MAX);
  if (!payments) {
    return tl::unexpected(payments.error());
  }
  auto ops = operations_by_payment(store);
  if (!ops) {
    return tl::unexpected(ops.error());
  }
  std::set<std::string> known;
  for (const auto& [id, v] : *payments) {
    if (payment_id && id != *payment_id) {
      continue;
    }
    known.insert(id);
    auto r = decode_payment(v.value);
    if (!r) {
      out.push_back({id, "payment record unreadable"});
      continue;
    }
    auto trail = stored_trail(store, id);
    if (!trail) {
      out.push_back({id, "audit entries unreadable"});
      continue;
    }
    check_chain(id, *trail, published_keys, out);
    check_payment(id, *r, trail->entries, (*ops)[id], out);
    check_recovery_index(store, id, *r, (*ops)[id], *letters, out);
  }
  if (!payment_id) {
    // Records that point at payments the store does not have.
    auto audit = store.scan(Space::kAudit, "", SIZE_MAX);
    if (!audit) {
      return tl::unexpected(audit.error());
    }
    std::set<std::string> audited;
    for (const auto& [key, v] : *audit) {
      audited.insert(key.substr(0, key.find('/')));
    }
    for (const auto& id : audited) {
      if (known.count(id) == 0) {
        out.push_back({id, "audit trail for a payment that does not exist"});
      }
    }
    for (const auto& [id, list] : *ops) {
      if (known.count(id) == 0) {
        out.push_back({id, "operations for a payment that does not exist"});
      }
    }
    auto deliveries = list_deliveries(store);
    if (!deliveries) {
      return tl::unexpected(deliveries.error());
    }
    for (const auto& d : *deliveries) {
      if (known.count(d.payment_id) == 0) {
        out.push_back({d.payment_id, "delivery " + d.id + " for a payment that does not exist"});
      }
    }
  }
  return out;
}

}  // namespace idempay::domain
