#pragma once
// One actor per paymentId serialises everything that happens to that payment. It is the shell
// around the payment's decisions (domain/payment_core.hpp): it loads the record, asks the core
// what a command does, commits the decision, performs its effects, and feeds each result back
// to the core. A step that waits (a store read, a commit, an acquirer call) resumes through a
// Continuation message, so no worker ever blocks and other messages keep flowing: stored
// answers are given at once, overlapping creates join the call in flight, and other mutations
// wait their turn in `deferred_`.
//
// payment_actor.cpp holds the plumbing (loading, audit, carrying out decisions);
// payment_commands.cpp the commands, one handler each.
#include <list>

#include <spdlog/spdlog.h>

#include "idempay/domain/audit.hpp"
#include "idempay/domain/payment_core.hpp"
#include "idempay/domain/payment_reads.hpp"
#include "idempay/base/fault.hpp"
#include "idempay/metrics/metrics.hpp"
#include "idempay/base/assert.hpp"
#include "messages.hpp"
#include "repeat_cache.hpp"

namespace idempay::actors {

// A payment's audit trail on its way to the store: the chain's head in memory, the entries of
// arrivals that change nothing (buffered, then committed with the next group commit), the
// arrivals counted instead once the chain is long, and, on shared stores, the chained commit in
// flight and what waits for it.
struct AuditPipeline {
  AuditChain chain;
  storage::Batch buffer;                    // entries of audit_now() not yet handed to the store
  uint64_t buffered_after = 0;               // the chain's head when the first of them was appended
  std::vector<AuditEntry> buffered_entries;  // shared stores: the same, to chain again after a lost race
  std::vector<AuditEntry> relink;            // lost a race: chained again once the head is reloaded
  int unacked = 0;                           // shared stores: chained commits not yet acknowledged
  bool load_after = false;                   // a load waits for them: it must see this actor's own entries
  bool flush_wanted = false;                 // entries buffered behind the chained commit in flight
  std::function<void()> waiting_carry;       // a decision chained behind it
  ArrivalTally tally;                        // arrivals counted, not yet sealed into the chain
  bool tally_changed = false;                // since it was last handed to the store

  // Nothing on its way: no chained commit in flight, nothing buffered or to chain again.
  bool idle() const { return unacked == 0 && buffer.empty() && relink.empty(); }

  // The rule the pipeline breaks, if any (nullptr: none). One chained commit at a time is in
  // flight, and only shared stores chain commits or chain entries again: a breach means the
  // chain in memory no longer follows the store's, and the next entry would fork it.
  const char* broken(bool shared) const {
    if (unacked < 0 || unacked > 1) {
      return "one chained audit commit at a time is in flight";
    }
    if (!shared && (unacked != 0 || !relink.empty() || !buffered_entries.empty())) {
      return "a store of one instance never chains audit commits or relinks entries";
    }
    return nullptr;
  }
};

class PaymentActor : public std::enable_shared_from_this<PaymentActor> {
public:
  PaymentActor(caf::event_based_actor* self, const ActorContext* context, std::string payment_id)
      : self_(self), ctx_(*context) {
    payment_.id = std::move(payment_id);
    audit_.chain.guard(shared());
    audit_.chain.sign_as(ctx_.signer);
  }

  caf::behavior behavior();

private:
  // Where the actor stands: three things, each one explicit state.
  //
  //   its copy of the record    kUnread ─┬─load──▶ kLoading ──read──▶ kLoaded
  //                             kNone ───┘  ▲         │ failed          │ shared store: after each
  //                                         └─────────┴─────────────────┘ command, or a lost race
  //                             kUnread ──presume_new──▶ kPresumed ──its commit──▶ kLoaded
  //                                                          └── refused, or ended ──▶ kNone
  //
  //   the mutation in flight    kNone ──begin(flow)──▶ kCreate | kOperation | kEvent | kTerminal
  //                               ▲                     | kRefresh | kBackground
  //                               └──────── finish() ─────────┘
  //
  //   what callers heard        kNothing ──a create answered `undefined` at its deadline──▶
  //   while it was unresolved             kUndefinedThisCreate ──begin()──▶ kUndefined
  //                             kNothing ──answered `undefined`, reconciling──▶ kUndefined
  //                             (either: the outcome goes out by callback)
  //
  // Commands that need no turn of the payment (stored answers, refusals) are answered in any
  // state; a mutation waits for kLoaded, and for kNone in flight (deferred_, in arrival order).
  // A copy may be reloaded while a mutation runs (its commit lost a race: the chain's head).
  enum class Copy : uint8_t {
    kUnread,    ///< nothing read or presumed yet: a first create may presume the payment new
    kNone,      ///< not trusted: the next mutation reads the store
    kLoading,   ///< a read is on its way
    kPresumed,  ///< shared stores: taken as new, unread, until the create's commit says so
    kLoaded,    ///< as last read or committed
  };

