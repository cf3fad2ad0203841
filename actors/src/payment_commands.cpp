// The payment actor's commands. Each asks the core (domain/payment_core.hpp) first for an
// answer that needs no turn of the payment, then waits for the payment's turn, reserves it
// (begin), asks the core for the decision and carries it out. What joins or waits for a
// mutation in flight is decided here: that is the actor's part of the bargain.
#include "payment_actor.hpp"

namespace idempay::actors {

tracing::Span PaymentActor::decision_span(Flow flow, const tracing::TraceContext& parent) const {
  const char* name = "payment reconcile";  // kBackground
  switch (flow) {
    case Flow::kCreate: name = "payment create"; break;
    case Flow::kOperation: name = "payment operation"; break;
    case Flow::kEvent: name = "payment event"; break;
    case Flow::kTerminal: name = "payment terminal"; break;
    case Flow::kRefresh: name = "payment refresh"; break;
    case Flow::kBackground: case Flow::kNone: break;
  }
  auto span = tracing::start_span(name, tracing::Kind::kInternal, parent);
  if (span.recording()) {
    span.set("idempay.payment_id", id());
    if (payment_.record) {
      if (auto own = tracing::parse_traceparent(record().trace); own && own->trace_id != span.context().trace_id) {
        span.link(*own);
      }
    }
  }
  return span;
}

void PaymentActor::begin(Flow flow, tracing::Span decision, std::string merchant, std::function<void()> again) {
  IDEMPAY_ASSERT(flow_ == Flow::kNone, "a mutation began while another was in flight");
  flow_ = flow;
  flow_span_ = std::move(decision);
  flow_trace_ = flow_span_.context();
  if (!merchant.empty()) {
    flow_span_.set("idempay.merchant", merchant);
  }
  ++create_attempt_;
  if (told_ == Told::kUndefinedThisCreate) {
    told_ = Told::kUndefined;
  }
  inflight_merchant_ = std::move(merchant);
  again_ = std::move(again);
}

namespace {

// Shared stores only: a copy of the command, to run it again after a lost race (the copy of a
// Create Payment holds card data, in memory only, for as long as the mutation runs).
template <class Command>
std::function<void()> rerun(const std::shared_ptr<PaymentActor>& me, void (PaymentActor::*handler)(Command&&),
                            const Command& cmd, bool shared) {
  if (!shared) {
    return {};
  }
  return [me, handler, cmd = Command(cmd)]() mutable { ((*me).*handler)(std::move(cmd)); };
}

}  // namespace

// -- Create Payment -----------------------------------------------------------------------------

void PaymentActor::on_create(CreateCommand&& cmd) {
  if (answer_replay_from_cache(cmd)) {
    return;
  }
  if (!presume_new() && wait_for_load(&PaymentActor::on_create, cmd)) {
    return;
  }
  std::string fingerprint = ppp::payment_fingerprint(ctx_.core.fingerprint_key, cmd.request);
  CreateArrival arrival{cmd.request, cmd.merchant, fingerprint};
  if (auto now = answer_create_now(payment_, arrival, ctx_.core)) {
    if (drop_presumption()) {
      return on_create(std::move(cmd));
    }
    remember_repeat(cmd, *now);
    return answer_now(std::move(*now), cmd.sink);
  }
  if (busy() && flow_ == Flow::kCreate) {
    // Only the very same request of the very same merchant joins the call in flight.
    if (fingerprint != inflight_fingerprint_ || cmd.merchant != inflight_merchant_) {
      return cmd.sink.deliver(payment_conflict(id()));
    }
    if (told_ == Told::kUndefinedThisCreate) {  // its callers were told `undefined` already: so is this one, now
      audit_now(by(cmd.merchant, audit_entry(AuditKind::kEventDuplicateReused, id(), fingerprint, {}, {},
                                             "undefined while the acquirer is still answering")));
      return cmd.sink.deliver(undefined_answer(id(), ctx_.core));
    }
    audit_now(by(cmd.merchant, audit_entry(AuditKind::kEventDuplicateReused, id(), fingerprint, {}, {},
                                           "joined the call in flight")));
    waiters_.push_back(std::move(cmd.sink));
    return;
  }
  if (busy() && payment_.record && is_unresolved(record().state)) {
    // Being reconciled in the background: answer "not known yet" now instead of waiting.
    audit_now(by(cmd.merchant, audit_entry(AuditKind::kEventDuplicateReused, id(), fingerprint, {}, {},
                                           "undefined while reconciling")));
    return cmd.sink.deliver(undefined_answer(id(), ctx_.core));
  }
  if (busy()) {
    return defer([me = shared_from_this(), cmd]() mutable { me->on_create(std::move(cmd)); });
  }
  domain::AcquirerRoute route;
  if (!payment_.record) {
    route.name = ctx_.acquirers->route_for(cmd.merchant, cmd.request.payment_method, cmd.request.test_suite);
    route.reference = ctx_.acquirers->acquirer(route.name, cmd.merchant).reference(id());
  }
  auto decision = decision_span(Flow::kCreate, cmd.sink.trace());
  arrival.trace = decision.context().traceparent();
  arrival.trace_state = decision.context().trace_state;
  Decision d = start_create(payment_, arrival, route, ctx_.core, now_unix_ms());
  if ((!d.commits() || d.next == Next::kFollow) && drop_presumption()) {
    return on_create(std::move(cmd));
  }
  if (d.next == Next::kFollow) {
    // Another instance is authorizing it: its outcome is this request's answer too.
    auto again = [me = shared_from_this(), cmd]() mutable { me->on_create(std::move(cmd)); };
    return follow_later(cmd.sink, cmd.follow_until, undefined_answer(id(), ctx_.core), std::move(again));
  }
  begin(Flow::kCreate, std::move(decision), cmd.merchant, rerun(shared_from_this(), &PaymentActor::on_create, cmd, shared()));
  waiters_.push_back(cmd.sink);
  inflight_fingerprint_ = fingerprint;
  inflight_repeat_key_ = std::move(cmd.repeat_key);
  bool new_intent = !payment_.record && d.next == Next::kAuthorize;
  inflight_create_ = std::make_shared<ppp::CreatePaymentRequest>(std::move(cmd.request));
  carry_out(std::move(d), new_intent ? "after-intent" : nullptr);
}

// Shared stores read the record again before a command, but a resolved payment's Create
// Payment answer never changes (owner, fingerprint and answer are fixed once the state is;
// operations change the state, never that answer): its replays and refusals are answered from
// the record last read, without a round trip to the database.
bool PaymentActor::answer_replay_from_cache(const CreateCommand& cmd) {
  if (!last_read_serves() || is_unresolved(record().state) || record().state == PaymentState::kUndefined) {
    return false;
  }
  std::string fingerprint = ppp::payment_fingerprint(ctx_.core.fingerprint_key, cmd.request);
  auto now = answer_create_now(payment_, CreateArrival{cmd.request, cmd.merchant, fingerprint}, ctx_.core);
  if (!now) {
    return false;
  }
  remember_repeat(cmd, *now);
  answer_now(std::move(*now), cmd.sink);
  return true;
}

// The stored answer given to a resolved payment's owner is the answer to these very bytes for
// good: the request threads may give it from now on (RepeatCache), and this actor records the
// arrivals they answer (on_repeats).
void PaymentActor::remember_repeat(const CreateCommand& cmd, const Decision& d) {
  if (d.answer && d.noted.size() == 1 && d.noted[0].kind == AuditKind::kEventDuplicateReused) {
    remember_answer(cmd.repeat_key, cmd.merchant, d.noted[0].fingerprint, *d.answer);
  }
}

// Only the stored answer of a payment whose answer can no longer change: an undefined one
// changes when its outcome is known.
void PaymentActor::remember_answer(const std::string& repeat_key, const std::string& merchant,
                                   const std::string& fingerprint, const Reply& answer) {
  if (repeat_key.empty() || !payment_.record || is_unresolved(record().state)
      || record().state == PaymentState::kUndefined || answer.outcome != Outcome::kDone
      || answer.body != record().response) {
    return;
  }
  ctx_.repeats->remember(repeat_key, id(), merchant, fingerprint, answer);
}

void PaymentActor::on_repeats(RepeatsCommand&& cmd) {
  if (!last_read_serves() && wait_for_load(&PaymentActor::on_repeats, cmd)) {
    return;
  }
  for (auto& arrival : ctx_.repeats->take(id())) {
    AuditEntry e = by(std::move(arrival.merchant),
                      audit_entry(AuditKind::kEventDuplicateReused, id(), std::move(arrival.fingerprint)));
    e.time = arrival.time;  // when it was answered, not when it is recorded
    audit_now(std::move(e), /*counted=*/true);
  }
  forget_unless_busy();
}

// -- POS terminal submission --------------------------------------------------------------------

void PaymentActor::on_terminal(TerminalCommand&& cmd) {
  if (wait_for_load(&PaymentActor::on_terminal, cmd)) {
    return;
  }
  if (auto now = answer_terminal_now(payment_)) {
    return answer_now(std::move(*now), cmd.sink);
  }
  if (busy()) {
    return defer([me = shared_from_this(), cmd]() mutable { me->on_terminal(std::move(cmd)); });
  }
  Decision d = submit_terminal(payment_, cmd.serial, ctx_.core, now_unix_ms());
  if (!d.commits()) {
    return answer_now(std::move(d), cmd.sink);
  }
  begin(Flow::kTerminal, decision_span(Flow::kTerminal, cmd.sink.trace()), {}, rerun(shared_from_this(), &PaymentActor::on_terminal, cmd, shared()));
  waiters_.push_back(cmd.sink);
  carry_out(std::move(d));
}

// -- cancel / settle / refund -------------------------------------------------------------------

void PaymentActor::on_operate(OperateCommand&& cmd) {
  if (wait_for_load(&PaymentActor::on_operate, cmd)) {
    return;
  }
  drop_unsplit_recipients(payment_, cmd.request, ctx_.core);
  const auto& req = cmd.request;
  std::string fingerprint = ppp::operation_fingerprint(ctx_.core.fingerprint_key, req);
  if (auto now = answer_operation_now(payment_, OperationArrival{req, cmd.merchant, fingerprint}, ctx_.core)) {
    return answer_now(std::move(*now), cmd.sink);
  }
  if (busy() && inflight_request_id_ == req.request_id) {
    if (fingerprint != inflight_fingerprint_) {
      Reply conflict = operation_request_conflict(req);
      audit_now(by(cmd.merchant, audit_entry(AuditKind::kOperationRefused, req.request_id, fingerprint, {}, {},
                                             conflict.refused->reason())));
      return cmd.sink.deliver(std::move(conflict));
    }
    audit_now(by(cmd.merchant, audit_entry(AuditKind::kOperationDuplicateReused, req.request_id, fingerprint, {}, {},
                                           "joined the call in flight")));
    waiters_.push_back(std::move(cmd.sink));
    return;
  }
  if (busy()) {
    return defer([me = shared_from_this(), cmd]() mutable { me->on_operate(std::move(cmd)); });
  }
  // The actor is reserved while the stored operation is read: a duplicate joins this request,
  // other mutations wait their turn.
  begin(Flow::kOperation, decision_span(Flow::kOperation, cmd.sink.trace()), cmd.merchant, rerun(shared_from_this(), &PaymentActor::on_operate, cmd, shared()));
  waiters_.push_back(cmd.sink);
  inflight_request_id_ = req.request_id;
  inflight_fingerprint_ = fingerprint;
  std::string request_id = req.request_id;
  load_operation(request_id, [me = shared_from_this(), cmd = std::move(cmd), fingerprint = std::move(fingerprint)](
                                 Result<std::optional<StoredOperation>> stored) {
    OperationArrival arrival{cmd.request, cmd.merchant, fingerprint};
    Decision d = start_operation(me->payment_, arrival, stored, me->ctx_.core, now_unix_ms());
    if (d.next == Next::kAskStatus) {
      me->pending_cancel_ = cmd;  // asked again once the acquirer has said what happened
    }
    if (d.next == Next::kFollow) {
      // Another instance operates on this payment: this request looks again after it.
      me->again_ = [me, cmd]() mutable {
        auto sink = cmd.sink;
        auto again = [me, cmd]() mutable { me->on_operate(std::move(cmd)); };
        // Then the operation's own refusal (a 500, which the gateway retries).
        auto give_up = operation_refusal(cmd.request, Refusal::kInProgress,
                                         "another instance is carrying out a request for this payment; retry");
        me->follow_later(sink, cmd.follow_until, std::move(give_up), std::move(again));
      };
    }
    me->carry_out(std::move(d));
  });
}

void PaymentActor::resume_operation(const std::string& request_id, const tracing::TraceContext& parent) {
  if (stale_ || (payment_.record && leased_elsewhere(record(), ctx_.core, now_unix_ms()))) {
    return;  // shared stores: another instance got there first; the sweep looks again later
  }
  begin(Flow::kOperation, decision_span(Flow::kOperation, parent));  // reserved while the operation is read
  load_operation(request_id, [me = shared_from_this(), request_id](Result<std::optional<StoredOperation>> stored) {
    auto op = stored ? domain::resume_operation(me->id(), request_id, *stored) : std::nullopt;
    if (!op) {
      return me->finish();
    }
    me->inflight_request_id_ = request_id;
    me->inflight_fingerprint_ = op->record.fingerprint;
    // Shared stores: taken over under the payment's lease; of two instances, one wins it.
    if (auto lease = take_lease(me->payment_, me->ctx_.core, now_unix_ms())) {
      lease->next = Next::kOperate;
      lease->operation = std::move(*op);
      return me->carry_out(std::move(*lease));
    }
    me->call_operation(std::move(*op));
  });
}

// -- acquirer webhooks and refreshes ------------------------------------------------------------

void PaymentActor::on_event(EventCommand&& cmd) {
  if (wait_for_load(&PaymentActor::on_event, cmd)) {
    return;
  }
  if (busy()) {
    return defer([me = shared_from_this(), cmd]() mutable { me->on_event(std::move(cmd)); });
  }
  begin(Flow::kEvent, decision_span(Flow::kEvent, cmd.sink.trace()), {}, rerun(shared_from_this(), &PaymentActor::on_event, cmd, shared()));  // while the inbox is read
  waiters_.push_back(cmd.sink);
  std::string event_id = cmd.event.event_id;
  read_then<Result<std::optional<storage::Versioned>>>(
      [event_id](const Lookup& get) { return get(Space::kInbox, event_id); },
      [me = shared_from_this(), cmd = std::move(cmd)](Result<std::optional<storage::Versioned>> seen) {
        Decision d = receive_event(me->payment_, cmd.event, seen, me->ctx_.core, now_unix_ms());
        if (d.commits()) {
          fault::crash_point("during-inbox-write");
        }
        me->carry_out(std::move(d));
      });
}

void PaymentActor::on_refresh(RefreshCommand&& cmd) {
  if (wait_for_load(&PaymentActor::on_refresh, cmd)) {
    return;
  }
  if (auto now = answer_refresh_now(payment_, cmd.merchant, cmd.asker, ctx_.core)) {
    return answer_now(std::move(*now), cmd.sink);
  }
  if (busy()) {
    return defer([me = shared_from_this(), cmd]() mutable { me->on_refresh(std::move(cmd)); });
  }
  Decision d = start_refresh(payment_);
  auto since = std::chrono::steady_clock::now() - last_status_asked_;
  if (d.next == Next::kAskStatus && since < kRefreshInterval) {
    // A flood of hints (inbound requests, a PSP's notifications) asks the acquirer at most
    // once per interval; one more look follows at its end, so that no hint goes unheard.
    if (!std::exchange(refresh_scheduled_, true)) {
      self_->delayed_send(self_, kRefreshInterval - since, refresh_atom::value,
                          RefreshCommand{id(), {}, ReplySink(), domain::Asker::kConnector});
    }
    d = Decision{};
    d.answer = Reply{Outcome::kDone, record().response};
  }
  if (d.next == Next::kEnd) {
    return answer_now(std::move(d), cmd.sink);
  }
  // Only an authenticated merchant is the actor of what the look records; an unauthenticated
  // hint is recorded as such, once per look it causes (the rest are coalesced above).
  bool by_merchant = cmd.asker == domain::Asker::kMerchant;
  begin(Flow::kRefresh, decision_span(Flow::kRefresh, cmd.sink.trace()), by_merchant ? cmd.merchant : std::string(),
        rerun(shared_from_this(), &PaymentActor::on_refresh, cmd, shared()));
  if (cmd.asker == domain::Asker::kHint) {
    audit_now(audit_entry(AuditKind::kAcquirerHint, id(), {}, {}, {},
                          "an unauthenticated notification named it: the acquirer is asked"));
  }
  waiters_.push_back(cmd.sink);
  carry_out(std::move(d));
}

// -- reconciliation and recovery ----------------------------------------------------------------

void PaymentActor::schedule_reconcile() {
  if (reconcile_attempts_ >= ctx_.reconcile_attempts) {
    return mark_orphaned();
  }
  reconcile_pending_ = true;
  auto delay = ctx_.reconcile_base * (1LL << std::min(reconcile_attempts_, 20));
  self_->delayed_send(self_, delay, reconcile_atom::value);
}

void PaymentActor::on_reconcile_tick() {
  reconcile_pending_ = false;
  if (!has_copy()) {
    if (load_failure_) {
      return schedule_reconcile();
    }
    return when_loaded(ReplySink(), [me = shared_from_this()] { me->on_reconcile_tick(); });
  }
  if (busy()) {
    return defer([me = shared_from_this()] { me->reconcile_in_background({}); });
  }
  reconcile_in_background({});
}

// `parent`: the recovery round that asked (a span of its own), or none (a trace of its own).
void PaymentActor::reconcile_in_background(std::function<void()> done, const tracing::TraceContext& parent) {
  int64_t now = now_unix_ms();
  // Shared stores: a payment another instance holds is its holder's to reconcile (the sweep
  // comes back once the lease has expired), and a record outdated by a lost race is left to
  // that sweep too.
  if (!payment_.record || !is_unresolved(record().state) || busy() || stale_
      || leased_elsewhere(record(), ctx_.core, now)) {
    forget_unless_busy();
    if (done) {
      done();
    }
    return;
  }
  begin(Flow::kBackground, decision_span(Flow::kBackground, parent));
  on_finished_ = std::move(done);
  if (auto lease = take_lease(payment_, ctx_.core, now)) {
    lease->next = Next::kAskStatus;
    return carry_out(std::move(*lease));
  }
  ask_status();
}

void PaymentActor::mark_orphaned() {
  auto d = busy() ? std::nullopt : orphan(payment_, now_unix_ms());
  if (!d) {
    return;
  }
  spdlog::error("payment {} is orphaned: the acquirer could not confirm its outcome", id());
  begin(Flow::kBackground, decision_span(Flow::kBackground, {}));
  carry_out(std::move(*d));
}

void PaymentActor::on_recover(RecoverCommand&& cmd) {
  if (wait_for_load(&PaymentActor::on_recover, cmd)) {
    return;
  }
  if (!cmd.hinted_by.empty()) {
    return resume_on_hint(std::move(cmd));
  }
  // Shared stores: the sweep offers every unfinished payment, again and again; a live lease
  // (another instance's, or this one's own mutation or reconciliation) means its holder is on it.
  if (payment_.record && !record().lease_owner.empty() && record().lease_until > now_unix_ms()) {
    forget_unless_busy();  // the next sweep looks at the record as stored then
    return cmd.sink.deliver(Reply{Outcome::kDone, "{}"});
  }
  // Operations left in flight first (same requestId, so at most once at the acquirer), then
  // the payment itself; the sink hears when that reconciliation has ended.
  for (const auto& request_id : cmd.operations) {
    defer([me = shared_from_this(), request_id, sink = cmd.sink] { me->resume_operation(request_id, sink.trace()); });
  }
  defer([me = shared_from_this(), sink = cmd.sink] {
    me->reconcile_in_background([sink] { sink.deliver(Reply{Outcome::kDone, "{}"}); }, sink.trace());
  });
  if (!busy()) {
    finish();
  }
}

// A notification through the owner's path says a refund may have ended: the operations in
// flight are asked of the acquirer again (their own keys: never a second refund), at most once
// per interval however many such notifications come.
void PaymentActor::resume_on_hint(RecoverCommand&& cmd) {
  auto now = std::chrono::steady_clock::now();
  bool owned = payment_.record && owner_of(record(), ctx_.core) == cmd.hinted_by;
  if (!owned || now - last_resumed_on_hint_ < kRefreshInterval) {
    forget_unless_busy();
    return;
  }
  last_resumed_on_hint_ = now;
  for (const auto& request_id : cmd.operations) {
    defer([me = shared_from_this(), request_id, trace = cmd.sink.trace()] { me->resume_operation(request_id, trace); });
  }
  if (!busy()) {
    finish();
  }
}

void PaymentActor::on_owner_action(OwnerActionCommand&& cmd) {
  if (wait_for_load(&PaymentActor::on_owner_action, cmd)) {
    return;
  }
  Decision d = owner_action(payment_, cmd.merchant, cmd.what, ctx_.core);
  if (!d.answer) {
    bool acted = cmd.act(id());
    d.answer = acted ? Reply{Outcome::kDone, "{}"}
                     : refusal(Refusal::kNotActed, "the acquirer did not act on the payment");
  }
  answer_now(std::move(d), cmd.sink);
}

void PaymentActor::on_notified(NotifiedCommand&& cmd) {
  if (wait_for_load(&PaymentActor::on_notified, cmd)) {
    return;
  }
  audit_now(audit_entry(AuditKind::kCallbackNotified, cmd.delivery_id, {}, {}, {}, "HTTP " + std::to_string(cmd.status)));
  forget_unless_busy();
}

}  // namespace idempay::actors
