#pragma once

#include <string>
#include <vector>

#include "idempay/protocol/error.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::domain {

/// A callback delivery as an operator sees it.
struct DeliveryInfo {
  std::string id;
  std::string payment_id;
  std::string url;
  bool dead = false;  ///< in the dead-letter list rather than the outbox
  int attempts = 0;
  unsigned last_status = 0;
  std::string last_error;
  std::string dead_reason;
  int64_t created_at = 0;
  int64_t next_attempt_at = 0;
};

/// Pending deliveries (outbox) followed by dead letters.
Result<std::vector<DeliveryInfo>> list_deliveries(storage::Store& store);

/// Moves dead letter `id` back to the outbox with the same identity (webhook-id) and a fresh
/// retry window; the dispatcher delivers it when the connector (re)starts.
Status replay_dead_letter(storage::Store& store, const std::string& id);

}  // namespace idempay::domain
