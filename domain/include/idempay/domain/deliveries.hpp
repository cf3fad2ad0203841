#pragma once
#include <functional>

#include <string>
#include <vector>

#include "idempay/domain/outbox.hpp"
#include "idempay/base/error.hpp"
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

/// Pending deliveries (outbox) followed by dead letters; only those whose id starts with `prefix`.
Result<std::vector<DeliveryInfo>> list_deliveries(storage::Store& store, std::string_view prefix = {});

/// The prefix of payment `payment_id`'s delivery ids (which other payments' ids may share:
/// filter on DeliveryInfo::payment_id).
std::string delivery_prefix(const std::string& payment_id);

/// Moves dead letter `id` back to the outbox with the same identity (webhook-id) and a fresh
/// retry window, and returns it as now stored; the dispatcher of a running connector is handed
/// it by PaymentService::replay_delivery, a stopped one's finds it when it starts. kNotFound
/// when there is no such dead letter or `visible` says no to it (another merchant's);
/// kConflict when it is not dead but still pending in the outbox.
Result<OutboxEntry> replay_dead_letter(storage::Store& store, const std::string& id,
                                       const std::function<bool(const OutboxEntry&)>& visible = {});

}  // namespace idempay::domain
