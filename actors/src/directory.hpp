#pragma once
// The paymentId -> actor directory. Whoever hands a payment its work (an HTTP thread, the
// dispatcher, start-up recovery) looks its actor up here and sends to it directly: no router
// actor in between, so a request costs one actor scheduling instead of two.
//
// Passivation handshake: the directory counts the messages it routed to each actor, the actor
// counts those it handled; the actor may retire only when both counts agree, checked under
// the same lock that routes, so no message is lost and no two actors ever serve one key.
// Idle actors are found by generations instead of one timer per actor: every route stamps
// the entry with the current generation, and each tick offers retirement to the actors not
// routed to for a whole idle timeout (one clock entry per tick, not one per payment).
// Create Payment answer deadlines ride the same tick: one queue entry per create instead of
// one CAF clock entry (a timer thread woken per create, a message allocated per create, and
// the actor's memory held until the timer fired).
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages.hpp"

namespace idempay::actors {

class Directory {
public:
  Directory(caf::actor_system& system, const ActorContext* context) : system_(system), context_(context) {}

  /// Sends (atom, command) to the payment's actor, spawning it if needed. False, with nothing
  /// sent, once the directory is closed. `payment_id` may refer into `command`: it is read
  /// before the command is moved.
  template <class Atom, class Command>
  bool send(const std::string& payment_id, Atom atom, Command&& command) {
    caf::actor target = route(payment_id);
    if (!target) {
      return false;
    }
    caf::anon_send(target, atom, std::forward<Command>(command));
    return true;
  }

  /// Called by an idle actor: true (and the entry removed) when every message routed to it has
  /// been handled; the actor must then quit.
  bool try_retire(const std::string& payment_id, const caf::actor_addr& actor, uint64_t handled);

  /// Removes the entry of an actor that ended without retiring (shutdown, failure).
  void forget(const std::string& payment_id, const caf::actor_addr& actor);

  /// At the first tick from `due` on, sends (deadline_atom, attempt) to the payment's actor if
  /// that is still `actor` (a later actor of the same payment never hears an earlier one's
  /// deadline). Deadlines must be armed with one fixed delay, so that the queue stays in order.
  void arm_deadline(const std::string& payment_id, caf::actor_id actor, uint64_t attempt,
                    std::chrono::steady_clock::time_point due);

  /// Sends idle_atom to every actor not routed to since `idle_generations` ticks ago, the
  /// deadlines that are due to their actors, and the arrivals waiting for their trails.
  void tick(uint64_t idle_generations);

  /// Sends (repeats_atom, RepeatsCommand) to each payment whose arrivals answered from the
  /// context's RepeatCache wait for its audit trail (RepeatCache::due); ticks do it too.
  void send_due_repeats();
  /// The same for one payment: its actor takes them from the cache into the audit trail, or
  /// hands them back to be sent again (its record could not be read).
  void send_repeats(const std::string& payment_id);

  size_t size();

  /// Stops routing and asks every actor to exit with `reason`.
  void close(caf::exit_reason reason);

private:
  struct Entry {
    caf::actor actor;
    uint64_t forwarded = 0;
    uint64_t generation = 0;
  };

  struct Deadline {
    std::chrono::steady_clock::time_point due;
    std::string payment_id;
    caf::actor_id actor;
    uint64_t attempt;
  };

  caf::actor route(const std::string& payment_id);

  void offer_retirement(uint64_t idle_generations);
  void fire_due_deadlines();

  // Puts `id` on the current generation's list unless it is on it already.
  void stamp(const std::string& id, Entry& entry);

  caf::actor_system& system_;
  const ActorContext* context_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  // generations_[i] lists the ids stamped in generation first_generation_ + i; an id may also
  // sit on older lists, where it is skipped because its entry names a newer generation.
  std::deque<std::vector<std::string>> generations_{1};
  uint64_t first_generation_ = 0;
  bool closed_ = false;
  std::mutex deadlines_mutex_;  // apart from mutex_: arming must not wait behind routing
  std::deque<Deadline> deadlines_;  // in order of `due`
};

/// Ticks `directory` every `tick`; actors idle for `idle_generations` ticks are offered
/// retirement.
caf::behavior sweeper_actor(caf::event_based_actor* self, Directory* directory, std::chrono::milliseconds tick,
                            uint64_t idle_generations);

}  // namespace idempay::actors
