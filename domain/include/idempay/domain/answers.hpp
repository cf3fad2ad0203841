#pragma once
// What the payment engine answers, typed. The core decides an answer's outcome and its facts;
// the PPP library (answers/) writes the documents the gateway reads. A document the core must
// store with the state it describes (a payment's answer, an operation's) is written by the
// AnswerEncoder the core is handed, so that its bytes go into the same batch as that state and
// a replay is those bytes (G2). A refusal is never stored: it travels typed, as a Refusal, and
// is written where the answer leaves the process.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"
#include "idempay/protocol/methods.hpp"
#include "idempay/protocol/ppp.hpp"

namespace idempay::domain {

/// What a command came to. The PPP library maps each to the HTTP status the gateway expects;
/// nothing in the engine speaks HTTP statuses.
enum class Outcome : uint8_t {
  kDone,      ///< the answer: the payment's state, the operation's result, an acknowledgement
  kNotFound,  ///< no such payment (or another merchant's: the same answer)
  kRefused,   ///< cannot be done: invalid, illegal in this state, an id already used otherwise
  kConflict,  ///< collides with what is recorded: another terminal, another body for an event
  kRetry,     ///< nothing was done; the same request later will be (storage, shutdown)
  kFailed,    ///< the acquirer failed or refused it
  kManual,    ///< an operation that must be done by hand (PPP: cancel-manually / refund-manually)
};

/// "done", "not-found", "refused", "conflict", "retry", "failed", "manual".
std::string_view to_string(Outcome outcome);

/// Every refusal the engine gives, each by name. Its code (code_of) is the answer's `code` and
/// begins the audit entry that records it; each is decided on one guard line (grep its name).
enum class Refusal : uint8_t {
  // The payment's lifecycle (G3), decided in lifecycle.cpp.
  kInvalidState,       ///< the payment's state does not allow the operation
  kAmountNotPositive,  ///< a settlement or refund that moves no money
  kOverSettleLimit,    ///< settlements would add up to more than was authorized (or maxValue)
  kOverSettled,        ///< refunds would add up to more than was settled
  kInvalidSplit,       ///< a split that does not add up or names no recipient properly
  kAlreadySettled,     ///< a cancellation of a settled payment (the gateway refunds it instead)
  // Identities and what is recorded under them.
  kNotFound,           ///< no such payment, another merchant's, or no POS payment by that name
  kPaymentConflict,    ///< a paymentId already used for another payment (of anyone's)
  kRequestConflict,    ///< a requestId already used for another operation
  kTerminalConflict,   ///< a POS payment's terminal is already another one
  kEventConflict,      ///< a webhook id already used with another body
  kConflict,           ///< an operator's change collided with another
  kNotActed,           ///< the acquirer did not do what the stub was asked to
  // Not now: the same request later.
  kOutcomeUnknown,     ///< a cancel while the acquirer's outcome is not known yet
  kOperationPending,   ///< the acquirer accepted the operation and has not completed it
  kRefundPending,      ///< the same, for a refund
  kAcquirerUnavailable,  ///< the acquirer did not answer; nothing is recorded
  kInProgress,         ///< another instance (or another call) is carrying out the same request
  kUnavailable,        ///< the store or the engine cannot take it now
  kStarting,           ///< the engine is not running yet
  kDraining,           ///< this instance is shutting down
  kStoreUnavailable,   ///< the store does not answer
  kStoreNotWritable,   ///< the store does not take writes
  kInvariantBroken,    ///< a rule the engine relies on did not hold: nothing was done
  kTimeout,            ///< a call took too long; nothing is recorded
  // By hand.
  kCancelManually,     ///< the merchant cancels this payment by hand
  kRefundManually,     ///< the merchant refunds this payment by hand
  // Malformed.
  kInvalidRequest,     ///< a field out of its bounds
  kInternalError,      ///< a stored record that does not read, or another fault of the engine's
};

/// The answer's code: "invalid-state", "payment-conflict"...
std::string_view code_of(Refusal refusal);
/// How an error document with this refusal is answered (an operation's own shape is always
/// kFailed: the protocol documents only success, failure and by-hand answers for those routes).
Outcome outcome_of(Refusal refusal);
/// The refusal a domain error comes to (a store's, a parser's).
Refusal refusal_of(ErrorCode code);

/// Which operation a refusal answers in its own shape (cancellationId, settleId or refundId
/// null) rather than as an error document.
struct OperationRef {
  ppp::OperationKind kind = ppp::OperationKind::kCancel;
  std::string payment_id;
  std::string request_id;

