#pragma once
// The connector's keyspaces, declared to the store when it is opened. Their names are the
// RocksDB column families on disk: never rename or reorder one (a store opens only with every
// family it holds), only append.
#include "idempay/storage/store.hpp"

namespace idempay::domain {

struct Space {
  static constexpr storage::Keyspace kPayments{0};
  static constexpr storage::Keyspace kOperations{1};
  static constexpr storage::Keyspace kIdempotency{2};  ///< no longer written; declared so that stores holding it still open
  static constexpr storage::Keyspace kInbox{3};
  static constexpr storage::Keyspace kOutbox{4};
  static constexpr storage::Keyspace kDeadLetters{5};
  static constexpr storage::Keyspace kAudit{6};
  static constexpr storage::Keyspace kMeta{7};
  static constexpr storage::Keyspace kRecovery{8};  ///< what start-up recovery must look at
};

/// The names of the keyspaces above, in their order: what every store of the connector opens.
inline storage::KeyspaceNames keyspace_names() {
  return {"payments", "operations", "idempotency", "inbox", "outbox", "dead_letters", "audit", "meta", "recovery"};
}

}  // namespace idempay::domain
