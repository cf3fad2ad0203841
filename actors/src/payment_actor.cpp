// One actor per paymentId serialises everything that happens to that payment. Each request
// runs as a chain of steps; a step that waits (a storage commit, an acquirer call) resumes
// through a Continuation message, so no worker thread ever blocks and other messages keep
// flowing: replays are answered at once, overlapping creates join the call in flight, and
// other mutations wait their turn in `deferred_`.
#include <algorithm>
#include <deque>

#include <spdlog/spdlog.h>

#include "idempay/protocol/json_writer.hpp"
#include "audit.hpp"
#include "idempay/protocol/fault.hpp"
#include "messages.hpp"
#include "records.hpp"

namespace idempay::actors {

namespace {

using storage::Keyspace;
using Clock = std::chrono::steady_clock;

Reply error_reply(unsigned status, std::string_view code, std::string_view message) {
  return Reply{status, ppp::write_error(code, message)};
}

Reply error_reply(const Error& e) {
  switch (e.code) {
    case ErrorCode::kNotFound: return error_reply(404, to_string(e.code), e.message);
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kConflict:
    case ErrorCode::kIllegalState: return error_reply(400, to_string(e.code), e.message);
    case ErrorCode::kUnavailable: return error_reply(503, to_string(e.code), e.message);
    default: return error_reply(500, to_string(e.code), e.message);
  }
}

class PaymentActor : public std::enable_shared_from_this<PaymentActor> {
public:
  PaymentActor(caf::event_based_actor* self, const ActorContext* context, caf::actor router,
               std::string payment_id)
      : self_(self), ctx_(*context), router_(std::move(router)), id_(std::move(payment_id)) {}

  caf::behavior behavior() {
    auto me = shared_from_this();
    // Deferred commands hold `me`; break that cycle when the actor ends (shutdown) so that
    // every waiting caller is answered (503, retryable) instead of waiting forever.
    self_->attach_functor([me] { me->release_waiters(); });
    return {
        [me](create_atom, CreateCommand& cmd) {
          me->on_routed();
          me->on_create(std::move(cmd));
        },
        [me](operate_atom, OperateCommand& cmd) {
          me->on_routed();
          me->on_operate(std::move(cmd));
        },
        [me](event_atom, EventCommand& cmd) {
          me->on_routed();
          me->on_event(std::move(cmd));
        },
        [me](terminal_atom, TerminalCommand& cmd) {
          me->on_routed();
          me->on_terminal(std::move(cmd));
        },
        [me](refresh_atom, RefreshCommand& cmd) {
          me->on_routed();
          me->on_refresh(std::move(cmd));
        },
        [me](recover_atom, RecoverCommand& cmd) {
          me->on_routed();
          me->on_recover(std::move(cmd));
        },
        [me](notified_atom, NotifiedCommand& cmd) {
          me->on_routed();
          me->on_notified(std::move(cmd));
        },
        [me](reconcile_atom) { me->on_reconcile_tick(); },
        [me](resume_atom, Continuation& step) { step.run(); },
        [me](idle_atom) { me->on_idle(); },
    };
  }

private:
  // -- plumbing ----------------------------------------------------------------------------

  void release_waiters() {
    deferred_.clear();
    create_waiters_.clear();
    op_waiters_.clear();
  }

  template <class T>
  std::function<void(T)> in_actor(std::function<void(T)> fn) {
    return actors::in_actor<T>(self_, std::move(fn));
  }

  void on_routed() {
    ++handled_;
    last_active_ = Clock::now();
    if (!idle_armed_) {
      idle_armed_ = true;
      self_->delayed_send(self_, ctx_.idle_timeout, idle_atom::value);
    }
  }

  // Retire only when nothing is in flight and the router agrees that every message it
  // forwarded has been handled.
  void on_idle() {
    auto idle_for = Clock::now() - last_active_;
    if (busy_ || !deferred_.empty() || reconcile_pending_ || idle_for < ctx_.idle_timeout) {
      auto wait = busy_ ? ctx_.idle_timeout
                        : std::chrono::duration_cast<std::chrono::milliseconds>(ctx_.idle_timeout - idle_for);
      self_->delayed_send(self_, std::max(wait, std::chrono::milliseconds(1)), idle_atom::value);
      return;
    }
    idle_armed_ = false;
    auto me = shared_from_this();
    // caf::infinite: the router always answers, and a finite timeout would keep every
    // retired actor alive in CAF's clock until it fired.
    self_->request(router_, caf::infinite, retire_atom::value, id_, handled_)
        .then([me](bool allowed) {
          if (allowed) {
            me->self_->quit();
          } else if (!me->idle_armed_) {
            me->idle_armed_ = true;
            me->self_->delayed_send(me->self_, me->ctx_.idle_timeout, idle_atom::value);
          }
        });
  }

