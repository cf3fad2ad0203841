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
    me->ctx_.directory->forget(me->id_, addr);
  });
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
      [me](flush_atom) { me->flush_audit(); },
  };
}

void PaymentActor::release_waiters() {
  awaiting_load_.clear();
  deferred_.clear();
  create_waiters_.clear();
  op_waiters_.clear();
}

void PaymentActor::on_routed() { ++handled_; }

void PaymentActor::on_idle() {
  if (busy_ || !deferred_.empty() || reconcile_pending_ || loading_) {
    return;  // the directory offers again after another idle timeout
  }
  if (ctx_.directory->try_retire(id_, self_->address(), handled_)) {
    self_->quit();
  }
}

void PaymentActor::when_loaded(const ReplySink& sink, std::function<void()> again) {
  if (load_failure_) {
    return sink.deliver(error_reply(*load_failure_));
  }
  awaiting_load_.push_back(std::move(again));
  if (loading_) {
    return;
  }
  loading_ = true;
  read_then<Result<PaymentSnapshot>>([id = id_](const Lookup& get) { return read_payment(get, id); },
                                     [me = shared_from_this()](Result<PaymentSnapshot> got) {
                                       me->on_loaded(std::move(got));
                                     });
}

void PaymentActor::on_loaded(Result<PaymentSnapshot> got) {
  loading_ = false;
  if (got) {
    if (!audit_buffer_.empty()) {
      // Chained to entries whose commit failed: storing them would leave a gap in the chain.
      spdlog::warn("payment {}: dropping {} audit writes that follow a failed commit", id_, audit_buffer_.size());
      audit_buffer_.clear();
    }
    record_ = std::move(got->record);
    etag_ = got->etag;
    audit_.reset(std::move(got->head));
    tally_ = std::move(got->tally);
    tally_changed_ = false;
    loaded_ = true;
  }
  // The commands that waited run in arrival order now: each finds the record loaded, or
  // answers the failure (and a later command starts a new load).
  auto waiting = std::exchange(awaiting_load_, {});
  load_failure_ = got ? nullptr : &got.error();
  for (auto& again : waiting) {
    again();
  }
  load_failure_ = nullptr;
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
  // Bounded, so that a long burst still reaches the store as it goes.
  constexpr size_t kMaxBufferedEntries = 32;
  bool first = audit_buffer_.empty() && !tally_changed_;
  if (is_repeat(e.kind) && audit_.head().seq >= kIndividualEntries) {
    tally_.add(e, now_unix_ms());
    tally_changed_ = true;
    if (tally_.total() >= kSealEvery) {
      seal_tally();
    }
  } else {
    audit_.append(id_, std::move(e), audit_buffer_);
  }
  if (audit_buffer_.size() > kMaxBufferedEntries) {  // the entries and one chain head
    flush_audit();
  } else if (first) {
    self_->send(self_, flush_atom::value);  // behind the messages already queued
  }
}

void PaymentActor::seal_tally() {
  audit_.append(id_, entry("arrivals_counted", id_, {}, {}, {}, tally_.encode()), audit_buffer_);
  audit_buffer_.push_back({Space::kAudit, audit_tally_key(id_), std::nullopt, std::nullopt, true});
  tally_ = ArrivalTally{};
  tally_changed_ = false;
}

void PaymentActor::flush_audit(bool seal) {
  if (seal && !tally_.empty()) {
    seal_tally();
  } else if (tally_changed_) {
    // One key rewritten per burst: the counts survive a crash as the buffered entries would.
    audit_buffer_.push_back({Space::kAudit, audit_tally_key(id_), tally_.encode(), std::nullopt, true});
    tally_changed_ = false;
  }
  if (audit_buffer_.empty()) {
    return;
  }
  auto on_failure = in_actor<Error>([me = shared_from_this()](const Error&) {
    if (!me->busy_) {
      me->loaded_ = false;
    }
  });
  // Only a failure comes back to the actor: a success changes nothing here, and a message per
  // commit would cost replays another scheduling of the actor.
  ctx_.store->commit_riding_along(std::exchange(audit_buffer_, {}), [on_failure](storage::CommitResult r) {
    if (!r) {
      on_failure(r.error());
    }
  });
}

void PaymentActor::finish() {
  busy_ = false;
  background_ = false;
  create_waiters_.clear();
  op_waiters_.clear();
  inflight_request_id_.clear();
  inflight_merchant_.clear();
  inflight_op_key_.clear();
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
  // A storage outage is logged once, by the store, not once per request it refuses.
  spdlog::log(e.code == ErrorCode::kUnavailable ? spdlog::level::debug : spdlog::level::warn, "payment {}: {}", id_,
              e.message);
  reply_all(sinks, error_reply(e.code == ErrorCode::kConflict
                                   ? Error{ErrorCode::kUnavailable, "concurrent update; retry"}
                                   : e));
  loaded_ = false;
  finish();
}

caf::behavior payment_actor(caf::event_based_actor* self, const ActorContext* context, std::string payment_id) {
  auto actor = std::make_shared<PaymentActor>(self, context, std::move(payment_id));
  return actor->behavior();
}

}  // namespace idempay::actors