  // What the payment's callers have been told while its outcome was unknown.
  enum class Told : uint8_t {
    kNothing,
    kUndefined,             ///< someone heard `undefined`: the final outcome goes out by callback
    kUndefinedThisCreate,   ///< the create in flight answered `undefined` at its deadline
  };

  // The mutation in flight, if any: who started it decides who hears its outcome.
  enum class Flow : uint8_t {
    kNone,
    kCreate,      ///< a Create Payment; overlapping identical ones join it
    kOperation,   ///< cancel, settle, refund (joined by the same requestId)
    kEvent,       ///< an acquirer webhook
    kTerminal,    ///< a POS terminal submission
    kRefresh,     ///< an inbound status request
    kBackground,  ///< reconciliation or recovery: nobody waits
  };

  // -- plumbing ----------------------------------------------------------------------------

  template <class T>
  std::function<void(T)> in_actor(std::function<void(T)> fn) {
    return actors::in_actor<T>(self_, std::move(fn));
  }

  const std::string& id() const { return payment_.id; }
  bool busy() const { return flow_ != Flow::kNone; }
  // The copy is no longer trusted (a load in progress stays in progress, and a copy never
  // read stays unread).
  void forget_copy() {
    if (copy_ == Copy::kPresumed) {
      // The commands that waited for the presumption's commit wait for the mutation's end
      // instead, and then read the store like any other.
      for (auto& again : std::exchange(awaiting_confirmation_, {})) {
        deferred_.push_back(std::move(again));
      }
    }
    if (copy_ == Copy::kLoaded || copy_ == Copy::kPresumed) {
      copy_ = Copy::kNone;
    }
  }
  bool has_copy() const { return copy_ == Copy::kLoaded || copy_ == Copy::kPresumed; }
  bool told_undefined() const { return told_ != Told::kNothing; }
  // Other instances write this store too: what is cached may be stale (see when_loaded).
  bool shared() const { return ctx_.core.shared(); }
  // Shared stores: the record last read may serve a resolved payment's repeats, without a read
  // (their answer cannot change), while nothing runs and no race was lost since.
  bool last_read_serves() const { return shared() && copy_ == Copy::kNone && !busy() && !stale_ && payment_.record; }
  const PaymentRecord& record() const {
    IDEMPAY_ASSERT(payment_.record.has_value(), "a payment's record was read before it was loaded");
    return *payment_.record;
  }

  // Stops the process if the audit pipeline breaks its rules (AuditPipeline::broken).
  void check_audit() const {
    const char* broken = audit_.broken(shared());
    IDEMPAY_ASSERT(broken == nullptr, broken);
  }

  void release_waiters();
  void on_routed();

  // Offered by the directory after an idle timeout without messages: retire only when
  // nothing is in flight and the directory agrees that every message it routed was handled.
  void on_idle();

  // -- loading: every store read runs on the store's reader threads, never on this worker ----

  // Runs `again` once the payment is loaded. The first command starts the load, later ones
  // queue behind it in arrival order; while a failed load is reported, `sink` gets the
  // failure instead.
  void when_loaded(const ReplySink& sink, std::function<void()> again);
  // The mutation in flight reloads the record and goes on with `again`; should the load fail
  // (no database), the mutation ends with that failure and its waiters are answered.
  void reload_for_mutation(std::function<void()> again);
  void start_load();
  void on_loaded(Result<PaymentSnapshot> got);

