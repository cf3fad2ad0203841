#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/deliveries.hpp"

#include "idempay/domain/outbox.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::domain {

namespace {
DeliveryInfo info_of(const OutboxEntry& e, bool dead) {
  return DeliveryInfo{e.id, e.payment_id, e.url, dead, e.attempts, e.last_status, e.last_error, e.dead_reason,
                      e.created_at, e.next_attempt_at};
}
}  // namespace

std::string delivery_prefix(const std::string& payment_id) { return "dlv_" + payment_id + "_"; }

Result<std::vector<DeliveryInfo>> list_deliveries(storage::Store& store, std::string_view prefix) {
  std::vector<DeliveryInfo> out;
  for (auto [ks, dead] : {std::pair{Space::kOutbox, false}, std::pair{Space::kDeadLetters, true}}) {
    auto entries = store.scan(ks, prefix, SIZE_MAX);
    if (!entries) {
      return tl::unexpected(entries.error());
    }
    for (const auto& [key, v] : *entries) {
      auto e = decode_outbox(v.value);
      if (!e) {
        return tl::unexpected(e.error());
      }
      out.push_back(info_of(*e, dead));
    }
  }
  return out;
}

Result<OutboxEntry> replay_dead_letter(storage::Store& store, const std::string& id,
                                       const std::function<bool(const OutboxEntry&)>& visible) {
  auto got = store.get(Space::kDeadLetters, id);
  if (!got) {
    return tl::unexpected(got.error());
  }
  auto not_found = make_error(ErrorCode::kNotFound, "no dead letter " + id);
  if (!*got) {
    auto pending = store.get(Space::kOutbox, id);
    if (!pending) {
      return tl::unexpected(pending.error());
    }
    auto entry = *pending ? decode_outbox((**pending).value) : Result<OutboxEntry>(tl::unexpected(Error{}));
    if (entry && (!visible || visible(*entry))) {
      return make_error(ErrorCode::kConflict, "delivery " + id + " is pending, not dead: it is being retried");
    }
    return not_found;
  }
  auto entry = decode_outbox((*got)->value);
  if (!entry) {
    return tl::unexpected(entry.error());
  }
  if (visible && !visible(*entry)) {
    return not_found;
  }
  entry->attempts = 0;
  entry->dead_reason.clear();
  entry->created_at = entry->next_attempt_at = now_unix_ms();
  auto done = store.commit_and_wait({{Space::kDeadLetters, id, std::nullopt, (*got)->etag},
                                     {Space::kOutbox, id, encode(*entry), 0}});
  if (!done) {
    return tl::unexpected(done.error());
  }
  return entry;
}

}  // namespace idempay::domain