  // Loads the payment record on first use. False (and the sink answered) on a read failure.
  bool ensure_loaded(const ReplySink& sink) {
    if (loaded_) {
      return true;
    }
    auto got = ctx_.store->get(Keyspace::kPayments, id_);
    if (!got) {
      sink.deliver(error_reply(got.error()));
      return false;
    }
    record_.reset();
    etag_ = 0;
    if (*got) {
      auto decoded = decode_payment((*got)->value);
      if (!decoded) {
        spdlog::error("payment {}: stored record unreadable: {}", id_, decoded.error().message);
        sink.deliver(error_reply(decoded.error()));
        return false;
      }
      record_ = std::move(*decoded);
      etag_ = (*got)->etag;
    }
    auto head = ctx_.store->get(Keyspace::kAudit, audit_head_key(id_));
    if (!head) {
      sink.deliver(error_reply(head.error()));
      return false;
    }
    audit_.reset(*head ? decode_head((*head)->value).value_or(AuditHead{}) : AuditHead{});
    loaded_ = true;
    return true;
  }

  // -- audit trail ---------------------------------------------------------------------------

  static AuditEntry entry(std::string kind, std::string ref, std::string fingerprint = {},
                          std::string_view before = {}, std::string_view after = {}, std::string detail = {}) {
    AuditEntry e;
    e.kind = std::move(kind);
    e.ref = std::move(ref);
    e.fingerprint = std::move(fingerprint);
    e.before = std::string(before);
    e.after = std::string(after);
    e.detail = std::move(detail);
    return e;
  }

  void audit(storage::Batch& batch, AuditEntry e) { audit_.append(id_, std::move(e), batch); }

  // For arrivals that change nothing (duplicates, refusals): the entry rides along with the
  // next group commit and nobody waits for it. If it is lost to a storage failure the cached
  // chain head is reloaded, so the next entry still links to what is on disk.
  void audit_now(AuditEntry e) {
    if (!record_) {
      return;  // no chain for a payment that does not exist
    }
    storage::Batch batch;
    audit(batch, std::move(e));
    ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>([me = shared_from_this()](storage::CommitResult r) {
      if (!r && !me->busy_) {
        me->loaded_ = false;
      }
    }));
  }

  // Ends the current mutation and starts the next deferred one, if any.
  void finish() {
    busy_ = false;
    background_ = false;
    create_waiters_.clear();
    op_waiters_.clear();
    inflight_request_id_.clear();
    while (!busy_ && !deferred_.empty()) {
      auto next = std::move(deferred_.front());
      deferred_.pop_front();
      next();
    }
  }

  void reply_all(std::vector<ReplySink>& sinks, const Reply& reply) {
    for (auto& s : sinks) {
      s.deliver(reply);
    }
  }

  // A commit failed: answer with a retryable error and forget the cached record, which may
  // no longer match the store.
  void abandon(std::vector<ReplySink>& sinks, const Error& e) {
    spdlog::warn("payment {}: {}", id_, e.message);
    reply_all(sinks, error_reply(e.code == ErrorCode::kConflict ? Error{ErrorCode::kUnavailable, "concurrent update; retry"} : e));
    loaded_ = false;
    finish();
  }

  // -- Create Payment ----------------------------------------------------------------------

