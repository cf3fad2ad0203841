#include "payment_actor.hpp"

#include "directory.hpp"

namespace idempay::actors {

caf::behavior PaymentActor::behavior() {
  auto me = shared_from_this();
  // Deferred commands hold `me`; break that cycle when the actor ends (shutdown) so that
  // every waiting caller is answered (503, retryable) instead of waiting forever.
  // An actor that ends without retiring (shutdown) leaves the directory too.
  self_->attach_functor([me, addr = self_->address()] {
    me->flush_audit(true);  // entries buffered when the actor retires or the service stops
    me->release_waiters();
    me->ctx_.directory->forget(me->id(), addr);
  });
  return {
      [me](create_atom, CreateCommand& cmd) {
        tracing::Scope scope(cmd.sink.trace());  // the request's trace, while its command runs
        me->on_routed();
        me->on_create(std::move(cmd));
      },
      [me](operate_atom, OperateCommand& cmd) {
        tracing::Scope scope(cmd.sink.trace());
        me->on_routed();
        me->on_operate(std::move(cmd));
      },
      [me](event_atom, EventCommand& cmd) {
        tracing::Scope scope(cmd.sink.trace());
        me->on_routed();
        me->on_event(std::move(cmd));
      },
      [me](terminal_atom, TerminalCommand& cmd) {
        tracing::Scope scope(cmd.sink.trace());
        me->on_routed();
        me->on_terminal(std::move(cmd));
      },
      [me](refresh_atom, RefreshCommand& cmd) {
        tracing::Scope scope(cmd.sink.trace());
        me->on_routed();
        me->on_refresh(std::move(cmd));
      },
      [me](repeats_atom, RepeatsCommand& cmd) {
        me->on_routed();
        me->on_repeats(std::move(cmd));
      },
      [me](owner_atom, OwnerActionCommand& cmd) {
        tracing::Scope scope(cmd.sink.trace());
        me->on_routed();
        me->on_owner_action(std::move(cmd));
      },
      [me](recover_atom, RecoverCommand& cmd) {
        tracing::Scope scope(cmd.sink.trace());
        me->on_routed();
        me->on_recover(std::move(cmd));
      },
      [me](notified_atom, NotifiedCommand& cmd) {
        me->on_routed();
        me->on_notified(std::move(cmd));
      },
      [me](reconcile_atom) { me->on_reconcile_tick(); },
      [me](resume_atom, Continuation& step) {
        tracing::Scope scope(me->flow_trace_);  // a step of the mutation in flight, if any
        step.run();
      },
      [me](idle_atom) { me->on_idle(); },
      [me](deadline_atom, uint64_t attempt) { me->on_answer_deadline(attempt); },
      [me](flush_atom) { me->flush_audit(); },
  };
}

void PaymentActor::release_waiters() {
  awaiting_load_.clear();
  deferred_.clear();
  waiters_.clear();
  on_finished_ = nullptr;
}

void PaymentActor::on_routed() { ++handled_; }

void PaymentActor::on_idle() {
  if (busy() || !deferred_.empty() || reconcile_pending_ || refresh_scheduled_ || copy_ == Copy::kLoading
      || following_ > 0 || audit_.unacked > 0 || !audit_.buffer.empty()) {
    return;  // the directory offers again after another idle timeout
  }
  if (ctx_.directory->try_retire(id(), self_->address(), handled_)) {
    self_->quit();
  }
}

void PaymentActor::when_loaded(const ReplySink& sink, std::function<void()> again) {
  if (load_failure_) {
    return sink.deliver(error_reply(*load_failure_));
  }
  awaiting_load_.push_back(std::move(again));
  if (copy_ == Copy::kLoading) {
    return;
  }
  copy_ = Copy::kLoading;
  if (shared()) {
    flush_audit();  // the load must see this actor's own entries, or it would chain from behind them
    if (audit_.unacked > 0) {
      audit_.load_after = true;
      return;
    }
  }
  start_load();
}

// A mutation's continuation is run by on_loaded whether or not the load succeeded; the
// mutation's waiters are in waiters_, not behind a sink, so a failed load must end it here
// (a failover's lost commit followed by a failed reload once left them unanswered for good).
void PaymentActor::reload_for_mutation(std::function<void()> again) {
  if (load_failure_) {
    return abandon(*load_failure_);
  }
  when_loaded(ReplySink(), [me = shared_from_this(), again = std::move(again)] {
    if (me->load_failure_) {
      return me->abandon(*me->load_failure_);
    }
    again();
  });
}

void PaymentActor::start_load() {
  read_then<Result<PaymentSnapshot>>([id = id()](const Lookup& get) { return read_payment(get, id); },
                                     [me = shared_from_this()](Result<PaymentSnapshot> got) {
                                       me->on_loaded(std::move(got));
                                     });
}

void PaymentActor::on_loaded(Result<PaymentSnapshot> got) {
  copy_ = Copy::kNone;  // loaded, below, if it was
  if (got) {
    if (!audit_.buffer.empty()) {
      // Chained to entries whose commit failed: storing them would leave a gap in the chain.
      spdlog::warn("payment {}: dropping {} audit writes that follow a failed commit", id(), audit_.buffer.size());
      audit_.buffer.clear();
      std::move(audit_.buffered_entries.begin(), audit_.buffered_entries.end(), std::back_inserter(audit_.relink));
      audit_.buffered_entries.clear();
    }
    payment_.record = std::move(got->record);
    payment_.etag = got->etag;
    audit_.chain.reset(std::move(got->head));
    stale_ = false;
    audit_.tally = std::move(got->tally);
    audit_.tally_changed = false;
    copy_ = Copy::kLoaded;
  }
  // The commands that waited run in arrival order now: each finds the record loaded, or
  // answers the failure (and a later command starts a new load).
  for (auto& e : std::exchange(audit_.relink, {})) {
    audit_now(std::move(e));  // lost to another instance's append: chained after it now
  }
  auto waiting = std::exchange(awaiting_load_, {});
  load_failure_ = got ? nullptr : &got.error();
  for (auto& again : waiting) {
    again();
  }
  load_failure_ = nullptr;
  forget_unless_busy();  // served what waited for it; the next command reads again
}


// -- carrying out decisions ---------------------------------------------------------------------

namespace {

// A decision that breaks a rule of the core is never written (payment_core.hpp,
// broken_invariant). The test builds stop here, so that the test that got there fails loudly.
void report_broken_invariant(const std::string& payment_id, const std::string& rule) {
  spdlog::error("payment {}: an invariant of the payment core did not hold, nothing was written: {}", payment_id, rule);
#ifdef IDEMPAY_ABORT_ON_BROKEN_INVARIANT
  std::abort();
#endif
}

}  // namespace

void PaymentActor::answer_now(Decision&& d, const ReplySink& sink) {
  if (!d.broken.empty()) {
    report_broken_invariant(id(), d.broken);  // its answer is the retryable error
  }
  for (auto& e : d.noted) {
    audit_now(std::move(e));
  }
  if (d.answer) {
    sink.deliver(std::move(*d.answer));
  }
  forget_unless_busy();
}

namespace {

// Where `batch` writes `key` in `space`: its new etag has the same position in the result.
std::optional<size_t> position_of(const storage::Batch& batch, storage::Keyspace space, const std::string& key) {
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].keyspace == space && batch[i].key == key) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace

void PaymentActor::carry_out(Decision&& d, const char* crash_at) {
  if (auto broken = broken_invariant(payment_, d); !broken.empty()) {
    report_broken_invariant(id(), broken);
    reply_all(refusal(Refusal::kInvariantBroken, "an internal rule did not hold; nothing was done"));
    return finish();
  }
  for (auto& e : std::exchange(d.noted, {})) {
    audit_now(std::move(e));
  }
  if (!d.commits()) {
    return perform(std::move(d));
  }
  commit(std::move(d), crash_at);
}

// The decision was checked against the copy it was made from. Its writes are conditioned on
// that copy's etag: should the copy have moved on meanwhile (reloaded, or another commit
// landed first), the store refuses them and the command is decided again.
void PaymentActor::commit(Decision&& d, const char* crash_at) {
  bool chained = shared() && !d.audit.empty();
  if (chained && stale_) {
    // The chain's head in memory is one a lost commit left: chain from the stored one.
    auto held = std::make_shared<Decision>(std::move(d));
    forget_copy();
    return reload_for_mutation([me = shared_from_this(), held, crash_at] { me->commit(std::move(*held), crash_at); });
  }
  if (chained) {
    flush_audit(true);
    if (audit_.unacked > 0) {  // chained after the commit in flight: once it has landed
      auto held = std::make_shared<Decision>(std::move(d));
      audit_.waiting_carry = [me = shared_from_this(), held, crash_at] { me->commit(std::move(*held), crash_at); };
      return;
    }
    ++audit_.unacked;
    check_audit();
  }
  storage::Batch batch;
  batch.reserve(2 + d.writes.size());  // the entries, and their head queued for the log
  std::vector<AuditEntry> presumed_entries;
  for (auto& e : std::exchange(d.audit, {})) {
    audit(batch, std::move(e), copy_ == Copy::kPresumed ? &presumed_entries : nullptr);
  }
  std::move(d.writes.begin(), d.writes.end(), std::back_inserter(batch));
  d.writes.clear();
  fold_recovery_into_log_queue(id(), batch);
  auto payment_at = position_of(batch, Space::kPayments, id());
  std::optional<size_t> operation_at;
  if (d.operation && d.operation->etag == 0) {
    operation_at = position_of(batch, Space::kOperations, d.operation->key);
  }
  // The decision waits for the commit on the heap: a decision holds the whole record and the
  // answer, and the callback that carries it is moved several times on its way.
  auto held = std::make_shared<Decision>(std::move(d));
  ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>([me = shared_from_this(), held, payment_at,
                                                                        operation_at, chained, crash_at,
                                                                        presumed_entries = std::move(presumed_entries)](
                                                                           storage::CommitResult res) {
                       Decision& committed = *held;
                       if (chained) {
                         me->on_audit_acked(false, !res, {});  // its own entries are decided again
                       }
                       if (!res) {
                         return me->abandon(res.error());
                       }
                       auto waited = me->confirm_presumption();
                       for (const auto& e : presumed_entries) {
                         me->observe(e);
                       }
                       me->recommit_ = nullptr;
                       if (committed.record && payment_at) {
                         // The copy the next decision is made from: were it not the version
                         // just written, that decision's compare-and-swap would be made
                         // against a state that never was.
                         IDEMPAY_INVARIANT("committed-payment", (*res)[*payment_at] != me->payment_.etag,
                                           "a payment's commit landed without a new version");
                         me->payment_.record = std::move(committed.record);
                         me->payment_.etag = (*res)[*payment_at];
                       }
                       if (operation_at) {
                         committed.operation->etag = (*res)[*operation_at];
                       }
                       if (committed.callback) {  // durable now: the dispatcher may attempt it
                         caf::anon_send(me->ctx_.dispatcher, deliver_atom::value, std::move(*committed.callback));
                       }
                       if (committed.watch) {  // durable now: the watcher may look
                         caf::anon_send(me->ctx_.watcher, watch_atom::value, std::move(*committed.watch));
                       }
                       if (crash_at != nullptr) {
                         fault::crash_point(crash_at);
                       }
                       me->perform(std::move(committed));
                       for (auto& again : waited) {
                         again();  // they join the mutation in flight, or wait for it, as usual
                       }
                     }));
}

