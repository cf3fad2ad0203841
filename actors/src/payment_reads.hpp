#pragma once
// What a payment actor reads from the store, as functions of the store alone: the actor runs
// them on the store's reader threads (read_async) and gets their results back as messages, so
// that a lookup waiting for the disk never holds the worker every payment actor runs on.
#include <optional>
#include <string>

#include "audit.hpp"
#include "idempay/storage/store.hpp"
#include "records.hpp"

namespace idempay::actors {

/// A payment as stored: its record (none for a paymentId never written), the record's etag,
/// and its audit chain's head and unsealed arrival counts.
struct PaymentSnapshot {
  std::optional<PaymentRecord> record;
  uint64_t etag = 0;
  AuditHead head;
  ArrivalTally tally;
};

/// Reads and decodes payment `id`; kUnavailable on a read failure, kInternal on an unreadable
/// record (logged).
Result<PaymentSnapshot> read_payment(storage::Store& store, const std::string& id);

/// An operation record and where it is stored.
struct StoredOperation {
  std::string key;
  OperationRecord record;
  uint64_t etag = 0;
};

/// Payment `payment_id`'s operation under `request_id`, if any: under the scoped key first,
/// then, for payments stored before requestIds were scoped (`may_have_legacy`), under the bare
/// requestId if that names this payment.
Result<std::optional<StoredOperation>> read_operation(storage::Store& store, const std::string& payment_id,
                                                      const std::string& request_id, bool may_have_legacy);

}  // namespace idempay::actors
