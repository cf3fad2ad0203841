#pragma once
// One actor per paymentId serialises everything that happens to that payment. Each request
// runs as a chain of steps; a step that waits (a storage commit, an acquirer call) resumes
// through a Continuation message, so no worker thread ever blocks and other messages keep
// flowing: replays are answered at once, overlapping creates join the call in flight, and
// other mutations wait their turn in `deferred_`. The steps live in four files:
// payment_actor.cpp (plumbing, loading, audit), payment_create.cpp (Create Payment, POS, the
// answers), payment_outcomes.cpp (webhooks, refreshes, reconciliation, recovery) and
// payment_operations.cpp (cancel, settle, refund).
#include <algorithm>
#include <deque>

#include <spdlog/spdlog.h>

#include "idempay/domain/audit.hpp"
#include "idempay/protocol/fault.hpp"
#include "idempay/protocol/methods.hpp"
#include "idempay/protocol/json_writer.hpp"
#include "messages.hpp"
#include "idempay/domain/payment_reads.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::actors {

using storage::Keyspace;

inline Reply error_reply(unsigned status, std::string_view code, std::string_view message) {
  return Reply{status, ppp::write_error(code, message)};
}

inline Reply error_reply(const Error& e) {
  switch (e.code) {
    case ErrorCode::kNotFound:
      return error_reply(404, to_string(e.code), e.message);
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kConflict:
    case ErrorCode::kIllegalState:
      return error_reply(400, to_string(e.code), e.message);
    case ErrorCode::kUnavailable:
      return error_reply(503, to_string(e.code), e.message);
    default:
      return error_reply(500, to_string(e.code), e.message);
  }
}

/// `e`, attributed to the merchant that acted.
inline AuditEntry by(std::string merchant, AuditEntry e) {
  e.merchant = std::move(merchant);
  return e;
}

class PaymentActor : public std::enable_shared_from_this<PaymentActor> {
public:
  PaymentActor(caf::event_based_actor* self, const ActorContext* context, std::string payment_id)
      : self_(self), ctx_(*context), id_(std::move(payment_id)) {}

  caf::behavior behavior();

private:
  // -- plumbing ----------------------------------------------------------------------------

  void release_waiters();

  template <class T>
  std::function<void(T)> in_actor(std::function<void(T)> fn) {
    return actors::in_actor<T>(self_, std::move(fn));
  }

  void on_routed();

  // Offered by the directory after an idle timeout without messages: retire only when
  // nothing is in flight and the directory agrees that every message it routed was handled.
  void on_idle();

  // -- loading: every store read runs on the store's reader threads, never on this worker ----

  // Runs `again` once the payment is loaded. Commands start with `if (!loaded_) return
  // when_loaded(...)`: the first one starts the load, later ones queue behind it in arrival
  // order; while a failed load is reported, `sink` gets the failure instead.
  void when_loaded(const ReplySink& sink, std::function<void()> again);
  void on_loaded(Result<PaymentSnapshot> got);

