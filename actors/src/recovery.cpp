// Start-up recovery: finds every payment whose acquirer outcome is unknown and every operation
// left in flight (through the recovery index), and has their actors reconcile them — in the
// background, at most kConcurrency at a time, while the server already answers.
#include <deque>

#include <spdlog/spdlog.h>

#include "directory.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::actors {

namespace {

constexpr int kConcurrency = 16;

// Reads the recovery index, not the payments: its size is the work left unfinished, not the
// number of payments ever stored.
std::map<std::string, std::vector<std::string>> find_unfinished(storage::Store& store) {
  std::map<std::string, std::vector<std::string>> work;
  auto keys = store.scan(Space::kRecovery, "", SIZE_MAX);
  if (!keys) {
    spdlog::error("recovery: cannot read the recovery index: {}", keys.error().message);
    return work;
  }
  for (const auto& [key, unused] : *keys) {
    auto [payment_id, request_id] = parse_recovery_key(key);
    auto& requests = work[payment_id];
    if (!request_id.empty()) {
      requests.push_back(request_id);
    }
  }
  return work;
}

}  // namespace

caf::behavior recovery_actor(caf::event_based_actor* self, const ActorContext* context) {
  struct State {
    std::deque<std::pair<std::string, std::vector<std::string>>> queue;
    int in_flight = 0;
    size_t total = 0;
  };
  auto state = std::make_shared<State>();
  for (auto& item : find_unfinished(*context->store)) {
    state->queue.emplace_back(item.first, std::move(item.second));
  }
  state->total = state->queue.size();
  auto send_more = [self, context, state] {
    caf::actor me = caf::actor_cast<caf::actor>(self);
    while (state->in_flight < kConcurrency && !state->queue.empty()) {
      auto [id, ops] = std::move(state->queue.front());
      state->queue.pop_front();
      ++state->in_flight;
      ReplySink done([me](Reply) { caf::anon_send(me, recovered_atom::value); });
      context->directory->send(id, recover_atom::value, RecoverCommand{id, std::move(ops), done});
    }
    if (state->in_flight == 0 && state->queue.empty()) {
      if (state->total > 0) {
        spdlog::info("recovery: {} payments with unfinished work reconciled", state->total);
      }
      self->quit();
    }
  };
  if (state->total > 0) {
    spdlog::info("recovery: {} payments have unfinished work; reconciling in the background", state->total);
  }
  send_more();
  return {
      [state, send_more](recovered_atom) {
        --state->in_flight;
        send_more();
      },
  };
}

}  // namespace idempay::actors