void PaymentActor::perform(Decision&& d) {
  switch (d.next) {
    case Next::kEnd:
      if (d.answer) {
        reply_all(*d.answer);
        if (flow_ == Flow::kCreate) {  // the gateway's retries of this very request, answered without us
          remember_answer(inflight_repeat_key_, inflight_merchant_, inflight_fingerprint_, *d.answer);
        }
      }
      return finish();
    case Next::kReconcileLater:
      if (d.answer) {
        reply_all(*d.answer);
        told_ = Told::kUndefined;
      }
      finish();
      return schedule_reconcile();
    case Next::kAuthorize:
      return call_authorize();
    case Next::kAskStatus:
      return ask_status();
    case Next::kOperate:
      return call_operation(std::move(*d.operation));
    case Next::kFollow:
      return end_to_follow();
  }
}

void PaymentActor::arm_answer_deadline() {
  if (flow_ != Flow::kCreate || ctx_.answer_deadline.count() <= 0) {
    return;
  }
  ctx_.directory->arm_deadline(id(), self_->id(), create_attempt_,
                               std::chrono::steady_clock::now() + ctx_.answer_deadline);
}

void PaymentActor::on_answer_deadline(uint64_t attempt) {
  if (!busy() || flow_ != Flow::kCreate || attempt != create_attempt_ || told_ == Told::kUndefinedThisCreate) {
    return;  // that create has ended (or this one answered already)
  }
  told_ = Told::kUndefinedThisCreate;  // the outcome then goes out by callback
  reply_all(undefined_answer(id(), ctx_.core));
  waiters_.clear();
}