  // True when the payment is not loaded yet: `handler` runs with `cmd` once it is.
  template <class Command>
  bool wait_for_load(void (PaymentActor::*handler)(Command), Command& cmd) {
    if (loaded_) {
      return false;
    }
    ReplySink sink;
    if constexpr (std::is_same_v<Command, NotifiedCommand>) {
      // answers nobody
    } else {
      sink = cmd.sink;
    }
    when_loaded(sink, [me = shared_from_this(), handler, cmd = std::move(cmd)]() mutable {
      ((*me).*handler)(std::move(cmd));
    });
    return true;
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

  // -- audit trail ---------------------------------------------------------------------------

  static AuditEntry entry(std::string kind, std::string ref, std::string fingerprint = {},
                          std::string_view before = {}, std::string_view after = {}, std::string detail = {});

  // Adds an entry to a batch the caller commits next, attributed to the merchant whose
  // mutation is in flight unless it names one. Buffered entries are committed first, so that
  // the chain reaches the store in order and its head never moves back.
  void audit(storage::Batch& batch, AuditEntry e) {
    if (e.merchant.empty()) {
      e.merchant = inflight_merchant_;
    }
    flush_audit(true);  // counted arrivals are sealed before the entry that follows them
    audit_.append(id_, std::move(e), batch);
  }

  // For arrivals that change nothing (duplicates, refusals): the entry is buffered until the
  // messages already in the mailbox are handled, then rides along with the next group commit
  // and nobody waits for it. A burst of duplicates costs one commit and one chain head. If
  // the commit is lost to a storage failure the cached chain head is reloaded, so the next
  // entry still links to what is on disk. Once the chain is long, such arrivals are counted
  // instead (audit.hpp): `seal` puts the counts into the chain as one entry.
  void audit_now(AuditEntry e);
  void flush_audit(bool seal = false);
  void seal_tally();

  // Ends the current mutation and starts the next deferred one, if any.
  void finish();

  void reply_all(std::vector<ReplySink>& sinks, const Reply& reply);

  // Answers the operation or event in flight (and whoever joined it) and ends it.
  void answer_and_finish(const Reply& reply) {
    reply_all(op_waiters_, reply);
    finish();
  }

  // A commit failed: answer with a retryable error and forget the cached record, which may
  // no longer match the store.
  void abandon(std::vector<ReplySink>& sinks, const Error& e);

  // -- ownership -----------------------------------------------------------------------------

  // The payment belongs to `merchant`; payments stored before owners were recorded belong to
  // the legacy owner (the first merchant of the credentials file).
  const std::string& owner() const { return record_->owner.empty() ? ctx_.legacy_owner : record_->owner; }
  bool owned_by(const std::string& merchant) const { return owner() == merchant; }

  // The acquirer this payment went to when it was created, with its owner's credentials.
  acquirer::Acquirer& payment_acquirer() const { return ctx_.acquirers->acquirer(record_->acquirer_route, owner()); }

  // What another merchant hears about a payment: exactly what a payment that does not exist
  // answers, byte for byte.
  Reply unknown_payment() const { return error_reply(404, "not-found", "unknown payment " + id_); }

  // A Create Payment whose paymentId is taken, by another payment of the caller's or by
  // another merchant's: one answer for both, so it tells nothing about the other payment.
  Reply payment_conflict() const {
    return error_reply(400, "payment-conflict", "paymentId " + id_ + " was already used for a different payment");
  }

  // -- Create Payment ----------------------------------------------------------------------

  void on_create(CreateCommand cmd);

  // -- POS (notes/ppp.md §10): identify terminal -> await terminal -> final ---------------

  static constexpr std::string_view kIdentifyTerminal = "identify-terminal";
  static constexpr std::string_view kAwaitPos = "await-pos";

  // True when a Create Payment must do more than replay: the terminal is known but the charge
  // has not started, or it started and its answer was never recorded (a crash in between).
  bool pos_charge_due() const;

  // The identify-terminal -> await-pos compare-and-swap: only its winner starts the charge.
  void start_pos_charge(ppp::CreatePaymentRequest request);

  void on_terminal(TerminalCommand cmd);

  // Persists the intent before the acquirer hears of the payment (put-if-absent).
  void write_intent(ppp::CreatePaymentRequest request, std::string fingerprint);

  // A record left `processing` (crash, acquirer failure): ask the acquirer what it did under
  // this key; authorize (same key, so at most one charge) only if it never saw the payment.
  void reconcile(ppp::CreatePaymentRequest request);

  void call_authorize(ppp::CreatePaymentRequest request);

  void on_authorized(Result<acquirer::Authorization> result);

  // -- reconciliation: records whose acquirer outcome is not known -------------------------

  // The answer while the outcome is unknown: "undefined", no identifiers yet.
  std::string unresolved_response() const;

  void schedule_reconcile();

  void on_reconcile_tick();

  // Asks the acquirer under the payment's own key; applies a known outcome (with a callback),
  // leaves a payment the acquirer never saw for the gateway's retry, and retries a failed
  // status call with backoff until the record is marked orphaned.
  void reconcile_in_background(std::function<void()> done);

  void mark_orphaned();

  // Start-up recovery: finish operations left in flight (same requestId, so at most once at
  // the acquirer), then reconcile the payment itself.
  void on_recover(RecoverCommand cmd);

  void resume_operation(const std::string& request_id);

  void on_notified(NotifiedCommand cmd);

  // -- asynchronous outcomes: acquirer webhooks and refreshes ------------------------------

  void on_event(EventCommand cmd);

  // on_event once the actor is reserved for it and the inbox has said whether it was seen.
  void apply_event(const AcquirerEvent& event, Result<std::optional<storage::Versioned>> seen);

  void on_refresh(RefreshCommand cmd);

  // Moves an `undefined` payment to its final state and queues the callback, in one batch with
  // `extra` (the inbox record). A stale or non-final outcome changes nothing but `extra`.
  // Replies `reply` to op_waiters_, or the current Create Payment answer if none is given.
  void apply_outcome(const acquirer::Authorization& a, storage::Batch extra, std::optional<Reply> reply,
                     const std::string& source, const std::string& source_hash);

  OutboxEntry new_callback(PaymentRecord& r) const;

  // The Create Payment answer for the record's state; identifiers come from the record, so
  // they never change once issued (G2).
  std::string create_response(const PaymentRecord& r, std::string_view code, std::string_view message) const;

  // What the shopper needs while the payment is open, and the card fragments of a POS result.
  void add_method_fields(const PaymentRecord& r, ppp::CreatePaymentResponse& out) const;

  // -- cancel / settle / refund ------------------------------------------------------------

  void on_operate(OperateCommand cmd);

  Reply request_conflict(const ppp::OperationRequest& req) const;

  // Looks up this payment's operation under `request_id` on a reader thread, then runs `then`.
  template <class Then>
  void load_operation(const std::string& request_id, Then then) {
    if (!record_) {
      return then(Result<std::optional<StoredOperation>>());  // no payment, no operations of it
    }
    read_then<Result<std::optional<StoredOperation>>>(
        [id = id_, request_id, legacy = record_->owner.empty()](const Lookup& get) {
          return read_operation(get, id, request_id, legacy);
        },
        std::move(then));
  }

  // on_operate once the actor is reserved for `cmd` and its stored operation, if any, is read.
  void operate_with(OperateCommand cmd, std::string fingerprint, Result<std::optional<StoredOperation>> stored);

  Status validate(const ppp::OperationRequest& req) const;

  void write_operation_intent(ppp::OperationRequest req, std::string fingerprint);

  void call_operation(ppp::OperationRequest req, OperationRecord op, uint64_t op_etag);

  void on_operation_result(ppp::OperationRequest req, OperationRecord op, uint64_t op_etag,
                           Result<acquirer::OperationOutcome> result);

  static PaymentRecord apply(PaymentRecord r, ppp::OperationKind kind, Cents amount);

  caf::event_based_actor* self_;
  const ActorContext& ctx_;
  std::string id_;

  bool loaded_ = false;
  bool loading_ = false;
  std::vector<std::function<void()>> awaiting_load_;  // commands that arrived before the record
  const Error* load_failure_ = nullptr;                // set while a failed load is reported
  std::optional<PaymentRecord> record_;
  uint64_t etag_ = 0;

  bool busy_ = false;
  bool background_ = false;      // the mutation in flight was started by no caller
  bool told_undefined_ = false;  // a caller was answered "undefined" while unresolved
  bool reconcile_pending_ = false;
  int reconcile_attempts_ = 0;
  AuditChain audit_;
  storage::Batch audit_buffer_;  // entries of audit_now() not yet handed to the store
  ArrivalTally tally_;           // arrivals counted, not yet sealed into the chain
  bool tally_changed_ = false;   // since it was last handed to the store
  std::vector<ReplySink> create_waiters_;
  std::vector<ReplySink> op_waiters_;
  std::string inflight_request_id_;
  std::string inflight_fingerprint_;
  std::string inflight_merchant_;  // who asked for the mutation in flight; empty: acquirer, connector
  std::string inflight_op_key_;    // where the operation in flight is stored
  std::deque<std::function<void()>> deferred_;

  uint64_t handled_ = 0;
};

}  // namespace idempay::actors
