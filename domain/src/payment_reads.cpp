#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/payment_reads.hpp"

#include <spdlog/spdlog.h>

namespace idempay::domain {

using storage::Keyspace;

std::optional<Result<std::optional<storage::Versioned>>> Lookup::operator()(Keyspace ks, std::string_view key) const {
  if (memory_only_) {
    return store_->get_if_in_memory(ks, key);
  }
  return store_->get(ks, key);
}

std::optional<Result<std::optional<storage::Entry>>> Lookup::last_in(Keyspace ks, std::string_view from,
                                                                     std::string_view below) const {
  if (memory_only_) {
    return store_->last_in_if_in_memory(ks, from, below);
  }
  return store_->last_in(ks, from, below);
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
  // The chain's head: its last stored entry.
  auto last = get.last_in(Space::kAudit, audit_prefix(id), audit_entries_end(id));
  if (!last) {
    return std::nullopt;
  }
  if (!*last) {
    return Answer(tl::unexpected(last->error()));
  }
  if (**last) {
    auto head = head_of((**last)->second.value);
    if (!head) {
      spdlog::error("payment {}: stored audit entries unreadable: {}", id, head.error().message);
      return Answer(tl::unexpected(head.error()));
    }
    snapshot.head = std::move(*head);
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
