#pragma once
// The connector's keyspaces, declared to the store when it is opened. Their names are the
// RocksDB column families on disk: never rename or reorder one (a store opens only with every
// family it holds), only append.
#include "idempay/storage/store.hpp"

namespace idempay::domain {

struct Space {
  static constexpr storage::Keyspace kPayments{0};
  static constexpr storage::Keyspace kOperations{1};
  static constexpr storage::Keyspace kIdempotency{2};  ///< the operator API's Idempotency-Key records
  static constexpr storage::Keyspace kInbox{3};
  static constexpr storage::Keyspace kOutbox{4};
  static constexpr storage::Keyspace kDeadLetters{5};
  static constexpr storage::Keyspace kAudit{6};
  static constexpr storage::Keyspace kMeta{7};
  static constexpr storage::Keyspace kRecovery{8};  ///< what start-up recovery must look at
  /// The names acquirers know payments by (AcquirerRoute::reference) -> paymentId
  static constexpr storage::Keyspace kReferences{9};
  /// Pending payments whose acquirer is asked on a schedule (API Pix): paymentId -> until when
  static constexpr storage::Keyspace kWatches{10};
  /// The transparency log over every chain's heads: its queue, leaves, nodes and tree heads
  static constexpr storage::Keyspace kLog{11};
};

/// The names of the keyspaces above, in their order: what every store of the connector opens.
inline storage::KeyspaceNames keyspace_names() {
  return {"payments", "operations", "idempotency", "inbox",      "outbox", "dead_letters",
          "audit",    "meta",       "recovery",    "references", "watches", "log"};
}

/// The keyspaces whose point reads only look up keys that exist: a chain's head is found by a
/// seek to its last batch, and only for a payment whose record exists (a new paymentId costs a
/// read of `payments`), so the audit keyspace's filters would serve no lookup.
inline storage::KeyspaceNames keyspaces_read_only_for_existing_keys() { return {"audit"}; }

}  // namespace idempay::domain
