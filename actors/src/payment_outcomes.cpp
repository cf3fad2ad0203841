#include "payment_actor.hpp"

namespace idempay::actors {

std::string PaymentActor::unresolved_response() const {
  ppp::CreatePaymentResponse r;
  r.payment_id = id_;
  r.status = "undefined";
  r.code = "processing";
  r.message = "the outcome is being confirmed with the acquirer";
  return ppp::write_create_payment_response(r);
}

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
  if (!loaded_) {
    if (load_failure_) {
      return schedule_reconcile();
    }
    return when_loaded(ReplySink(), [me = shared_from_this()] { me->on_reconcile_tick(); });
  }
  if (busy_) {
    deferred_.push_back([me = shared_from_this()] { me->reconcile_in_background({}); });
    return;
  }
  reconcile_in_background({});
}

void PaymentActor::reconcile_in_background(std::function<void()> done) {
  if (!record_ || !is_unresolved(record_->state) || busy_) {
    if (done)
      done();
    return;
  }
  busy_ = true;
  background_ = true;
  payment_acquirer().status(
      id_,
      in_actor<Result<std::optional<acquirer::Authorization>>>(
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
            if (done)
              done();
          }));
}

void PaymentActor::mark_orphaned() {
  if (!record_ || record_->state != PaymentState::kProcessing || busy_) {
    return;
  }
  busy_ = true;
  PaymentRecord updated = *record_;
  updated.state = PaymentState::kOrphaned;
  updated.updated_at = now_unix_ms();
  storage::Batch batch;
  audit(batch, entry("event_orphaned", id_, record_->fingerprint, to_string(record_->state),
                     to_string(updated.state), "the acquirer could not confirm the outcome either way"));
  batch.push_back({Space::kPayments, id_, encode(updated), etag_});
  spdlog::error("payment {} is orphaned: the acquirer could not confirm its outcome", id_);
  ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>(
                                           [me = shared_from_this(), updated](storage::CommitResult res) {
                                             if (res) {
                                               me->record_ = updated;
                                               me->etag_ = res->back();
                                             } else {
                                               me->loaded_ = false;
                                             }
                                             me->finish();
                                           }));
}

void PaymentActor::on_recover(RecoverCommand cmd) {
  if (wait_for_load(&PaymentActor::on_recover, cmd)) {
    return;
  }
  for (const auto& request_id : cmd.operations) {
    deferred_.push_back([me = shared_from_this(), request_id] { me->resume_operation(request_id); });
  }
  auto sink = cmd.sink;
  // reconcile_in_background calls `done` on every path, at once when there is nothing to do.
  deferred_.push_back([me = shared_from_this(), sink] {
    me->reconcile_in_background([sink] { sink.deliver(Reply{200, "{}"}); });
  });
  if (!busy_) {
    finish();
  }
}

void PaymentActor::resume_operation(const std::string& request_id) {
  busy_ = true;  // while the operation is read
  load_operation(request_id, [me = shared_from_this(), request_id](Result<std::optional<StoredOperation>> stored) {
    if (!stored || !*stored || (*stored)->record.phase != OperationPhase::kProcessing) {
      return me->finish();
    }
    const OperationRecord& op = (*stored)->record;
    ppp::OperationRequest req;
    req.kind = op.kind;
    req.payment_id = me->id_;
    req.request_id = request_id;
    req.value = op.amount;
    me->inflight_request_id_ = request_id;
    me->inflight_fingerprint_ = op.fingerprint;
    me->inflight_op_key_ = (*stored)->key;
    me->call_operation(std::move(req), op, (*stored)->etag);
  });
}

void PaymentActor::on_notified(NotifiedCommand cmd) {
  if (wait_for_load(&PaymentActor::on_notified, cmd)) {
    return;
  }
  audit_now(entry("callback_notified", cmd.delivery_id, {}, {}, {}, "HTTP " + std::to_string(cmd.status)));
}