  friend bool operator==(const OperationRef& a, const OperationRef& b) {
    return a.kind == b.kind && a.payment_id == b.payment_id && a.request_id == b.request_id;
  }
};

/// A refusal with what its message says.
struct Refused {
  Refused() = default;
  Refused(Refusal r, std::string m, std::optional<OperationRef> op = std::nullopt)
      : refusal(r), message(std::move(m)), operation(std::move(op)) {}

  Refusal refusal = Refusal::kInternalError;
  std::string message;
  std::optional<OperationRef> operation;  ///< set: answered in the operation's own shape

  /// "code: message", as the audit trail records it.
  std::string reason() const;

  friend bool operator==(const Refused& a, const Refused& b) {
    return a.refusal == b.refusal && a.message == b.message && a.operation == b.operation;
  }
};

/// An answer: its outcome, and either a document's bytes (written by the AnswerEncoder, as
/// stored) or a refusal (written where it leaves the process).
struct Reply {
  Reply() = default;
  Reply(Outcome o, std::string b) : outcome(o), body(std::move(b)) {}

  Outcome outcome = Outcome::kDone;
  std::string body;
  std::optional<Refused> refused;
  /// How the answer came about, for the access log: "reused" (a stored answer given again),
  /// "conflict" (another request under the same id), or empty (worked out now).
  std::string_view served;

  friend bool operator==(const Reply& a, const Reply& b) {
    return a.outcome == b.outcome && a.body == b.body && a.refused == b.refused;
  }
};

/// A refusal as an error document.
Reply refusal(Refusal r, std::string message);
/// A refusal in an operation's own shape (a failure the gateway retries; nothing was done).
Reply operation_refusal(const ppp::OperationRequest& req, Refusal r, std::string message);
/// A domain error as an answer: not found, refused, retry (unavailable), else failed.
Reply error_reply(const Error& e);

/// What a payment of a method's family hands the shopper: the facts the encoder turns into
/// the gateway's fields for that family.
struct PaymentDocumentFacts {
  ppp::MethodFamily family = ppp::MethodFamily::kCard;
  bool open = false;      ///< the outcome is not known yet (the answer is `undefined`)
  bool approved = false;  ///< POS: the card fragments go into the approved answer
  ppp::PaymentDocument document;
  /// POS, while the terminal is not yet known: where the terminal app submits its serial.
  /// Empty: the terminal is known and the payment waits for the card.
  std::string pos_submit_url;
};

/// A payment's answer (Create Payment, its callback, a refresh).
struct PaymentAnswer {
  std::string payment_id;
  std::string status;  ///< approved | denied | undefined
  std::string authorization_id;
  std::string tid;
  std::string nsu;
  std::string acquirer;
  std::string code;
  std::string message;
  int64_t delay_to_auto_settle = 21600;
  int64_t delay_to_auto_settle_after_antifraud = 1800;
  int64_t delay_to_cancel = 21600;
  Cents max_value = 0;  ///< what may be settled at most; 0: not said
  /// What the method's family adds; absent before the payment has any (the first `undefined`).
  std::optional<PaymentDocumentFacts> method;
};

/// An operation's answer (cancel, settle, refund); `id` empty when it did not happen.
struct OperationAnswer {
  ppp::OperationKind kind = ppp::OperationKind::kCancel;
  std::string payment_id;
  std::string request_id;
  std::string id;
  Cents value = 0;
  std::string code;
  std::string message;
};

/// Writes the documents the core stores. One implementation: the PPP library's.
class AnswerEncoder {
public:
  virtual ~AnswerEncoder() = default;
  virtual std::string payment(const PaymentAnswer& answer) const = 0;
  virtual std::string operation(const OperationAnswer& answer) const = 0;
  /// An acquirer's webhook taken (or taken before, `duplicate`).
  virtual std::string received(bool duplicate) const = 0;
  /// A POS terminal's serial taken.
  virtual std::string terminal_accepted() const = 0;
};

}  // namespace idempay::domain