  // True when the payment is not loaded yet: `handler` runs with `cmd` once it is.
  // A command reloads while a mutation is in flight only after it: the reload must not
  // overwrite what that mutation commits.
  template <class Command>
  bool wait_for_load(void (PaymentActor::*handler)(Command&&), Command& cmd) {
    if (copy_ == Copy::kLoaded) {
      return false;
    }
    // The sink is taken before the command moves into the retry: a load that fails answers
    // the caller with that failure.
    ReplySink sink;
    if constexpr (!std::is_same_v<Command, NotifiedCommand>) {
      sink = cmd.sink;
    }
    auto again = [me = shared_from_this(), handler, cmd = std::move(cmd)]() mutable { ((*me).*handler)(std::move(cmd)); };
    if (copy_ == Copy::kPresumed) {
      awaiting_confirmation_.push_back(std::move(again));
      return true;
    }
    if (busy()) {
      defer(std::move(again));
      return true;
    }
    when_loaded(sink, std::move(again));
    return true;
  }

  // Shared stores, the first Create Payment of this actor: decided as for a new payment, with
  // no read. The decision's record is written only if absent (put-if-absent), which the store
  // checks under its lock in the commit group, and nothing reaches the acquirer before that
  // commit: if the payment exists after all, the commit loses as a race with another instance
  // would, and the command runs again on the record then read. A create spares a database
  // round trip on a reader connection; a replay that reaches a fresh actor pays one commit
  // attempt more.
  bool presume_new() {
    if (!shared() || copy_ != Copy::kUnread || busy() || payment_.record || stale_ || load_failure_
        || !audit_.idle()) {
      return false;
    }
    copy_ = Copy::kPresumed;
    return true;
  }
  // The presumption holds only for a decision that writes the payment as new: anything else
  // is decided again on the record as read.
  bool drop_presumption() {
    if (copy_ != Copy::kPresumed) {
      return false;
    }
    copy_ = Copy::kNone;
    return true;
  }
  // The commit confirmed the presumption, or refused it: either way the commands that waited
  // for that are the caller's to run (confirmed: at once; refused: once the mutation has
  // ended, on the record as read).
  std::vector<std::function<void()>> confirm_presumption() {
    IDEMPAY_ASSERT(awaiting_confirmation_.empty() || copy_ == Copy::kPresumed,
                   "commands wait for a presumption's commit only while the copy is presumed");
    if (copy_ == Copy::kPresumed) {
      copy_ = Copy::kLoaded;
    }
    return std::exchange(awaiting_confirmation_, {});
  }

  // Shared stores: what was loaded serves the command at hand and the ones queued behind it,
  // then the next command reads the store again (another instance may have moved on).
  void forget_unless_busy() {
    if (shared() && !busy()) {
      forget_copy();
    }
  }

  // Runs `read` with memory-only lookups and `then` with its result at once; if a lookup needs
  // the disk, runs `read` again on a store reader thread and `then` later, in this actor.
  // Templates, not std::function: the common, in-memory path allocates nothing.
  template <class T, class Read, class Then>
  void read_then(Read read, Then then) {
    if (std::optional<T> now = read(memory_lookup(*ctx_.store))) {
      return then(std::move(*now));
    }
    auto back = in_actor<T>(std::move(then));
    ctx_.store->read_async([read = std::move(read), back = std::move(back)](storage::Store& store) {
      back(std::move(*read(disk_lookup(store))));  // a disk lookup always answers
    });
  }

  // Looks up this payment's operation under `request_id` on a reader thread, then runs `then`.
  template <class Then>
  void load_operation(const std::string& request_id, Then then) {
    if (!payment_.record) {
      return then(Result<std::optional<StoredOperation>>());  // no payment, no operations of it
    }
    read_then<Result<std::optional<StoredOperation>>>(
        [id = id(), request_id, legacy = record().owner.empty()](const Lookup& get) {
          return read_operation(get, id, request_id, legacy);
        },
        std::move(then));
  }

  // -- carrying out decisions ----------------------------------------------------------------

  // Reserves the actor for a mutation started by `flow`, on behalf of `merchant` (empty: the
  // acquirer or the connector). Who waits for its outcome joins `waiters_`.
  // Shared stores: `again` runs the command anew if its commit loses a race with another
  // instance (it then follows what the winner recorded).
  // Reserves the payment's turn for a mutation; `decision` is its span (decision_span), the
  // parent of every acquirer call and commit it makes, ended by finish().
  void begin(Flow flow, tracing::Span decision, std::string merchant = {}, std::function<void()> again = {});
  // A mutation's span: a child of the request's when someone asks (`parent`), else a new
  // trace's root (background work), linked to the payment's own trace when that is another.
  tracing::Span decision_span(Flow flow, const tracing::TraceContext& parent) const;

