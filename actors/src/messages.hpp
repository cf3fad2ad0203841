#pragma once
// Atoms and message types shared by the directory and the actors (local only).
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include <caf/all.hpp>

#include "idempay/actors/payment_service.hpp"
#include "idempay/domain/outbox.hpp"
#include "idempay/tracing/tracer.hpp"

namespace idempay::actors {

// The actors are the runtime of the domain's records, chain and outbox: they use its names
// as their own.
using namespace idempay::domain;

using create_atom = caf::atom_constant<caf::atom("create")>;
using operate_atom = caf::atom_constant<caf::atom("operate")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using idle_atom = caf::atom_constant<caf::atom("idle")>;
using count_atom = caf::atom_constant<caf::atom("count")>;
using event_atom = caf::atom_constant<caf::atom("event")>;
using refresh_atom = caf::atom_constant<caf::atom("refresh")>;
using deliver_atom = caf::atom_constant<caf::atom("deliver")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using terminal_atom = caf::atom_constant<caf::atom("terminal")>;
using recover_atom = caf::atom_constant<caf::atom("recover")>;
using recovered_atom = caf::atom_constant<caf::atom("recovered")>;
using reconcile_atom = caf::atom_constant<caf::atom("reconcile")>;
using notified_atom = caf::atom_constant<caf::atom("notified")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using sweep_atom = caf::atom_constant<caf::atom("sweep")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
using owner_atom = caf::atom_constant<caf::atom("owner")>;
using repeats_atom = caf::atom_constant<caf::atom("repeats")>;
using watch_atom = caf::atom_constant<caf::atom("watch")>;

class Directory;
class RepeatCache;

/// The reply obligation of one request. Copyable (CAF messages are copy-on-write); the first
/// `deliver` wins, and if no copy ever delivers, the caller gets 503.
class ReplySink {
public:
  ReplySink() = default;
  /// Made on the caller's thread: the trace it works for (tracing::current()) is the command's.
  explicit ReplySink(ReplyFn fn) : state_(std::make_shared<State>(std::move(fn), tracing::current())) {}
  /// The trace of the request waiting for the answer; invalid for nobody's (background work).
  const tracing::TraceContext& trace() const {
    static const tracing::TraceContext kNone;
    return state_ ? state_->trace : kNone;
  }
  void deliver(Reply reply) const {
    if (state_ && !state_->done.exchange(true)) {
      state_->fn(std::move(reply));
    }
  }

private:
  struct State {
    State(ReplyFn f, tracing::TraceContext t) : fn(std::move(f)), trace(std::move(t)) {}
    ~State() {
      if (!done.exchange(true)) {
        fn(refusal(Refusal::kUnavailable, "the payment engine stopped; retry"));
      }
    }
    ReplyFn fn;
    tracing::TraceContext trace;
    std::atomic<bool> done{false};
  };
  std::shared_ptr<State> state_;
};

struct CreateCommand {
  ppp::CreatePaymentRequest request;
  std::string merchant;  ///< the authenticated caller
  ReplySink sink;
  int64_t follow_until = 0;  ///< Unix ms: how long it may wait for another instance's outcome
  std::string repeat_key;  ///< the request's RepeatCache key; empty: not to be remembered
};

struct OperateCommand {
  ppp::OperationRequest request;
  std::string merchant;
  ReplySink sink;
  int64_t follow_until = 0;
};

struct EventCommand {
  AcquirerEvent event;
  ReplySink sink;
};

struct TerminalCommand {
  std::string payment_id;
  std::string serial;
  ReplySink sink;
};

struct RecoverCommand {
  std::string payment_id;
  std::vector<std::string> operations;  ///< requestIds left in flight
  ReplySink sink;                       ///< answered when recovery of this payment is done
  /// Set when an unauthenticated notification through this merchant's path asked for it (a
  /// devolucao that ended): only the operations of that merchant's payment are resumed, at
  /// most once a second, and nothing else.
  std::string hinted_by;
};

struct NotifiedCommand {
  std::string payment_id;
  std::string delivery_id;
  unsigned status = 0;
};

/// Arrivals answered from the RepeatCache wait for the payment's audit trail.
struct RepeatsCommand {
  std::string payment_id;
  ReplySink sink;  ///< nobody waits: it hands back, when dropped, what was not taken
};

struct RefreshCommand {
  std::string payment_id;
  std::string merchant;  ///< who asks (kMerchant), the merchant in the hint's path (kHint)
  ReplySink sink;
  domain::Asker asker = domain::Asker::kMerchant;
};

/// An action on the payment's acquirer side that only its owner may ask for.
struct OwnerActionCommand {
  std::string payment_id;
  std::string merchant;
  std::string what;  ///< for the audit trail
  std::function<bool(const std::string& payment_id)> act;
  ReplySink sink;
};

/// A step to run inside the actor, posted back by a storage or acquirer callback.
struct Continuation {
  std::function<void()> run;
};

/// Wraps `fn` so that, called from any thread, it runs later inside the actor `self`.
template <class T>
std::function<void(T)> in_actor(caf::event_based_actor* self, std::function<void(T)> fn) {
  caf::actor hdl = caf::actor_cast<caf::actor>(self);
  // Shared, not copied into each Continuation: the step may hold a whole decision (record,
  // answer), and a copy per completion would be a copy on every request.
  auto step = std::make_shared<std::function<void(T)>>(std::move(fn));
  return [hdl, step](T value) {
    caf::anon_send(hdl, resume_atom::value,
                   Continuation{[step, v = std::make_shared<T>(std::move(value))] { (*step)(std::move(*v)); }});
  };
}

/// What the dispatcher publishes for the metrics (read from another thread).
struct OutboxStats {
  std::atomic<int64_t> pending{0};
  std::atomic<int64_t> oldest_created_ms{0};  ///< 0: none pending
};

/// What every payment actor needs; owned by the service, outlives all actors.
struct ActorContext {
  storage::Store* store = nullptr;
  AcquirerRoutes* acquirers = nullptr;
  CoreConfig core;  ///< what the configuration contributes to a payment's decisions
  std::chrono::milliseconds idle_timeout{30'000};
  CallbackTransport* transport = nullptr;
  CallbackOptions callbacks;
  std::chrono::milliseconds reconcile_base{1'000};  ///< first background status retry
  /// A Create Payment waiting this long for the acquirer is answered `undefined`; the outcome
  /// follows by callback. 0: it waits for the acquirer's own timeout.
  std::chrono::milliseconds answer_deadline{0};
  int reconcile_attempts = 5;                       ///< then the record is orphaned
  /// Instances sharing the store: how often a request that found another instance's lease
  /// looks again, and for how long at most before it answers "not known yet".
  std::chrono::milliseconds follow_interval{100};
  std::chrono::milliseconds follow_timeout{4'500};
  /// Instances sharing the store: how often unfinished work (recovery index, outbox) is
  /// looked for, to take over what a dead instance left once its lease has expired.
  std::chrono::milliseconds sweep_interval{5'000};
  Directory* directory = nullptr;  ///< where every payment's actor is found
  RepeatCache* repeats = nullptr;  ///< resolved payments' answers, for the request threads
  caf::actor dispatcher;  ///< receives (deliver_atom, OutboxEntry) once an entry is durable
  caf::actor watcher;     ///< receives (watch_atom, Watch) once a watch is durable
  int status_polls_per_second = 20;  ///< the watcher's looks per acquirer entry
  OutboxStats* outbox = nullptr;
  /// The key id the entries name as their signer (ServiceOptions::signer); none: unsigned.
  const domain::AuditSigner* signer = nullptr;
  /// Sees every payment event as the actor records it (ServiceOptions::on_event).
  std::function<void(const std::string& payment_id, const domain::AuditEntry&)> on_event;
};

caf::behavior dispatcher_actor(caf::event_based_actor* self, const ActorContext* context);
caf::behavior recovery_actor(caf::event_based_actor* self, const ActorContext* context);
caf::behavior watcher_actor(caf::event_based_actor* self, const ActorContext* context);
caf::behavior payment_actor(caf::event_based_actor* self, const ActorContext* context, std::string payment_id);

}  // namespace idempay::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::CreateCommand)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::OperateCommand)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::Continuation)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::EventCommand)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::OutboxEntry)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::domain::Watch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::RefreshCommand)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::RepeatsCommand)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::TerminalCommand)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::RecoverCommand)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::NotifiedCommand)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(idempay::actors::OwnerActionCommand)
