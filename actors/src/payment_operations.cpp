#include "payment_actor.hpp"

namespace idempay::actors {

void PaymentActor::on_operate(OperateCommand cmd) {
  if (wait_for_load(&PaymentActor::on_operate, cmd)) {
    return;
  }
  const auto& req = cmd.request;
  std::string fingerprint = ppp::operation_fingerprint(ctx_.fingerprint_key, req);
  if (record_ && !owned_by(cmd.merchant)) {
    audit_now(by(cmd.merchant, entry("access_refused", req.request_id, fingerprint, {}, {},
                                     std::string(ppp::to_string(req.kind)) + " of another merchant's payment")));
    return cmd.sink.deliver(unknown_payment());
  }
  if (busy_ && inflight_request_id_ == req.request_id) {
    if (fingerprint != inflight_fingerprint_) {
      audit_now(by(cmd.merchant, entry("operation_refused", req.request_id, fingerprint, {}, {},
                                       "requestId reused for another operation")));
      return cmd.sink.deliver(request_conflict(req));
    }
    audit_now(by(cmd.merchant, entry("operation_duplicate_reused", req.request_id, fingerprint, {}, {},
                                     "joined the call in flight")));
    op_waiters_.push_back(std::move(cmd.sink));
    return;
  }
  if (busy_) {
    deferred_.push_back([me = shared_from_this(), cmd]() mutable { me->on_operate(std::move(cmd)); });
    return;
  }
  // The actor is reserved while the stored operation is read: a duplicate joins this request,
  // other mutations wait their turn.
  busy_ = true;
  inflight_request_id_ = req.request_id;
  inflight_fingerprint_ = fingerprint;
  inflight_merchant_ = cmd.merchant;
  op_waiters_.push_back(cmd.sink);
  std::string request_id = req.request_id;
  load_operation(request_id, [me = shared_from_this(), cmd = std::move(cmd), fingerprint = std::move(fingerprint)](
                                 Result<std::optional<StoredOperation>> stored) mutable {
    me->operate_with(std::move(cmd), std::move(fingerprint), std::move(stored));
  });
}

void PaymentActor::operate_with(OperateCommand cmd, std::string fingerprint,
                                Result<std::optional<StoredOperation>> stored) {
  const auto& req = cmd.request;
  if (!stored) {
    return answer_and_finish(error_reply(stored.error()));
  }
  if (*stored) {
    const OperationRecord& existing = (*stored)->record;
    if (existing.fingerprint != fingerprint) {
      audit_now(by(cmd.merchant, entry("operation_refused", req.request_id, fingerprint, {}, {},
                                       "requestId reused for another operation")));
      return answer_and_finish(request_conflict(req));
    }
    if (existing.phase == OperationPhase::kDone) {
      audit_now(by(cmd.merchant, entry("operation_duplicate_reused", req.request_id, fingerprint)));
      return answer_and_finish(Reply{existing.http_status, existing.response});  // G2
    }
    // Intent written by an earlier attempt that never finished: the acquirer call is
    // idempotent on its key, so calling again cannot act twice.
    inflight_op_key_ = (*stored)->key;
    return call_operation(std::move(cmd.request), (*stored)->record, (*stored)->etag);
  }
  if (auto s = validate(req); !s) {
    audit_now(by(cmd.merchant, entry("operation_refused", req.request_id, fingerprint, {}, {},
                                     std::string(ppp::to_string(req.kind)) + ": " + s.error().message)));
    return answer_and_finish(error_reply(s.error()));
  }
  write_operation_intent(std::move(cmd.request), std::move(fingerprint));
}

Reply PaymentActor::request_conflict(const ppp::OperationRequest& req) const {
  return error_reply(400, "request-conflict",
                     "requestId " + req.request_id + " was already used for a different operation");
}

Status PaymentActor::validate(const ppp::OperationRequest& req) const {
  if (!record_) {
    return make_error(ErrorCode::kNotFound, "unknown payment " + id_);
  }
  switch (req.kind) {
    case ppp::OperationKind::kCancel:
      return check_cancel(record_->state);
    case ppp::OperationKind::kSettle:
      return check_settle(record_->state, record_->amounts, req.value);
    case ppp::OperationKind::kRefund:
      return check_refund(record_->state, record_->amounts, req.value);
  }
  return make_error(ErrorCode::kInternal, "unknown operation");
}

void PaymentActor::write_operation_intent(ppp::OperationRequest req, std::string fingerprint) {
  OperationRecord op;
  op.kind = req.kind;
  op.payment_id = id_;
  op.fingerprint = std::move(fingerprint);
  op.acquirer_key = operation_key(id_, req.request_id);
  op.amount = req.kind == ppp::OperationKind::kCancel ? record_->amounts.authorized : req.value;
  op.updated_at = now_unix_ms();
  inflight_op_key_ = operation_key(id_, req.request_id);
  storage::Batch batch{{Space::kOperations, inflight_op_key_, encode(op), 0}};
  audit(batch, entry("operation_received", req.request_id, op.fingerprint, {}, {},
                     std::string(ppp::to_string(req.kind))));
  audit(batch, entry("operation_processing_started", req.request_id, op.fingerprint));
  batch.push_back({Space::kRecovery, recovery_key(id_, req.request_id), std::string(), std::nullopt, true});
  ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>(
                                           [me = shared_from_this(), req, op](storage::CommitResult res) {
                                             if (!res) {
                                               return me->abandon(me->op_waiters_, res.error());
                                             }
                                             me->call_operation(req, op, res->front());
                                           }));
}