  // Another instance holds the payment's lease: `again` runs after a short wait, until
  // `follow_until` (set on the first call); after that `sink` gets `give_up`.
  void follow_later(const ReplySink& sink, int64_t& follow_until, Reply give_up, std::function<void()> again);
  // The mutation just begun found another instance's lease: its joiners are told to retry,
  // the command that began it follows.
  void end_to_follow();

  // Answers a decision that needs no turn of the payment.
  void answer_now(Decision&& d, const ReplySink& sink);

  // Checks the decision against the copy it was made from (broken_invariant), commits it
  // (its audit entries chained ahead of its writes), then performs its effects; a failed
  // commit answers the waiters with a retryable error instead. `crash_at` names the
  // fault-injection point between the commit and the effects.
  void carry_out(Decision&& d, const char* crash_at = nullptr);
  void commit(Decision&& d, const char* crash_at);
  void perform(Decision&& d);

  void call_authorize();
  bool refused_cancel_of_undefined(const PendingOperation& op, const Result<domain::OperationOutcome>& r) const;
  // Asks the acquirer what became of the payment, as a refresh nobody waits for.
  void look_again();
  void ask_status();
  // A Create Payment waiting for the acquirer: past ctx_.answer_deadline its callers hear
  // `undefined`, and the outcome goes out by callback. The directory's sweeper keeps the time.
  void arm_answer_deadline();
  void on_answer_deadline(uint64_t attempt);
  void call_operation(PendingOperation op);
  void operation_done_again(const PendingOperation& op, const Result<domain::OperationOutcome>& r);
  void on_status(Result<std::optional<domain::Authorization>> status);

  // Ends the current mutation and starts the next deferred one, if any.
  void finish();

  void reply_all(const Reply& reply);

  // A commit failed: answer with a retryable error and forget the cached record, which may
  // no longer match the store.
  void abandon(const Error& e);

  // Runs `again` once the mutation in flight has finished.
  void defer(std::function<void()> again) { deferred_.push_back(std::move(again)); }

  // -- audit trail ---------------------------------------------------------------------------

  // Adds an entry to a batch the caller commits next, attributed to the merchant whose
  // mutation is in flight unless it names one. Buffered entries are committed first, so that
  // the chain reaches the store in order and its head never moves back.
  // Metrics and the event log see each event as it is recorded (before its commit lands);
  // `counted`: its metric moved already, when the request thread answered it (RepeatCache).
  void observe(const AuditEntry& e, bool counted = false) {
    if (!counted) {
      metrics::count_event(to_string(e.kind));
    }
    if (ctx_.on_event) {
      ctx_.on_event(id(), e);
    }
  }

  // `observe_later` takes the entries of a payment presumed new (presume_new) instead: they
  // are observed once its commit confirms it, as a payment that existed after all never had them.
  void audit(storage::Batch& batch, AuditEntry e, std::vector<AuditEntry>* observe_later = nullptr) {
    if (e.merchant.empty()) {
      e.merchant = inflight_merchant_;
    }
    if (!observe_later) {
      observe(e);
    }
    flush_audit(true);  // counted arrivals are sealed before the entry that follows them
    AuditEntry chained = audit_.chain.append(id(), std::move(e), batch);
    if (observe_later) {
      observe_later->push_back(std::move(chained));
    }
  }

  // For arrivals that change nothing (duplicates, refusals): the entry is buffered until the
  // messages already in the mailbox are handled, then rides along with the next group commit
  // and nobody waits for it. A burst of duplicates costs one commit and one chain head. If
  // the commit is lost to a storage failure the cached chain head is reloaded, so the next
  // entry still links to what is on disk. Once the chain is long, such arrivals are counted
  // instead (audit.hpp): `seal` puts the counts into the chain as one entry.
  void audit_now(AuditEntry e, bool counted = false);
  void flush_audit(bool seal = false);
  void flush_shared_audit();
  // A chained commit has landed, or failed (`lost_race`: another instance appended first):
  // `entries` are its audit_now() entries, to chain again.
  void on_audit_acked(bool lost_race, bool failed, std::vector<AuditEntry> entries);
  void seal_tally();