void PaymentActor::call_authorize() {
  arm_answer_deadline();
  domain::AuthorizeCall call;
  const auto& request = *inflight_create_;
  call.key = id();
  call.amount = request.value;
  call.currency = request.currency;
  call.payment_method = request.payment_method;
  call.merchant_name = request.merchant_name;
  call.terminal_serial = record().terminal_serial;
  call.installments = request.installments;
  call.shopper_interaction = request.shopper_interaction;
  call.payable_for_seconds = ctx_.core.terms(request.payment_method).delay_to_cancel;
  call.first_asked_at = record().created_at;
  call.order = std::move(inflight_create_->order);  // personal data: in memory for this call only
  call.recipients = request.recipients;
  call.card = std::move(inflight_create_->card);  // card data lives only in this call
  call.secure_proxy_url = request.secure_proxy_url;
  spdlog::debug("payment {}: authorize (record etag {})", id(), payment_.etag);
  tracing::Scope scope(flow_trace_);  // the acquirer call is a span of the decision's
  payment_acquirer().authorize(
      std::move(call), in_actor<Result<domain::Authorization>>([me = shared_from_this()](
                                                                      Result<domain::Authorization> result) {
        if (!result) {
          // Outcome unknown: the record stays unresolved, the callers hear "undefined", and
          // the acquirer's status call under the same key settles it in the background.
          spdlog::warn("payment {}: acquirer call failed: {}", me->id(), result.error().message);
          return me->carry_out(authorize_failed(me->payment_, result.error(), me->inflight_merchant_, me->ctx_.core));
        }
        fault::crash_point("after-acquirer");
        if (me->shared()) {
          me->recommit_ = [me, a = *result] {
            if (me->payment_.record && !is_unresolved(me->record().state)) {
              // Another instance applied the outcome first (a takeover, a webhook): its answer.
              me->reply_all(Reply{Outcome::kDone, me->record().response});
              return me->finish();
            }
            me->carry_out(authorized(me->payment_, a, {me->flow_ == Flow::kBackground, me->told_undefined()},
                                     me->ctx_.core, now_unix_ms()));
          };
        }
        me->carry_out(authorized(me->payment_, *result, {me->flow_ == Flow::kBackground, me->told_undefined()},
                                 me->ctx_.core, now_unix_ms()),
                      "after-result");
      }));
}

