// The router owns the paymentId -> actor map. Passivation handshake: the router counts the
// messages it forwarded to each actor, the actor counts those it handled; the actor may retire
// only when both counts agree, so no message is lost and no two actors ever serve one key.
#include <unordered_map>

#include "messages.hpp"

namespace idempay::actors {

namespace {

struct Entry {
  caf::actor actor;
  uint64_t forwarded = 0;
};

struct RouterState {
  std::unordered_map<std::string, Entry> entries;
};

}  // namespace

caf::behavior router_actor(caf::event_based_actor* self, const ActorContext* context) {
  auto state = std::make_shared<RouterState>();
  auto route = [self, context, state](const std::string& payment_id) -> caf::actor& {
    auto& entry = state->entries[payment_id];
    if (!entry.actor) {
      // Monitored, not linked: CAF 0.17 unlinks in O(n), which stalls at many children.
      entry.actor = self->spawn<caf::monitored>(payment_actor, context,
                                                caf::actor_cast<caf::actor>(self), payment_id);
    }
    ++entry.forwarded;
    return entry.actor;
  };
  self->set_down_handler([state](caf::down_msg& down) {
    for (auto it = state->entries.begin(); it != state->entries.end(); ++it) {
      if (it->second.actor.address() == down.source) {
        state->entries.erase(it);
        return;
      }
    }
  });
  self->set_exit_handler([self, state](caf::exit_msg& msg) {
    for (auto& [id, entry] : state->entries) {
      self->send_exit(entry.actor, msg.reason);
    }
    state->entries.clear();
    self->quit(msg.reason);
  });
  return {
      [self, route](create_atom, CreateCommand& cmd) {
        auto& target = route(cmd.request.payment_id);
        self->send(target, create_atom::value, std::move(cmd));
      },
      [self, route](operate_atom, OperateCommand& cmd) {
        auto& target = route(cmd.request.payment_id);
        self->send(target, operate_atom::value, std::move(cmd));
      },
      [self, route](event_atom, EventCommand& cmd) {
        auto& target = route(cmd.event.payment_id);
        self->send(target, event_atom::value, std::move(cmd));
      },
      [self, route](refresh_atom, RefreshCommand& cmd) {
        auto& target = route(cmd.payment_id);
        self->send(target, refresh_atom::value, std::move(cmd));
      },
      [self, route](terminal_atom, TerminalCommand& cmd) {
        auto& target = route(cmd.payment_id);
        self->send(target, terminal_atom::value, std::move(cmd));
      },
      [self, route](recover_atom, RecoverCommand& cmd) {
        auto& target = route(cmd.payment_id);
        self->send(target, recover_atom::value, std::move(cmd));
      },
      [self, route](notified_atom, NotifiedCommand& cmd) {
        auto& target = route(cmd.payment_id);
        self->send(target, notified_atom::value, std::move(cmd));
      },
      [self, state](retire_atom, const std::string& payment_id, uint64_t handled) {
        auto it = state->entries.find(payment_id);
        bool allowed = it != state->entries.end() && it->second.forwarded == handled &&
                       it->second.actor.address() == self->current_sender()->address();
        if (allowed) {
          self->demonitor(it->second.actor);
          state->entries.erase(it);
        }
        return allowed;
      },
      [state](count_atom) { return static_cast<uint64_t>(state->entries.size()); },
  };
}

}  // namespace idempay::actors
