#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/payment_reads.hpp"

#include <spdlog/spdlog.h>

namespace idempay::domain {

using storage::Keyspace;

Lookup memory_lookup(storage::Store& store) {
  return [&store](Keyspace ks, std::string_view key) { return store.get_if_in_memory(ks, key); };
}

Lookup disk_lookup(storage::Store& store) {
  return [&store](Keyspace ks, std::string_view key) {
    return std::optional<Result<std::optional<storage::Versioned>>>(store.get(ks, key));
  };
}

std::optional<Result<PaymentSnapshot>> read_payment(const Lookup& get, const std::string& id) {
  using Answer = Result<PaymentSnapshot>;
  PaymentSnapshot snapshot;
  auto got = get(Space::kPayments, id);
  if (!got) {
    return std::nullopt;
  }
  if (!*got) {
    return Answer(tl::unexpected(got->error()));
  }
  if (!**got) {
    return Answer(std::move(snapshot));  // a payment's audit chain is written with its record: no record, no chain
  }
  auto decoded = decode_payment((**got)->value);
  if (!decoded) {
    spdlog::error("payment {}: stored record unreadable: {}", id, decoded.error().message);
    return Answer(tl::unexpected(decoded.error()));
  }
  snapshot.record = std::move(*decoded);
  snapshot.etag = (**got)->etag;
  auto head = get(Space::kAudit, audit_head_key(id));
  if (!head) {
    return std::nullopt;
  }
  if (!*head) {
    return Answer(tl::unexpected(head->error()));
  }
  if (**head) {
    snapshot.head = decode_head((**head)->value).value_or(AuditHead{});
    snapshot.head_etag = (**head)->etag;
  }
  if (snapshot.head.seq >= kIndividualEntries) {  // counts left unsealed when the last actor ended
    auto stored = get(Space::kAudit, audit_tally_key(id));
    if (!stored) {
      return std::nullopt;
    }
    if (*stored && **stored) {
      snapshot.tally = ArrivalTally::decode((**stored)->value).value_or(ArrivalTally{});
    }
  }
  return Answer(std::move(snapshot));
}

std::optional<Result<std::optional<StoredOperation>>> read_operation(const Lookup& get, const std::string& payment_id,
                                                                     const std::string& request_id,
                                                                     bool may_have_legacy) {
  using Answer = Result<std::optional<StoredOperation>>;
  // Payments created since requestIds were scoped (they name their owner) have no legacy
  // operations: one lookup, not two.
  for (const std::string& key : {operation_key(payment_id, request_id), request_id}) {
    if (key == request_id && !may_have_legacy) {
      break;
    }
    auto got = get(Space::kOperations, key);
    if (!got) {
      return std::nullopt;
    }
    if (!*got) {
      return Answer(tl::unexpected(got->error()));
    }
    if (!**got) {
      continue;
    }
    auto decoded = decode_operation((**got)->value);
    if (!decoded) {
      return Answer(tl::unexpected(decoded.error()));
    }
    if (decoded->payment_id == payment_id) {
      return Answer(std::optional<StoredOperation>(StoredOperation{key, std::move(*decoded), (**got)->etag}));
    }
  }
  return Answer(std::optional<StoredOperation>());
}

}  // namespace idempay::domain