void PaymentActor::ask_status() {
  arm_answer_deadline();
  last_status_asked_ = std::chrono::steady_clock::now();
  refresh_scheduled_ = false;  // this look serves the hints that waited for it
  spdlog::debug("payment {}: status (record etag {})", id(), payment_.etag);
  tracing::Scope scope(flow_trace_);
  payment_acquirer().status_of(id(), record().payment_method,
                               in_actor<Result<std::optional<domain::Authorization>>>(
                                   [me = shared_from_this()](Result<std::optional<domain::Authorization>> r) {
                                     me->on_status(std::move(r));
                                   }));
}

void PaymentActor::on_status(Result<std::optional<domain::Authorization>> status) {
  int64_t now = now_unix_ms();
  bool found = status && *status;
  if (found && flow_ != Flow::kRefresh) {
    fault::crash_point("after-acquirer");
  }
  switch (flow_) {
    case Flow::kRefresh:
      return carry_out(refreshed(payment_, status, ctx_.core, now));
    case Flow::kBackground: {
      Decision d = background_status(payment_, status, ctx_.core, now);
      if (d.next == Next::kReconcileLater) {
        ++reconcile_attempts_;
      } else if (found) {
        reconcile_attempts_ = 0;
      }
      return carry_out(std::move(d), found ? "after-result" : nullptr);
    }
    case Flow::kCreate:
      return carry_out(create_status(payment_, status, {false, told_undefined()}, inflight_merchant_, ctx_.core, now),
                       found ? "after-result" : nullptr);
    case Flow::kOperation: {  // a cancel of a payment whose outcome was unknown
      Decision d = cancel_status(payment_, pending_cancel_->request, status, ctx_.core, now);
      if (d.commits()) {
        // The outcome is recorded: the cancel runs again on it (void, or nothing to void).
        on_finished_ = [me = shared_from_this(), cmd = std::move(*pending_cancel_)]() mutable {
          me->on_operate(std::move(cmd));
        };
      }
      pending_cancel_.reset();
      return carry_out(std::move(d));
    }
    default:  // no other flow asks for a status
      spdlog::error("payment {}: a status answer no flow asked for", id());
      return finish();
  }
}

