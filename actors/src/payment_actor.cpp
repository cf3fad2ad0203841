#include "payment_actor.hpp"

namespace idempay::actors {

caf::behavior PaymentActor::behavior() {
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

void PaymentActor::release_waiters() {
  deferred_.clear();
  create_waiters_.clear();
  op_waiters_.clear();
}

void PaymentActor::on_routed() {
  ++handled_;
  last_active_ = Clock::now();
  if (!idle_armed_) {
    idle_armed_ = true;
    self_->delayed_send(self_, ctx_.idle_timeout, idle_atom::value);
  }
}

void PaymentActor::on_idle() {
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
  self_->request(router_, caf::infinite, retire_atom::value, id_, handled_).then([me](bool allowed) {
    if (allowed) {
      me->self_->quit();
    } else if (!me->idle_armed_) {
      me->idle_armed_ = true;
      me->self_->delayed_send(me->self_, me->ctx_.idle_timeout, idle_atom::value);
    }
  });
}

bool PaymentActor::ensure_loaded(const ReplySink& sink) {
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

AuditEntry PaymentActor::entry(std::string kind, std::string ref, std::string fingerprint,
                               std::string_view before, std::string_view after, std::string detail) {
  AuditEntry e;
  e.kind = std::move(kind);
  e.ref = std::move(ref);
  e.fingerprint = std::move(fingerprint);
  e.before = std::string(before);
  e.after = std::string(after);
  e.detail = std::move(detail);
  return e;
}

void PaymentActor::audit_now(AuditEntry e) {
  if (!record_) {
    return;  // no chain for a payment that does not exist
  }
  storage::Batch batch;
  audit(batch, std::move(e));
  ctx_.store->commit_riding_along(std::move(batch),
                     in_actor<storage::CommitResult>([me = shared_from_this()](storage::CommitResult r) {
                       if (!r && !me->busy_) {
                         me->loaded_ = false;
                       }
                     }));
}

void PaymentActor::finish() {
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

void PaymentActor::reply_all(std::vector<ReplySink>& sinks, const Reply& reply) {
  for (auto& s : sinks) {
    s.deliver(reply);
  }
}

void PaymentActor::abandon(std::vector<ReplySink>& sinks, const Error& e) {
  spdlog::warn("payment {}: {}", id_, e.message);
  reply_all(sinks, error_reply(e.code == ErrorCode::kConflict
                                   ? Error{ErrorCode::kUnavailable, "concurrent update; retry"}
                                   : e));
  loaded_ = false;
  finish();
}

caf::behavior payment_actor(caf::event_based_actor* self, const ActorContext* context, caf::actor router,
                            std::string payment_id) {
  auto actor = std::make_shared<PaymentActor>(self, context, std::move(router), std::move(payment_id));
  return actor->behavior();
}

}  // namespace idempay::actors