void PaymentActor::on_event(EventCommand cmd) {
  if (wait_for_load(&PaymentActor::on_event, cmd)) {
    return;
  }
  if (busy_) {
    deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_event(std::move(cmd)); });
    return;
  }
  busy_ = true;  // while the inbox is read
  op_waiters_.push_back(cmd.sink);
  std::string event_id = cmd.event.event_id;
  read_then<Result<std::optional<storage::Versioned>>>(
      [event_id](const Lookup& get) { return get(Space::kInbox, event_id); },
      [me = shared_from_this(), cmd = std::move(cmd)](Result<std::optional<storage::Versioned>> seen) {
        me->apply_event(cmd.event, std::move(seen));
      });
}

void PaymentActor::apply_event(const AcquirerEvent& event, Result<std::optional<storage::Versioned>> seen) {
  if (!seen) {
    return answer_and_finish(error_reply(seen.error()));
  }
  if (*seen) {
    bool same = (*seen)->value == event.body_hash;
    audit_now(entry(same ? "webhook_duplicate" : "webhook_conflict", event.event_id, event.body_hash));
    return answer_and_finish(same ? Reply{200, R"({"received":true,"duplicate":true})"}
                       : error_reply(409, "event-conflict",
                                     "event " + event.event_id + " was received with a different body"));
  }
  if (!record_) {
    return answer_and_finish(unknown_payment());
  }
  // The inbox record rides in the same batch as the transition it caused.
  storage::Batch inbox{{Space::kInbox, event.event_id, event.body_hash, 0}};
  fault::crash_point("during-inbox-write");
  apply_outcome(event.authorization, std::move(inbox), Reply{200, R"({"received":true})"}, event.event_id,
                event.body_hash);
}

void PaymentActor::on_refresh(RefreshCommand cmd) {
  if (wait_for_load(&PaymentActor::on_refresh, cmd)) {
    return;
  }
  if (!record_) {
    return cmd.sink.deliver(unknown_payment());
  }
  if (!owned_by(cmd.merchant)) {
    audit_now(by(cmd.merchant, entry("access_refused", id_, {}, {}, {}, "inbound request for another merchant's payment")));
    return cmd.sink.deliver(unknown_payment());
  }
  if (busy_) {
    deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_refresh(std::move(cmd)); });
    return;
  }
  if (record_->state != PaymentState::kUndefined) {
    return cmd.sink.deliver(Reply{200, record_->response});
  }
  busy_ = true;
  inflight_merchant_ = cmd.merchant;
  op_waiters_.push_back(cmd.sink);
  payment_acquirer().status(id_, in_actor<Result<std::optional<acquirer::Authorization>>>(
                                 [me = shared_from_this()](Result<std::optional<acquirer::Authorization>> r) {
                                   if (!r || !*r) {
                                     me->reply_all(me->op_waiters_, Reply{200, me->record_->response});
                                     return me->finish();
                                   }
                                   me->apply_outcome(**r, {}, std::nullopt, "status-call", {});
                                 }));
}

void PaymentActor::apply_outcome(const acquirer::Authorization& a, storage::Batch extra,
                                 std::optional<Reply> reply, const std::string& source,
                                 const std::string& source_hash) {
  bool final = a.status != acquirer::AuthorizationStatus::kPending;
  bool applies =
      final && record_->state == PaymentState::kUndefined && a.revision > record_->acquirer_revision;
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
    audit(extra, entry("webhook_applied", source, source_hash, to_string(record_->state),
                       to_string(updated->state)));
    if (!updated->callback_url.empty()) {
      callback = new_callback(*updated);
      extra.push_back({Space::kOutbox, callback->id, encode(*callback), 0});
      audit(extra, entry("delivery_written", callback->id));
    }
    extra.push_back({Space::kPayments, id_, encode(*updated), etag_});
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

OutboxEntry PaymentActor::new_callback(PaymentRecord& r) const {
  OutboxEntry e;
  e.id = "dlv_" + id_ + "_" + std::to_string(++r.callbacks);
  e.payment_id = id_;
  e.merchant = owner();  // r is a copy of the record: the same owner
  e.url = r.callback_url;
  e.body = r.response;
  e.created_at = e.next_attempt_at = now_unix_ms();
  return e;
}

}  // namespace idempay::actors