void PaymentActor::call_operation(PendingOperation op) {
  // Keyed per payment: two payments may use the same requestId, never the same acquirer key.
  std::string key = op.record.acquirer_key.empty() ? op.request.request_id : op.record.acquirer_key;
  domain::OperationCall call{op.request.kind,
                             std::move(key),
                             id(),
                             record().tid,
                             op.record.amount,
                             op.record.recipients,
                             record().currency,
                             record().payment_method,
                             record().state != PaymentState::kUndefined && !is_unresolved(record().state)};
  tracing::Scope scope(flow_trace_);
  payment_acquirer().operate(std::move(call), in_actor<Result<domain::OperationOutcome>>(
                                                  [me = shared_from_this(), op](Result<domain::OperationOutcome> r) {
                                                    if (!r) {
                                                      spdlog::warn("payment {}: acquirer {} failed: {}", me->id(),
                                                                   ppp::to_string(op.request.kind), r.error().message);
                                                    }
                                                    if (r && me->shared()) {
                                                      me->recommit_ = [me, op, r] { me->operation_done_again(op, r); };
                                                    }
                                                    bool look_again = me->refused_cancel_of_undefined(op, r);
                                                    me->carry_out(operation_done(me->payment_, op, r, me->ctx_.core, now_unix_ms()));
                                                    if (look_again) {
                                                      me->look_again();
                                                    }
                                                  }));
}

// The outcome's commit lost a race: another instance may have taken the operation over and
// recorded its outcome first, so the operation is read again with the payment.
void PaymentActor::operation_done_again(const PendingOperation& op, const Result<domain::OperationOutcome>& r) {
  load_operation(op.request.request_id, [me = shared_from_this(), op, r](Result<std::optional<StoredOperation>> stored) {
    me->carry_out(domain::operation_done_again(me->payment_, op, stored, r, me->ctx_.core, now_unix_ms()));
  });
}

// An acquirer that refuses to cancel a payment it has not told the outcome of has usually
// completed it meanwhile (a Pix paid, a boleto settled): what became of it is asked at once,
// so that the gateway hears the outcome instead of a cancellation that did not happen.
bool PaymentActor::refused_cancel_of_undefined(const PendingOperation& op, const Result<domain::OperationOutcome>& r) const {
  return op.request.kind == ppp::OperationKind::kCancel && r && !r->succeeded && !r->pending && !r->manual &&
         payment_.record && record().state == PaymentState::kUndefined;
}

void PaymentActor::look_again() {
  self_->send(self_, refresh_atom::value, RefreshCommand{id(), {}, ReplySink(), domain::Asker::kConnector});
}

void PaymentActor::finish() {
  if (copy_ == Copy::kPresumed) {  // ended before its commit confirmed that the payment is new
    forget_copy();
  }
  flow_ = Flow::kNone;
  if (flow_span_.recording() && payment_.record) {
    flow_span_.set("idempay.payment.state", std::string(to_string(record().state)));
  }
  flow_span_.end();
  flow_trace_ = {};
  again_ = nullptr;
  recommit_ = nullptr;
  conflict_retries_ = 0;
  forget_unless_busy();
  waiters_.clear();
  inflight_create_.reset();
  inflight_request_id_.clear();
  inflight_fingerprint_.clear();
  inflight_repeat_key_.clear();
  inflight_merchant_.clear();
  if (auto done = std::exchange(on_finished_, nullptr)) {
    done();
  }
  while (!busy() && !deferred_.empty()) {
    auto next = std::move(deferred_.front());
    deferred_.pop_front();
    next();
  }
}

