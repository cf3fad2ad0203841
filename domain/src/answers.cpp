#include "idempay/domain/answers.hpp"

namespace idempay::domain {

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::kDone: return "done";
    case Outcome::kNotFound: return "not-found";
    case Outcome::kRefused: return "refused";
    case Outcome::kConflict: return "conflict";
    case Outcome::kRetry: return "retry";
    case Outcome::kFailed: return "failed";
    case Outcome::kManual: return "manual";
  }
  return "failed";
}

std::string_view code_of(Refusal refusal) {
  switch (refusal) {
    case Refusal::kInvalidState: return "invalid-state";
    case Refusal::kAmountNotPositive: return "amount-not-positive";
    case Refusal::kOverSettleLimit: return "over-settle-limit";
    case Refusal::kOverSettled: return "over-settled";
    case Refusal::kInvalidSplit: return "invalid-split";
    case Refusal::kAlreadySettled: return "already-settled";
    case Refusal::kNotFound: return "not-found";
    case Refusal::kPaymentConflict: return "payment-conflict";
    case Refusal::kRequestConflict: return "request-conflict";
    case Refusal::kTerminalConflict: return "terminal-conflict";
    case Refusal::kEventConflict: return "event-conflict";
    case Refusal::kConflict: return "conflict";
    case Refusal::kNotActed: return "not-acted";
    case Refusal::kOutcomeUnknown: return "outcome-unknown";
    case Refusal::kOperationPending: return "operation-pending";
    case Refusal::kRefundPending: return "refund-pending";
    case Refusal::kAcquirerUnavailable: return "acquirer-unavailable";
    case Refusal::kInProgress: return "in-progress";
    case Refusal::kUnavailable: return "unavailable";
    case Refusal::kStarting: return "starting";
    case Refusal::kDraining: return "draining";
    case Refusal::kStoreUnavailable: return "store-unavailable";
    case Refusal::kStoreNotWritable: return "store-not-writable";
    case Refusal::kInvariantBroken: return "invariant-broken";
    case Refusal::kTimeout: return "timeout";
    case Refusal::kCancelManually: return "cancel-manually";
    case Refusal::kRefundManually: return "refund-manually";
    case Refusal::kInvalidRequest: return "invalid-request";
    case Refusal::kInternalError: return "internal-error";
  }
  return "internal-error";
}

Outcome outcome_of(Refusal refusal) {
  switch (refusal) {
    case Refusal::kNotFound:
      return Outcome::kNotFound;
    case Refusal::kInvalidState:
    case Refusal::kAmountNotPositive:
    case Refusal::kOverSettleLimit:
    case Refusal::kOverSettled:
    case Refusal::kInvalidSplit:
    case Refusal::kPaymentConflict:
    case Refusal::kRequestConflict:
    case Refusal::kInvalidRequest:
      return Outcome::kRefused;
    case Refusal::kTerminalConflict:
    case Refusal::kEventConflict:
    case Refusal::kConflict:
    case Refusal::kNotActed:
      return Outcome::kConflict;
    case Refusal::kInProgress:
    case Refusal::kUnavailable:
    case Refusal::kStarting:
    case Refusal::kDraining:
    case Refusal::kStoreUnavailable:
    case Refusal::kStoreNotWritable:
    case Refusal::kInvariantBroken:
      return Outcome::kRetry;
    case Refusal::kCancelManually:
    case Refusal::kRefundManually:
      return Outcome::kManual;
    case Refusal::kAlreadySettled:
    case Refusal::kOutcomeUnknown:
    case Refusal::kOperationPending:
    case Refusal::kRefundPending:
    case Refusal::kAcquirerUnavailable:
    case Refusal::kTimeout:
    case Refusal::kInternalError:
      return Outcome::kFailed;
  }
  return Outcome::kFailed;
}

Refusal refusal_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound: return Refusal::kNotFound;
    case ErrorCode::kInvalidArgument: return Refusal::kInvalidRequest;
    case ErrorCode::kConflict: return Refusal::kConflict;
    case ErrorCode::kIllegalState: return Refusal::kInvalidState;
    case ErrorCode::kUnavailable: return Refusal::kUnavailable;
    case ErrorCode::kTimeout: return Refusal::kTimeout;
    default: return Refusal::kInternalError;
  }
}

std::string Refused::reason() const { return std::string(code_of(refusal)) + ": " + message; }

Reply refusal(Refusal r, std::string message) {
  Reply reply(outcome_of(r), {});
  reply.refused = Refused{r, std::move(message), std::nullopt};
  return reply;
}

Reply operation_refusal(const ppp::OperationRequest& req, Refusal r, std::string message) {
  Reply reply(Outcome::kFailed, {});
  reply.refused = Refused{r, std::move(message), OperationRef{req.kind, req.payment_id, req.request_id}};
  return reply;
}

Reply error_reply(const Error& e) {
  Refusal r = refusal_of(e.code);
  if (r == Refusal::kUnavailable) {
    // The detail (a database's address, a file's path) is for the log, where the store
    // writes it; the caller learns only that nothing was done and a retry will be.
    return refusal(r, "temporarily unavailable; nothing was done, retry the same request");
  }
  return refusal(r, e.message);
}

}  // namespace idempay::domain