  void on_create(CreateCommand cmd) {
    if (!ensure_loaded(cmd.sink)) {
      return;
    }
    std::string fingerprint = ppp::payment_fingerprint(ctx_.fingerprint_key, cmd.request);
    if (record_ && record_->fingerprint != fingerprint) {
      audit_now(entry("event_failed", id_, fingerprint, {}, {}, "refused: a different payment under this paymentId"));
      return cmd.sink.deliver(error_reply(400, "payment-conflict",
                                          "paymentId " + id_ + " was already used for a different payment"));
    }
    if (busy_ && !create_waiters_.empty()) {
      if (fingerprint != inflight_fingerprint_) {
        return cmd.sink.deliver(error_reply(400, "payment-conflict",
                                            "paymentId " + id_ + " is in use by a different payment"));
      }
      audit_now(entry("event_duplicate_reused", id_, fingerprint, {}, {}, "joined the call in flight"));
      create_waiters_.push_back(std::move(cmd.sink));  // coalesce onto the call in flight
      return;
    }
    if (busy_ && create_waiters_.empty() && record_ && is_unresolved(record_->state)) {
      // Being reconciled in the background: answer "not known yet" now instead of waiting.
      audit_now(entry("event_duplicate_reused", id_, fingerprint, {}, {}, "undefined while reconciling"));
      return cmd.sink.deliver(Reply{200, unresolved_response()});
    }
    bool pos_needs_work = record_ && pos_charge_due();
    if (record_ && !is_unresolved(record_->state) && !pos_needs_work) {
      audit_now(entry("event_duplicate_reused", id_, fingerprint));
      return cmd.sink.deliver(Reply{200, record_->response});  // same question, same answer
    }
    if (busy_) {
      deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_create(std::move(cmd)); });
      return;
    }
    busy_ = true;
    inflight_fingerprint_ = fingerprint;
    create_waiters_.push_back(cmd.sink);
    if (pos_needs_work && record_->pos_phase == kIdentifyTerminal) {
      return start_pos_charge(std::move(cmd.request));
    }
    if (record_) {
      return reconcile(std::move(cmd.request));
    }
    write_intent(std::move(cmd.request), std::move(fingerprint));
  }

  // -- POS (notes/ppp.md §10): identify terminal -> await terminal -> final ---------------

  static constexpr std::string_view kIdentifyTerminal = "identify-terminal";
  static constexpr std::string_view kAwaitPos = "await-pos";

  static bool is_pos(std::string_view method) { return method.rfind("Venda Direta", 0) == 0; }

  // True when a Create Payment must do more than replay: the terminal is known but the charge
  // has not started, or it started and its answer was never recorded (a crash in between).
  bool pos_charge_due() const {
    if (record_->state != PaymentState::kUndefined || !is_pos(record_->payment_method)) {
      return false;
    }
    return (record_->pos_phase == kIdentifyTerminal && !record_->terminal_serial.empty()) ||
           (record_->pos_phase == kAwaitPos && record_->tid.empty());
  }

  // The identify-terminal -> await-pos compare-and-swap: only its winner starts the charge.
  void start_pos_charge(ppp::CreatePaymentRequest request) {
    PaymentRecord updated = *record_;
    updated.pos_phase = std::string(kAwaitPos);
    updated.response = create_response(updated, "pending", "waiting for the terminal");
    updated.updated_at = now_unix_ms();
    auto req = std::make_shared<ppp::CreatePaymentRequest>(std::move(request));
    storage::Batch batch;
    audit(batch, entry("event_processing_started", id_, updated.fingerprint, {}, {}, "await-pos: charging terminal " + updated.terminal_serial));
    batch.push_back({Keyspace::kPayments, id_, encode(updated), etag_});
    ctx_.store->commit(std::move(batch),
                       in_actor<storage::CommitResult>([me = shared_from_this(), updated, req](storage::CommitResult res) {
                         if (!res) {
                           return me->abandon(me->create_waiters_, res.error());
                         }
                         me->record_ = updated;
                         me->etag_ = res->back();
                         me->call_authorize(std::move(*req));
                       }));
  }

  void on_terminal(TerminalCommand cmd) {
    if (!ensure_loaded(cmd.sink)) {
      return;
    }
    if (!record_ || !is_pos(record_->payment_method)) {
      return cmd.sink.deliver(error_reply(404, "not-found", "no POS payment " + id_));
    }
    if (busy_) {
      deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_terminal(std::move(cmd)); });
      return;
    }
    if (record_->terminal_serial == cmd.serial) {
      return cmd.sink.deliver(Reply{200, R"({"accepted":true})"});
    }
    if (record_->pos_phase != kIdentifyTerminal || !record_->terminal_serial.empty()) {
      return cmd.sink.deliver(error_reply(409, "terminal-conflict", "this payment already has its terminal"));
    }
    busy_ = true;
    op_waiters_.push_back(cmd.sink);
    PaymentRecord updated = *record_;
    updated.terminal_serial = cmd.serial;
    updated.updated_at = now_unix_ms();
    storage::Batch batch;
    audit(batch, entry("terminal_submitted", cmd.serial));
    batch.push_back({Keyspace::kPayments, id_, encode(updated), etag_});
    ctx_.store->commit(std::move(batch),
                       in_actor<storage::CommitResult>([me = shared_from_this(), updated](storage::CommitResult res) {
                         if (!res) {
                           return me->abandon(me->op_waiters_, res.error());
                         }
                         me->record_ = updated;
                         me->etag_ = res->back();
                         me->reply_all(me->op_waiters_, Reply{200, R"({"accepted":true})"});
                         me->finish();
                       }));
  }

  // Persists the intent before the acquirer hears of the payment (put-if-absent).
  void write_intent(ppp::CreatePaymentRequest request, std::string fingerprint) {
    PaymentRecord r;
    r.state = PaymentState::kProcessing;
    r.amounts.authorized = request.value;
    r.currency = request.currency;
    r.payment_method = request.payment_method;
    r.order_id = request.order_id;
    r.reference = request.reference;
    r.transaction_id = request.transaction_id;
    r.merchant = request.merchant_name;
    r.fingerprint = std::move(fingerprint);
    r.callback_url = request.callback_url;
    r.card = request.card_summary;
    r.created_at = r.updated_at = now_unix_ms();
    bool pos = is_pos(request.payment_method);
    if (pos) {
      // The first POS call only asks for the terminal; nothing reaches the acquirer yet.
      r.state = PaymentState::kUndefined;
      r.pos_phase = std::string(kIdentifyTerminal);
      r.response = create_response(r, "pending", "identify the terminal");
    }
    storage::Batch batch{{Keyspace::kPayments, id_, encode(r), 0}};
    audit(batch, entry("event_received", id_, r.fingerprint));
    audit(batch, pos ? entry("event_processed", id_, r.fingerprint, "", to_string(r.state), "identify-terminal")
                     : entry("event_processing_started", id_, r.fingerprint, "", to_string(r.state)));
    auto req = std::make_shared<ppp::CreatePaymentRequest>(std::move(request));
    if (pos) {
      return ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>([me = shared_from_this(), r](storage::CommitResult res) {
        if (!res) {
          return me->abandon(me->create_waiters_, res.error());
        }
        me->record_ = r;
        me->etag_ = res->front();
        me->reply_all(me->create_waiters_, Reply{200, r.response});
        me->finish();
      }));
    }
    ctx_.store->commit(std::move(batch),
                       in_actor<storage::CommitResult>([me = shared_from_this(), r, req](storage::CommitResult res) {
                         if (!res) {
                           return me->abandon(me->create_waiters_, res.error());
                         }
                         me->record_ = r;
                         me->etag_ = res->front();
                         fault::crash_point("after-intent");
                         me->call_authorize(std::move(*req));
                       }));
  }

  // A record left `processing` (crash, acquirer failure): ask the acquirer what it did under
  // this key; authorize (same key, so at most one charge) only if it never saw the payment.
  void reconcile(ppp::CreatePaymentRequest request) {
    auto req = std::make_shared<ppp::CreatePaymentRequest>(std::move(request));
    ctx_.acquirer->status(id_, in_actor<Result<std::optional<acquirer::Authorization>>>(
                                   [me = shared_from_this(), req](Result<std::optional<acquirer::Authorization>> r) {
                                     if (!r) {
                                       return me->on_authorized(tl::unexpected(r.error()));
                                     }
                                     if (*r) {
                                       return me->on_authorized(std::move(**r));
                                     }
                                     me->call_authorize(std::move(*req));
                                   }));
  }

  void call_authorize(ppp::CreatePaymentRequest request) {
    acquirer::AuthorizeCall call;
    call.key = id_;
    call.amount = request.value;
    call.currency = request.currency;
    call.payment_method = request.payment_method;
    call.merchant_name = request.merchant_name;
    call.terminal_serial = record_ ? record_->terminal_serial : "";
    call.card = std::move(request.card);  // card data lives only in this call
    ctx_.acquirer->authorize(std::move(call), in_actor<Result<acquirer::Authorization>>(
                                                  [me = shared_from_this()](Result<acquirer::Authorization> r) {
                                                    me->on_authorized(std::move(r));
                                                  }));
  }

  void on_authorized(Result<acquirer::Authorization> result) {
    if (!result) {
      // Outcome unknown: the record stays unresolved, the callers hear "undefined", and the
      // acquirer's status call under the same key settles it in the background (never a
      // second authorization under a new key).
      spdlog::warn("payment {}: acquirer call failed: {}", id_, result.error().message);
      audit_now(entry("event_failed", id_, record_->fingerprint, {}, {}, "acquirer: " + result.error().message));
      reply_all(create_waiters_, Reply{200, unresolved_response()});
      told_undefined_ = true;
      finish();
      return schedule_reconcile();
    }
    fault::crash_point("after-acquirer");
    PaymentRecord updated = *record_;
    const auto& a = *result;
    updated.state = a.status == acquirer::AuthorizationStatus::kApproved ? PaymentState::kApproved
                    : a.status == acquirer::AuthorizationStatus::kDenied ? PaymentState::kDenied
                                                                          : PaymentState::kUndefined;
    updated.tid = a.tid;
    updated.nsu = a.nsu;
    updated.authorization_id = a.authorization_id;
    updated.acquirer = a.acquirer;
    updated.acquirer_revision = a.revision;
    updated.document = a.document;
    updated.response = create_response(updated, a.code, a.message);
    updated.updated_at = now_unix_ms();
    storage::Batch batch;
    audit(batch, entry("event_processed", id_, record_->fingerprint, to_string(record_->state), to_string(updated.state),
                       background_ ? "reconciled with the acquirer" : ""));
    // Whoever heard "undefined" (or nothing, before a crash) learns the final outcome by callback.
    std::optional<OutboxEntry> callback;
    bool final = updated.state != PaymentState::kUndefined;
    if (final && (background_ || told_undefined_) && !updated.callback_url.empty()) {
      callback = new_callback(updated);
      batch.push_back({Keyspace::kOutbox, callback->id, encode(*callback), 0});
      audit(batch, entry("delivery_written", callback->id));
    }
    batch.push_back({Keyspace::kPayments, id_, encode(updated), etag_});
    ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>(
                                             [me = shared_from_this(), updated, callback](storage::CommitResult res) {
                                               if (!res) {
                                                 return me->abandon(me->create_waiters_, res.error());
                                               }
                                               me->record_ = updated;
                                               me->etag_ = res->back();
                                               if (callback) {
                                                 caf::anon_send(me->ctx_.dispatcher, deliver_atom::value, *callback);
                                               }
                                               fault::crash_point("after-result");
                                               me->reply_all(me->create_waiters_, Reply{200, updated.response});
                                               me->finish();
                                             }));
  }

  // -- reconciliation: records whose acquirer outcome is not known -------------------------

  static bool is_unresolved(PaymentState s) { return s == PaymentState::kProcessing || s == PaymentState::kOrphaned; }

  // The answer while the outcome is unknown: "undefined", no identifiers yet.
  std::string unresolved_response() const {
    ppp::CreatePaymentResponse r;
    r.payment_id = id_;
    r.status = "undefined";
    r.code = "processing";
    r.message = "the outcome is being confirmed with the acquirer";
    return ppp::write_create_payment_response(r);
  }

  void schedule_reconcile() {
    if (reconcile_attempts_ >= ctx_.reconcile_attempts) {
      return mark_orphaned();
    }
    reconcile_pending_ = true;
    auto delay = ctx_.reconcile_base * (1LL << std::min(reconcile_attempts_, 20));
    self_->delayed_send(self_, delay, reconcile_atom::value);
  }

  void on_reconcile_tick() {
    reconcile_pending_ = false;
    ReplySink none;
    if (!ensure_loaded(none)) {
      return schedule_reconcile();
    }
    if (busy_) {
      deferred_.push_back([me = shared_from_this()] { me->reconcile_in_background({}); });
      return;
    }
    reconcile_in_background({});
  }

  // Asks the acquirer under the payment's own key; applies a known outcome (with a callback),
  // leaves a payment the acquirer never saw for the gateway's retry, and retries a failed
  // status call with backoff until the record is marked orphaned.
  void reconcile_in_background(std::function<void()> done) {
    if (!record_ || !is_unresolved(record_->state) || busy_) {
      if (done) done();
      return;
    }
    busy_ = true;
    background_ = true;
    ctx_.acquirer->status(id_, in_actor<Result<std::optional<acquirer::Authorization>>>(
                                   [me = shared_from_this(), done](Result<std::optional<acquirer::Authorization>> r) {
                                     if (!r) {
                                       ++me->reconcile_attempts_;
                                       me->finish();
                                       me->schedule_reconcile();
                                     } else if (!*r) {
                                       me->audit_now(entry("event_reconciled", me->id_, {}, {}, {},
                                                           "the acquirer never saw this payment; the gateway's retry authorizes it"));
                                       me->finish();
                                     } else {
                                       me->reconcile_attempts_ = 0;
                                       me->on_authorized(std::move(**r));
                                     }
                                     if (done) done();
                                   }));
  }

  void mark_orphaned() {
    if (!record_ || record_->state != PaymentState::kProcessing || busy_) {
      return;
    }
    busy_ = true;
    PaymentRecord updated = *record_;
    updated.state = PaymentState::kOrphaned;
    updated.updated_at = now_unix_ms();
    storage::Batch batch;
    audit(batch, entry("event_orphaned", id_, record_->fingerprint, to_string(record_->state), to_string(updated.state),
                       "the acquirer could not confirm the outcome either way"));
    batch.push_back({Keyspace::kPayments, id_, encode(updated), etag_});
    spdlog::error("payment {} is orphaned: the acquirer could not confirm its outcome", id_);
    ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>([me = shared_from_this(), updated](storage::CommitResult res) {
      if (res) {
        me->record_ = updated;
        me->etag_ = res->back();
      } else {
        me->loaded_ = false;
      }
      me->finish();
    }));
  }

  // Start-up recovery: finish operations left in flight (same requestId, so at most once at
  // the acquirer), then reconcile the payment itself.
  void on_recover(RecoverCommand cmd) {
    if (!ensure_loaded(cmd.sink)) {
      return;
    }
    for (const auto& request_id : cmd.operations) {
      deferred_.push_back([me = shared_from_this(), request_id] { me->resume_operation(request_id); });
    }
    auto sink = cmd.sink;
    deferred_.push_back([me = shared_from_this(), sink] {
      me->reconcile_in_background([sink] { sink.deliver(Reply{200, "{}"}); });
      if (!me->busy_) {
        sink.deliver(Reply{200, "{}"});
      }
    });
    if (!busy_) {
      finish();
    }
  }

  void resume_operation(const std::string& request_id) {
    auto stored = ctx_.store->get(Keyspace::kOperations, request_id);
    if (!stored || !*stored) {
      return;
    }
    auto op = decode_operation((*stored)->value);
    if (!op || op->phase != OperationPhase::kProcessing || op->payment_id != id_) {
      return;
    }
    ppp::OperationRequest req;
    req.kind = op->kind;
    req.payment_id = id_;
    req.request_id = request_id;
    req.value = op->amount;
    busy_ = true;
    inflight_request_id_ = request_id;
    inflight_fingerprint_ = op->fingerprint;
    call_operation(std::move(req), *op, (*stored)->etag);
  }

  void on_notified(NotifiedCommand cmd) {
    if (ensure_loaded(ReplySink())) {
      audit_now(entry("callback_notified", cmd.delivery_id, {}, {}, {}, "HTTP " + std::to_string(cmd.status)));
    }
  }

  // -- asynchronous outcomes: acquirer webhooks and refreshes ------------------------------

  void on_event(EventCommand cmd) {
    if (!ensure_loaded(cmd.sink)) {
      return;
    }
    if (busy_) {
      deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_event(std::move(cmd)); });
      return;
    }
    const AcquirerEvent& event = cmd.event;
    auto seen = ctx_.store->get(Keyspace::kInbox, event.event_id);
    if (!seen) {
      return cmd.sink.deliver(error_reply(seen.error()));
    }
    if (*seen) {
      bool same = (*seen)->value == event.body_hash;
      audit_now(entry(same ? "webhook_duplicate" : "webhook_conflict", event.event_id, event.body_hash));
      return cmd.sink.deliver(same ? Reply{200, R"({"received":true,"duplicate":true})"}
                                   : error_reply(409, "event-conflict",
                                                 "event " + event.event_id + " was received with a different body"));
    }
    if (!record_) {
      return cmd.sink.deliver(error_reply(404, "not-found", "unknown payment " + id_));
    }
    busy_ = true;
    op_waiters_.push_back(cmd.sink);
    // The inbox record rides in the same batch as the transition it caused.
    storage::Batch inbox{{Keyspace::kInbox, event.event_id, event.body_hash, 0}};
    fault::crash_point("during-inbox-write");
    apply_outcome(event.authorization, std::move(inbox), Reply{200, R"({"received":true})"}, event.event_id,
                  event.body_hash);
  }

  void on_refresh(RefreshCommand cmd) {
    if (!ensure_loaded(cmd.sink)) {
      return;
    }
    if (!record_) {
      return cmd.sink.deliver(error_reply(404, "not-found", "unknown payment " + id_));
    }
    if (busy_) {
      deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_refresh(std::move(cmd)); });
      return;
    }
    if (record_->state != PaymentState::kUndefined) {
      return cmd.sink.deliver(Reply{200, record_->response});
    }
    busy_ = true;
    op_waiters_.push_back(cmd.sink);
    ctx_.acquirer->status(id_, in_actor<Result<std::optional<acquirer::Authorization>>>(
                                   [me = shared_from_this()](Result<std::optional<acquirer::Authorization>> r) {
                                     if (!r || !*r) {
                                       me->reply_all(me->op_waiters_, Reply{200, me->record_->response});
                                       return me->finish();
                                     }
                                     me->apply_outcome(**r, {}, std::nullopt, "status-call", {});
                                   }));
  }

  // Moves an `undefined` payment to its final state and queues the callback, in one batch with
  // `extra` (the inbox record). A stale or non-final outcome changes nothing but `extra`.
  // Replies `reply` to op_waiters_, or the current Create Payment answer if none is given.
  void apply_outcome(const acquirer::Authorization& a, storage::Batch extra, std::optional<Reply> reply,
                     const std::string& source, const std::string& source_hash) {
    bool final = a.status != acquirer::AuthorizationStatus::kPending;
    bool applies = final && record_->state == PaymentState::kUndefined && a.revision > record_->acquirer_revision;
    std::optional<PaymentRecord> updated;
    std::optional<OutboxEntry> callback;
    if (applies) {
      updated = *record_;
      updated->state = a.status == acquirer::AuthorizationStatus::kApproved ? PaymentState::kApproved
                                                                             : PaymentState::kDenied;
      updated->acquirer_revision = a.revision;
      if (updated->state == PaymentState::kApproved && updated->authorization_id.empty()) {
        updated->authorization_id = a.authorization_id;  // issued now, never changed later
      }
      updated->response = create_response(*updated, a.code, a.message);
      updated->updated_at = now_unix_ms();
      audit(extra, entry("webhook_applied", source, source_hash, to_string(record_->state), to_string(updated->state)));
      if (!updated->callback_url.empty()) {
        callback = new_callback(*updated);
        extra.push_back({Keyspace::kOutbox, callback->id, encode(*callback), 0});
        audit(extra, entry("delivery_written", callback->id));
      }
      extra.push_back({Keyspace::kPayments, id_, encode(*updated), etag_});
    } else if (!extra.empty()) {
      audit(extra, entry("webhook_ignored", source, source_hash, {}, {},
                         final ? "stale revision or payment no longer undefined" : "not final"));
    }
    auto done = [me = shared_from_this(), updated, callback, reply](storage::CommitResult res) {
      if (!res) {
        return me->abandon(me->op_waiters_, res.error());
      }
      if (updated) {
        me->record_ = *updated;
        me->etag_ = res->back();
      }
      if (callback) {
        caf::anon_send(me->ctx_.dispatcher, deliver_atom::value, *callback);
      }
      me->reply_all(me->op_waiters_, reply ? *reply : Reply{200, me->record_->response});
      me->finish();
    };
    if (extra.empty()) {
      return done(std::vector<uint64_t>{});
    }
    ctx_.store->commit(std::move(extra), in_actor<storage::CommitResult>(std::move(done)));
  }

  OutboxEntry new_callback(PaymentRecord& r) const {
    OutboxEntry e;
    e.id = "dlv_" + id_ + "_" + std::to_string(++r.callbacks);
    e.payment_id = id_;
    e.url = r.callback_url;
    e.body = r.response;
    e.created_at = e.next_attempt_at = now_unix_ms();
    return e;
  }

  // The Create Payment answer for the record's state; identifiers come from the record, so
  // they never change once issued (G2).
  std::string create_response(const PaymentRecord& r, std::string_view code, std::string_view message) const {
    ppp::CreatePaymentResponse response;
    response.payment_id = id_;
    response.status = std::string(create_payment_status(r.state));
    response.authorization_id = r.state == PaymentState::kApproved ? r.authorization_id : "";
    response.tid = r.tid;
    response.nsu = r.nsu;
    response.acquirer = r.acquirer;
    response.code = std::string(code);
    response.message = std::string(message);
    add_method_fields(r, response);
    return ppp::write_create_payment_response(response);
  }

  // What the shopper needs while the payment is open, and the card fragments of a POS result.
  void add_method_fields(const PaymentRecord& r, ppp::CreatePaymentResponse& out) const {
    const auto& d = r.document;
    const std::string& m = r.payment_method;
    if (d.expires_in_seconds > 0) {
      out.delay_to_cancel = d.expires_in_seconds;
    }
    if (m == "Pix") {
      out.delay_to_cancel = std::clamp<int64_t>(out.delay_to_cancel, 900, 3600);
    }
    if (is_pos(m)) {
      out.delay_to_cancel = 600;  // at least the 300 s the wait app polls
      if (r.state == PaymentState::kApproved) {
        out.card_brand = d.card_brand;
        out.first_digits = d.first_digits;
        out.last_digits = d.last_digits;
      }
    }
    if (r.state != PaymentState::kUndefined && r.state != PaymentState::kProcessing) {
      return;
    }
    if (m == "Pix" && !d.pix_code.empty()) {
      JsonWriter payload;
      payload.begin_object().key("code").string(d.pix_code).key("qrCodeBase64Image").string(d.pix_qr_png).end_object();
      out.payment_app_name = "vtex.pix-payment";
      out.payment_app_payload = payload.str();
    } else if (m == "BankInvoice") {
      out.payment_url = out.bank_issue_invoice_id = d.payment_url;
      out.identification_number = d.boleto_line;
      out.identification_number_formatted = d.boleto_line_formatted;
      out.bar_code_image_type = "i25";
      out.bar_code_image_number = d.boleto_barcode;
    } else if (m == "Promissories") {
      out.payment_url = out.redirect_url = d.payment_url;
    } else if (is_pos(m) && r.pos_phase == kIdentifyTerminal) {
      JsonWriter payload;
      payload.begin_object().key("submitUrl").string(ctx_.public_url + "/pos/" + id_ + "/terminal").end_object();
      out.payment_app_name = "vtex.terminal-connector-app";
      out.payment_app_payload = payload.str();
    } else if (is_pos(m)) {
      out.payment_app_name = "vtex.challenge-wait-for-confirmation";
      out.payment_app_payload = R"({"secondsWaiting":300})";
    }
  }

  // -- cancel / settle / refund ------------------------------------------------------------

  void on_operate(OperateCommand cmd) {
    if (!ensure_loaded(cmd.sink)) {
      return;
    }
    const auto& req = cmd.request;
    std::string fingerprint = ppp::operation_fingerprint(ctx_.fingerprint_key, req);
    if (busy_ && inflight_request_id_ == req.request_id) {
      if (fingerprint != inflight_fingerprint_) {
        audit_now(entry("operation_refused", req.request_id, fingerprint, {}, {}, "requestId reused for another operation"));
        return cmd.sink.deliver(request_conflict(req));
      }
      audit_now(entry("operation_duplicate_reused", req.request_id, fingerprint, {}, {}, "joined the call in flight"));
      op_waiters_.push_back(std::move(cmd.sink));
      return;
    }
    if (busy_) {
      deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_operate(std::move(cmd)); });
      return;
    }
    auto stored = ctx_.store->get(Keyspace::kOperations, req.request_id);
    if (!stored) {
      return cmd.sink.deliver(error_reply(stored.error()));
    }
    std::optional<OperationRecord> existing;
    if (*stored) {
      auto decoded = decode_operation((*stored)->value);
      if (!decoded) {
        return cmd.sink.deliver(error_reply(decoded.error()));
      }
      existing = std::move(*decoded);
      if (existing->payment_id != id_ || existing->fingerprint != fingerprint) {
        audit_now(entry("operation_refused", req.request_id, fingerprint, {}, {}, "requestId reused for another operation"));
        return cmd.sink.deliver(request_conflict(req));
      }
      if (existing->phase == OperationPhase::kDone) {
        audit_now(entry("operation_duplicate_reused", req.request_id, fingerprint));
        return cmd.sink.deliver(Reply{existing->http_status, existing->response});  // G2
      }
    }
    if (!existing) {
      if (auto s = validate(req); !s) {
        audit_now(entry("operation_refused", req.request_id, fingerprint, {}, {},
                        std::string(ppp::to_string(req.kind)) + ": " + s.error().message));
        return cmd.sink.deliver(error_reply(s.error()));
      }
    }
    busy_ = true;
    inflight_request_id_ = req.request_id;
    inflight_fingerprint_ = fingerprint;
    op_waiters_.push_back(cmd.sink);
    if (existing) {
      // Intent written by an earlier attempt that never finished: the acquirer call is
      // idempotent on requestId, so calling again cannot act twice.
      return call_operation(std::move(cmd.request), *existing, (*stored)->etag);
    }
    write_operation_intent(std::move(cmd.request), std::move(fingerprint));
  }

  Reply request_conflict(const ppp::OperationRequest& req) const {
    return error_reply(400, "request-conflict",
                       "requestId " + req.request_id + " was already used for a different operation");
  }

  Status validate(const ppp::OperationRequest& req) const {
    if (!record_) {
      return make_error(ErrorCode::kNotFound, "unknown payment " + id_);
    }
    switch (req.kind) {
      case ppp::OperationKind::kCancel: return check_cancel(record_->state);
      case ppp::OperationKind::kSettle: return check_settle(record_->state, record_->amounts, req.value);
      case ppp::OperationKind::kRefund: return check_refund(record_->state, record_->amounts, req.value);
    }
    return make_error(ErrorCode::kInternal, "unknown operation");
  }

  void write_operation_intent(ppp::OperationRequest req, std::string fingerprint) {
    OperationRecord op;
    op.kind = req.kind;
    op.payment_id = id_;
    op.fingerprint = std::move(fingerprint);
    op.amount = req.kind == ppp::OperationKind::kCancel ? record_->amounts.authorized : req.value;
    op.updated_at = now_unix_ms();
    storage::Batch batch{{Keyspace::kOperations, req.request_id, encode(op), 0}};
    audit(batch, entry("operation_received", req.request_id, op.fingerprint, {}, {}, std::string(ppp::to_string(req.kind))));
    audit(batch, entry("operation_processing_started", req.request_id, op.fingerprint));
    ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>(
                                             [me = shared_from_this(), req, op](storage::CommitResult res) {
                                               if (!res) {
                                                 return me->abandon(me->op_waiters_, res.error());
                                               }
                                               me->call_operation(req, op, res->front());
                                             }));
  }

  void call_operation(ppp::OperationRequest req, OperationRecord op, uint64_t op_etag) {
    acquirer::OperationCall call{req.kind, req.request_id, id_, record_ ? record_->tid : "", op.amount};
    ctx_.acquirer->operate(std::move(call), in_actor<Result<acquirer::OperationOutcome>>(
                                                [me = shared_from_this(), req, op, op_etag](
                                                    Result<acquirer::OperationOutcome> r) mutable {
                                                  me->on_operation_result(std::move(req), std::move(op), op_etag, std::move(r));
                                                }));
  }

  void on_operation_result(ppp::OperationRequest req, OperationRecord op, uint64_t op_etag,
                           Result<acquirer::OperationOutcome> result) {
    if (!result) {
      // Unknown outcome: nothing recorded as done; the retry resumes the same requestId.
      spdlog::warn("payment {}: acquirer {} failed: {}", id_, ppp::to_string(req.kind), result.error().message);
      reply_all(op_waiters_, error_reply(500, "acquirer-unavailable",
                                         "the acquirer did not answer; retry the same request"));
      return finish();
    }
    const auto& outcome = *result;
    ppp::OperationResponse response{req.kind, id_, req.request_id, outcome.succeeded ? outcome.id : "",
                                    outcome.succeeded ? outcome.amount : 0, outcome.succeeded ? "" : outcome.code,
                                    outcome.message};
    op.phase = OperationPhase::kDone;
    op.http_status = outcome.succeeded ? 200 : 500;
    op.response = ppp::write_operation_response(response);
    op.updated_at = now_unix_ms();
    storage::Batch batch{{Keyspace::kOperations, req.request_id, encode(op), op_etag}};
    std::optional<PaymentRecord> updated;
    if (outcome.succeeded && record_) {
      updated = apply(*record_, req.kind, outcome.amount);
    }
    audit(batch, entry("operation_processed", req.request_id, op.fingerprint, to_string(record_->state),
                       to_string(updated ? updated->state : record_->state),
                       std::string(ppp::to_string(req.kind)) + " " + format_amount(outcome.succeeded ? outcome.amount : 0) +
                           (outcome.succeeded ? "" : " refused: " + outcome.code)));
    if (updated) {
      batch.push_back({Keyspace::kPayments, id_, encode(*updated), etag_});
    }
    ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>(
                                             [me = shared_from_this(), op, updated](storage::CommitResult res) {
                                               if (!res) {
                                                 return me->abandon(me->op_waiters_, res.error());
                                               }
                                               if (updated) {
                                                 me->record_ = *updated;
                                                 me->etag_ = res->back();
                                               }
                                               me->reply_all(me->op_waiters_, Reply{op.http_status, op.response});
                                               me->finish();
                                             }));
  }

  static PaymentRecord apply(PaymentRecord r, ppp::OperationKind kind, Cents amount) {
    switch (kind) {
      case ppp::OperationKind::kCancel: r.state = PaymentState::kCancelled; break;
      case ppp::OperationKind::kSettle:
        r.state = PaymentState::kSettled;
        r.amounts.settled += amount;
        break;
      case ppp::OperationKind::kRefund:
        r.state = PaymentState::kRefunded;
        r.amounts.refunded += amount;
        break;
    }
    r.updated_at = now_unix_ms();
    return r;
  }

  caf::event_based_actor* self_;
  const ActorContext& ctx_;
  caf::actor router_;
  std::string id_;

  bool loaded_ = false;
  std::optional<PaymentRecord> record_;
  uint64_t etag_ = 0;

  bool busy_ = false;
  bool background_ = false;      // the mutation in flight was started by no caller
  bool told_undefined_ = false;  // a caller was answered "undefined" while unresolved
  bool reconcile_pending_ = false;
  int reconcile_attempts_ = 0;
  AuditChain audit_;
  std::vector<ReplySink> create_waiters_;
  std::vector<ReplySink> op_waiters_;
  std::string inflight_request_id_;
  std::string inflight_fingerprint_;
  std::deque<std::function<void()>> deferred_;

  uint64_t handled_ = 0;
  Clock::time_point last_active_ = Clock::now();
  bool idle_armed_ = false;
};

}  // namespace

caf::behavior payment_actor(caf::event_based_actor* self, const ActorContext* context,
                            caf::actor router, std::string payment_id) {
  auto actor = std::make_shared<PaymentActor>(self, context, std::move(router), std::move(payment_id));
  return actor->behavior();
}

}  // namespace idempay::actors