void PaymentActor::end_to_follow() {
  auto again = std::exchange(again_, nullptr);
  for (size_t i = 1; i < waiters_.size(); ++i) {
    waiters_[i].deliver(in_progress_elsewhere(id()));
  }
  waiters_.clear();
  forget_copy();
  if (again) {
    deferred_.push_front(std::move(again));  // it looks again (follow_later) once reloaded
  }
  finish();
}

void PaymentActor::follow_later(const ReplySink& sink, int64_t& follow_until, Reply give_up,
                                std::function<void()> again) {
  int64_t now = now_unix_ms();
  if (follow_until == 0) {
    follow_until = now + ctx_.follow_timeout.count();
  }
  if (now >= follow_until) {
    return sink.deliver(std::move(give_up));
  }
  ++following_;
  self_->delayed_send(self_, ctx_.follow_interval, resume_atom::value,
                      Continuation{[me = shared_from_this(), again = std::move(again)] {
                        --me->following_;
                        me->forget_unless_busy();
                        again();
                      }});
}

void PaymentActor::reply_all(const Reply& reply) {
  for (auto& s : waiters_) {
    s.deliver(reply);
  }
}

void PaymentActor::abandon(const Error& e) {
  constexpr int kMaxRaces = 5;
  if (e.code == ErrorCode::kConflict && shared()) {
    stale_ = true;
    if (recommit_ && conflict_retries_ < kMaxRaces) {
      // The acquirer has answered: its answer is applied again to the record as stored now
      // (another instance appended to the audit chain, or applied the same outcome first),
      // never asked for again. The mutation and its waiters stay.
      ++conflict_retries_;
      forget_copy();
      return reload_for_mutation(recommit_);
    }
    if (again_ && conflict_retries_ < kMaxRaces) {
      // Another instance committed first: run the command again on what it recorded. Whoever
      // joined this attempt is told to retry; the command that started it is run again.
      spdlog::debug("payment {}: lost a race with another instance; following its record", id());
      auto again = std::exchange(again_, nullptr);
      int races = conflict_retries_ + 1;
      for (size_t i = 1; i < waiters_.size(); ++i) {
        waiters_[i].deliver(error_reply(Error{ErrorCode::kUnavailable, "concurrent update; retry"}));
      }
      waiters_.clear();
      forget_copy();
      deferred_.push_front(std::move(again));
      finish();
      conflict_retries_ = races;
      return;
    }
  }
  // A storage outage is logged once, by the store, not once per request it refuses.
  spdlog::log(e.code == ErrorCode::kUnavailable ? spdlog::level::debug : spdlog::level::warn, "payment {}: {}", id(),
              e.message);
  reply_all(error_reply(e.code == ErrorCode::kConflict ? Error{ErrorCode::kUnavailable, "concurrent update; retry"}
                                                       : e));
  forget_copy();
  finish();
}

// -- audit trail ----------------------------------------------------------------------------------

void PaymentActor::audit_now(AuditEntry e, bool counted) {
  if (e.time == 0) {  // set already for an arrival answered earlier, without this actor
    e.time = now_unix_ms();
  }
  observe(e, counted);
  if (!payment_.record) {
    return;  // no chain for a payment that does not exist
  }
  if (shared() && stale_) {
    // Never chained onto a head a lost commit left: once the stored head is loaded.
    audit_.relink.push_back(std::move(e));
    if (!busy() && copy_ != Copy::kLoading) {
      forget_copy();
      when_loaded(ReplySink(), [] {});
    }
    return;
  }
  // Bounded, so that a long burst still reaches the store as it goes.
  constexpr size_t kMaxBufferedEntries = 32;
  bool first = audit_.buffer.empty() && !audit_.tally_changed;
  // Counts are kept by one instance only: a shared store keeps every arrival as an entry.
  if (!shared() && is_repeat(e.kind) && audit_.chain.head().seq >= kIndividualEntries) {
    audit_.tally.add(e, e.time);
    audit_.tally_changed = true;
    if (audit_.tally.total() >= kSealEvery) {
      seal_tally();
    }
  } else {
    if (shared()) {
      audit_.buffered_entries.push_back(e);
    }
    if (audit_.buffer.empty()) {
      audit_.buffered_after = audit_.chain.head().seq;
    }
    audit_.chain.append(id(), std::move(e), audit_.buffer);
  }
  if (!audit_.buffer.empty() && audit_.chain.head().seq - audit_.buffered_after > kMaxBufferedEntries) {
    flush_audit();
  } else if (first) {
    self_->send(self_, flush_atom::value);  // behind the messages already queued
  }
}

