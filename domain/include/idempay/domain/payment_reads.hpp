#pragma once
// What a payment actor reads from the store, as functions of a lookup: the actor runs them first
// with memory-only lookups on its own worker (most reads, a new paymentId's above all, are
// answered there), and when one needs the disk, again on the store's reader threads
// (read_async), with the result back as a message: a lookup waiting for the disk never holds
// the worker every payment actor runs on.
#include <functional>
#include <optional>
#include <string>

#include "idempay/domain/audit.hpp"
#include "idempay/storage/store.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::domain {

/// The store's reads, from memory only or not: a memory-only read answers nullopt when it would
/// have to wait for the disk.
class Lookup {
public:
  Lookup(storage::Store& store, bool memory_only) : store_(&store), memory_only_(memory_only) {}
  /// The key's value (Store::get).
  std::optional<Result<std::optional<storage::Versioned>>> operator()(storage::Keyspace ks, std::string_view key) const;
  /// The greatest key in [from, below) and its value (Store::last_in).
  std::optional<Result<std::optional<storage::Entry>>> last_in(storage::Keyspace ks, std::string_view from,
                                                               std::string_view below) const;

private:
  storage::Store* store_;
  bool memory_only_;
};
inline Lookup memory_lookup(storage::Store& store) { return Lookup(store, true); }  ///< never waits
inline Lookup disk_lookup(storage::Store& store) { return Lookup(store, false); }   ///< always answers

/// A payment as stored: its record (none for a paymentId never written), the record's etag,
/// and its audit chain's head and unsealed arrival counts.
struct PaymentSnapshot {
  std::optional<PaymentRecord> record;
  uint64_t etag = 0;
  AuditHead head;
  ArrivalTally tally;
};

/// Reads and decodes payment `id`; kUnavailable on a read failure, kInternal on an unreadable
/// record (logged); nullopt when a lookup needed the disk.
std::optional<Result<PaymentSnapshot>> read_payment(const Lookup& get, const std::string& id);

/// An operation record and where it is stored.
struct StoredOperation {
  std::string key;
  OperationRecord record;
  uint64_t etag = 0;
};

/// Payment `payment_id`'s operation under `request_id`, if any: under the scoped key first,
/// then, for payments stored before requestIds were scoped (`may_have_legacy`), under the bare
/// requestId if that names this payment. nullopt when a lookup needed the disk.
std::optional<Result<std::optional<StoredOperation>>> read_operation(const Lookup& get, const std::string& payment_id,
                                                                     const std::string& request_id,
                                                                     bool may_have_legacy);

}  // namespace idempay::domain
