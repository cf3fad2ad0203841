// Recovery: finds every payment whose acquirer outcome is unknown and every operation left in
// flight (through the recovery index), and has their actors reconcile them — in the
// background, at most kConcurrency at a time, while the server already answers. A single
// instance does it once, at start. Instances sharing a store sweep again every
// sweep_interval: what a dead instance left is taken over once its lease has expired (the
// actors check the leases; of two instances taking over, the store's compare-and-swap picks one).
#include <deque>
#include <set>

#include <spdlog/spdlog.h>

#include "idempay/base/log_gate.hpp"
#include "directory.hpp"
#include "idempay/domain/audit.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::actors {

namespace {

constexpr int kConcurrency = 16;

using Unfinished = std::map<std::string, std::vector<std::string>>;

// Reads the recovery index, not the payments: its size is the work left unfinished, not the
// number of payments ever stored. The index's newest changes are still letters in the log's
// queue: read first, they override what the index says of a payment.
Unfinished find_unfinished(storage::Store& store) {
  Unfinished work;
  auto letters = recovery_letters_in_queue(store);
  auto keys = letters ? store.scan(Space::kRecovery, "", SIZE_MAX)
                      : Result<std::vector<storage::Entry>>(tl::unexpected(letters.error()));
  if (!keys) {
    static LogGate gate(std::chrono::seconds(10));  // every sweep fails alike during an outage
    if (gate.open()) {
      spdlog::error("recovery: cannot read the recovery index (said once per 10 s while it lasts): {}",
                    keys.error().message);
    }
    return work;
  }
  for (const auto& [key, unused] : *keys) {
    auto [payment_id, request_id] = parse_recovery_key(key);
    if (request_id.empty()) {
      auto letter = letters->find(payment_id);
      if (letter != letters->end() && letter->second == kResolved) {
        continue;  // resolved since: its key is about to go
      }
    }
    auto& requests = work[payment_id];
    if (!request_id.empty()) {
      requests.push_back(request_id);
    }
  }
  for (const auto& [payment_id, letter] : *letters) {
    if (letter == kLeftUnresolved) {
      work.try_emplace(payment_id);
    }
  }
  return work;
}

}  // namespace

caf::behavior recovery_actor(caf::event_based_actor* self, const ActorContext* context) {
  struct State {
    std::deque<std::pair<std::string, std::vector<std::string>>> queue;
    std::set<std::string> queued;  // queued or in flight: a sweep does not offer them twice
    int in_flight = 0;
    bool first = true;
    tracing::Span round;  // "recovery": from work found to the last payment's reconciliation
  };
  auto state = std::make_shared<State>();
  bool sweeps = context->core.shared();
  auto send_more = [self, context, state, sweeps] {
    caf::actor me = caf::actor_cast<caf::actor>(self);
    while (state->in_flight < kConcurrency && !state->queue.empty()) {
      auto [id, ops] = std::move(state->queue.front());
      state->queue.pop_front();
      ++state->in_flight;
      tracing::Scope scope(state->round.context());  // each payment's recovery is a span of the round's
      ReplySink done([me, id = id](Reply) { caf::anon_send(me, recovered_atom::value, id); });
      context->directory->send(id, recover_atom::value, RecoverCommand{id, std::move(ops), done, {}});
    }
    if (state->in_flight == 0 && state->queue.empty()) {
      state->round = tracing::Span();  // ends it
      if (!sweeps) {
        self->quit();
      }
    }
  };
  auto found = [self, context, state, sweeps, send_more](Unfinished work) {
    size_t added = 0;
    for (auto& [id, ops] : work) {
      if (state->queued.insert(id).second) {
        state->queue.emplace_back(id, std::move(ops));
        ++added;
      }
    }
    if (state->first && added > 0) {
      spdlog::info("recovery: {} payments have unfinished work; reconciling in the background", added);
    }
    if (added > 0 && !state->round.context().valid()) {
      state->round = tracing::start_root_span("recovery", tracing::Kind::kInternal);
      state->round.set("idempay.recovery.payments", static_cast<int64_t>(added));
    }
    state->first = false;
    send_more();
    if (sweeps) {
      self->delayed_send(self, context->sweep_interval, tick_atom::value);
    }
  };
  // The index is read on a store reader thread: this actor shares its worker with the
  // payment actors.
  auto sweep = [self, context, found] {
    auto back = in_actor<Unfinished>(self, found);
    context->store->read_async([back](storage::Store& store) { back(find_unfinished(store)); });
  };
  sweep();
  return {
      [sweep](tick_atom) { sweep(); },
      [state, send_more](recovered_atom, const std::string& id) {
        --state->in_flight;
        state->queued.erase(id);
        send_more();
      },
      [](resume_atom, Continuation& step) { step.run(); },
  };
}

}  // namespace idempay::actors