void PaymentActor::call_operation(ppp::OperationRequest req, OperationRecord op, uint64_t op_etag) {
  // Keyed per payment: two payments may use the same requestId, never the same acquirer key.
  std::string key = op.acquirer_key.empty() ? req.request_id : op.acquirer_key;
  acquirer::OperationCall call{req.kind, std::move(key), id_, record_->tid, op.amount};
  payment_acquirer().operate(
      std::move(call),
      in_actor<Result<acquirer::OperationOutcome>>(
          [me = shared_from_this(), req, op, op_etag](Result<acquirer::OperationOutcome> r) mutable {
            me->on_operation_result(std::move(req), std::move(op), op_etag, std::move(r));
          }));
}

void PaymentActor::on_operation_result(ppp::OperationRequest req, OperationRecord op, uint64_t op_etag,
                                       Result<acquirer::OperationOutcome> result) {
  if (!result) {
    // Unknown outcome: nothing recorded as done; the retry resumes the same requestId.
    spdlog::warn("payment {}: acquirer {} failed: {}", id_, ppp::to_string(req.kind), result.error().message);
    reply_all(op_waiters_, error_reply(500, "acquirer-unavailable",
                                       "the acquirer did not answer; retry the same request"));
    return finish();
  }
  const auto& outcome = *result;
  ppp::OperationResponse response{req.kind,
                                  id_,
                                  req.request_id,
                                  outcome.succeeded ? outcome.id : "",
                                  outcome.succeeded ? outcome.amount : 0,
                                  outcome.succeeded ? "" : outcome.code,
                                  outcome.message};
  op.phase = OperationPhase::kDone;
  op.http_status = outcome.succeeded ? 200 : 500;
  op.response = ppp::write_operation_response(response);
  op.updated_at = now_unix_ms();
  storage::Batch batch{{Space::kOperations, inflight_op_key_, encode(op), op_etag}};
  // An operation is started only for a payment that exists: validate() and load_operation()
  // both require the record, and nothing deletes one.
  std::optional<PaymentRecord> updated;
  if (outcome.succeeded) {
    updated = apply(*record_, req.kind, outcome.amount);
  }
  audit(batch, entry("operation_processed", req.request_id, op.fingerprint, to_string(record_->state),
                     to_string(updated ? updated->state : record_->state),
                     std::string(ppp::to_string(req.kind)) + " "
                         + format_amount(outcome.succeeded ? outcome.amount : 0)
                         + (outcome.succeeded ? "" : " refused: " + outcome.code)));
  batch.push_back({Space::kRecovery, recovery_key(id_, req.request_id), std::nullopt, std::nullopt, true});
  if (updated) {
    batch.push_back({Space::kPayments, id_, encode(*updated), etag_});
  }
  ctx_.store->commit(std::move(batch), in_actor<storage::CommitResult>([me = shared_from_this(), op,
                                                                        updated](storage::CommitResult res) {
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

PaymentRecord PaymentActor::apply(PaymentRecord r, ppp::OperationKind kind, Cents amount) {
  switch (kind) {
    case ppp::OperationKind::kCancel:
      r.state = PaymentState::kCancelled;
      break;
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

}  // namespace idempay::actors