void PaymentActor::seal_tally() {
  audit_.chain.append(id(), audit_entry(AuditKind::kArrivalsCounted, id(), {}, {}, {}, audit_.tally.encode()), audit_.buffer);
  audit_.buffer.push_back({Space::kAudit, audit_tally_key(id()), std::nullopt, std::nullopt, true});
  audit_.tally = ArrivalTally{};
  audit_.tally_changed = false;
}

void PaymentActor::flush_audit(bool seal) {
  if (seal && !audit_.tally.empty()) {
    seal_tally();
  } else if (audit_.tally_changed) {
    // One key rewritten per burst: the counts survive a crash as the buffered entries would.
    audit_.buffer.push_back({Space::kAudit, audit_tally_key(id()), audit_.tally.encode(), std::nullopt, true});
    audit_.tally_changed = false;
  }
  if (audit_.buffer.empty()) {
    return;
  }
  if (shared()) {
    return flush_shared_audit();
  }
  auto on_failure = in_actor<Error>([me = shared_from_this()](const Error&) {
    if (!me->busy()) {
      me->forget_copy();
    }
  });
  // Only a failure comes back to the actor: a success changes nothing here, and a message per
  // commit would cost replays another scheduling of the actor.
  ctx_.store->commit_riding_along(std::exchange(audit_.buffer, {}), [on_failure](storage::CommitResult r) {
    if (!r) {
      on_failure(r.error());
    }
  });
}

// Another instance may append to this payment's chain too, and a commit chained from a head
// that lost a race must fail with it: one chained commit at a time is in flight (a burst still
// shares one), a load waits for it (it must see this actor's own entries), and entries that
// lost are chained again after the winner's once the head is reloaded.
void PaymentActor::flush_shared_audit() {
  if (audit_.unacked > 0) {
    audit_.flush_wanted = true;
    return;
  }
  ++audit_.unacked;
  check_audit();
  auto back = in_actor<storage::CommitResult>(
      [me = shared_from_this(), entries = std::exchange(audit_.buffered_entries, {})](storage::CommitResult r) mutable {
        me->on_audit_acked(!r && r.error().code == ErrorCode::kConflict, !r, std::move(entries));
      });
  ctx_.store->commit_riding_along(std::exchange(audit_.buffer, {}), std::move(back));
}

void PaymentActor::on_audit_acked(bool lost_race, bool failed, std::vector<AuditEntry> entries) {
  --audit_.unacked;
  check_audit();
  if (failed) {
    if (lost_race) {
      std::move(entries.begin(), entries.end(), std::back_inserter(audit_.relink));
    }
    // Chained after the failed commit: they go with it, to be chained again.
    std::move(audit_.buffered_entries.begin(), audit_.buffered_entries.end(), std::back_inserter(audit_.relink));
    audit_.buffered_entries.clear();
    audit_.buffer.clear();
    audit_.flush_wanted = false;
    stale_ = true;
    forget_copy();
  }
  if (audit_.load_after) {
    audit_.load_after = false;
    return start_load();
  }
  if (auto carry = std::exchange(audit_.waiting_carry, nullptr)) {
    return failed ? reload_for_mutation(std::move(carry)) : carry();
  }
  if (std::exchange(audit_.flush_wanted, false)) {
    flush_shared_audit();
  } else if (!audit_.relink.empty() && copy_ == Copy::kNone && !busy()) {
    when_loaded(ReplySink(), [] {});  // chain them again now, not at the next request
  }
}

caf::behavior payment_actor(caf::event_based_actor* self, const ActorContext* context, std::string payment_id) {
  auto actor = std::make_shared<PaymentActor>(self, context, std::move(payment_id));
  return actor->behavior();
}

}  // namespace idempay::actors