  // -- commands (payment_commands.cpp) -------------------------------------------------------

  void on_create(CreateCommand&& cmd);
  bool answer_replay_from_cache(const CreateCommand& cmd);
  void remember_repeat(const CreateCommand& cmd, const Decision& d);
  void remember_answer(const std::string& repeat_key, const std::string& merchant, const std::string& fingerprint,
                       const Reply& answer);
  void on_repeats(RepeatsCommand&& cmd);
  void on_terminal(TerminalCommand&& cmd);
  void on_operate(OperateCommand&& cmd);
  void on_event(EventCommand&& cmd);
  void on_refresh(RefreshCommand&& cmd);
  void on_recover(RecoverCommand&& cmd);
  void resume_on_hint(RecoverCommand&& cmd);
  void on_notified(NotifiedCommand&& cmd);
  void on_owner_action(OwnerActionCommand&& cmd);

  // Background reconciliation of an unknown outcome: status calls with backoff until the
  // record is marked orphaned.
  void schedule_reconcile();
  void on_reconcile_tick();
  void reconcile_in_background(std::function<void()> done, const tracing::TraceContext& parent = {});
  void mark_orphaned();
  void resume_operation(const std::string& request_id, const tracing::TraceContext& parent = {});

  // The acquirer this payment went to when it was created, with its owner's credentials.
  domain::Acquirer& payment_acquirer() const {
    return ctx_.acquirers->acquirer(record().acquirer_route, owner_of(record(), ctx_.core));
  }

  caf::event_based_actor* self_;
  const ActorContext& ctx_;
  Payment payment_;  // the record as last loaded or committed, and its etag

  Copy copy_ = Copy::kUnread;
  std::vector<std::function<void()>> awaiting_load_;  // commands that arrived before the record
  // Shared stores: the first Create Payment is decided as for a new payment without a read
  // (presume_new). Until its commit answers, the copy is a guess: the commands that arrive
  // meanwhile wait in `awaiting_confirmation_`, as they would for a load.
  std::vector<std::function<void()>> awaiting_confirmation_;
  const Error* load_failure_ = nullptr;                // set while a failed load is reported

  Flow flow_ = Flow::kNone;
  std::vector<ReplySink> waiters_;  // who hears the outcome of the mutation in flight
  std::shared_ptr<ppp::CreatePaymentRequest> inflight_create_;  // card data lives only here
  std::string inflight_request_id_;
  tracing::Span flow_span_;          // the mutation in flight's decision span
  tracing::TraceContext flow_trace_;  // its context: current while the mutation's steps run
  std::string inflight_fingerprint_;
  std::string inflight_repeat_key_;  // the Create Payment that started it, for the RepeatCache
  std::string inflight_merchant_;  // who asked for the mutation in flight; empty: acquirer, connector
  std::function<void()> on_finished_;  // recovery: told when its reconciliation has ended
  std::optional<OperateCommand> pending_cancel_;  // a cancel waiting for the payment's status
  // A list, not a deque: an empty deque holds a 512-byte block, and a payment's actor is made
  // for every payment in flight (thousands on a slow acquirer) while most never defer anything.
  std::list<std::function<void()>> deferred_;

  std::function<void()> again_;  // shared stores: reruns the mutation in flight after a lost race
  std::function<void()> recommit_;  // shared stores: reapplies a known acquirer answer after one
  int conflict_retries_ = 0;     // races lost in a row by the current command
  int following_ = 0;            // commands waiting to look again at another instance's lease
  bool stale_ = false;           // a commit lost a race: the cached record is outdated

  Told told_ = Told::kNothing;
  uint64_t create_attempt_ = 0;  // numbers create mutations, so that a stale deadline is ignored
  bool reconcile_pending_ = false;
  int reconcile_attempts_ = 0;

  AuditPipeline audit_;

  uint64_t handled_ = 0;
  // When the acquirer was last asked for the payment's status: refreshes ask it at most once
  // per kRefreshInterval.
  static constexpr std::chrono::milliseconds kRefreshInterval{1000};
  std::chrono::steady_clock::time_point last_status_asked_{};
  std::chrono::steady_clock::time_point last_resumed_on_hint_{};  // operations resumed on a notification
  bool refresh_scheduled_ = false;  // a look at the interval's end is on its way
};

}  // namespace idempay::actors
