#include "payment_reads.hpp"

#include <spdlog/spdlog.h>

namespace idempay::actors {

using storage::Keyspace;

Result<PaymentSnapshot> read_payment(storage::Store& store, const std::string& id) {
  PaymentSnapshot snapshot;
  auto got = store.get(Keyspace::kPayments, id);
  if (!got) {
    return tl::unexpected(got.error());
  }
  if (!*got) {
    return snapshot;  // a payment's audit chain is written with its record: no record, no chain
  }
  auto decoded = decode_payment((*got)->value);
  if (!decoded) {
    spdlog::error("payment {}: stored record unreadable: {}", id, decoded.error().message);
    return tl::unexpected(decoded.error());
  }
  snapshot.record = std::move(*decoded);
  snapshot.etag = (*got)->etag;
  auto head = store.get(Keyspace::kAudit, audit_head_key(id));
  if (!head) {
    return tl::unexpected(head.error());
  }
  if (*head) {
    snapshot.head = decode_head((*head)->value).value_or(AuditHead{});
  }
  if (snapshot.head.seq >= kIndividualEntries) {  // counts left unsealed when the last actor ended
    auto stored = store.get(Keyspace::kAudit, audit_tally_key(id));
    if (stored && *stored) {
      snapshot.tally = ArrivalTally::decode((*stored)->value).value_or(ArrivalTally{});
    }
  }
  return snapshot;
}

Result<std::optional<StoredOperation>> read_operation(storage::Store& store, const std::string& payment_id,
                                                      const std::string& request_id, bool may_have_legacy) {
  // Payments created since requestIds were scoped (they name their owner) have no legacy
  // operations: one lookup, not two.
  for (const std::string& key : {operation_key(payment_id, request_id), request_id}) {
    if (key == request_id && !may_have_legacy) {
      break;
    }
    auto got = store.get(Keyspace::kOperations, key);
    if (!got) {
      return tl::unexpected(got.error());
    }
    if (!*got) {
      continue;
    }
    auto decoded = decode_operation((*got)->value);
    if (!decoded) {
      return tl::unexpected(decoded.error());
    }
    if (decoded->payment_id == payment_id) {
      return std::optional<StoredOperation>(StoredOperation{key, std::move(*decoded), (*got)->etag});
    }
  }
  return std::optional<StoredOperation>();
}

}  // namespace idempay::actors
