#pragma once
// What a command does to a payment, decided without I/O. Given the stored record (and its
// etag), a command and the time, each function below returns a Decision: the writes with
// their conditions, the audit entries, and the effects to carry out once the writes are
// durable (answer the waiters, hand a callback to the dispatcher, call the acquirer, retry a
// status call later). No CAF, no threads, no clock of its own: `now` is an argument.
//
// The payment actor (actors/) is the shell around it: it serialises the commands of one
// payment, loads the record, asks here, commits, performs the effects and feeds their results
// back here. The whole table, command by state, is in docs/payment-core.md; its tests are
// tests/unit/domain/payment_core_test.cpp.
//
// Each command has up to three steps:
//   *_now       answers that need no turn of the payment (refusals, stored answers): given
//               even while another mutation of the payment is in flight;
//   start_* /   the decision at the command's turn;
//   on its turn
//   <result>    the decision once the acquirer has answered.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "idempay/domain/acquirer.hpp"
#include "idempay/domain/answers.hpp"
#include "idempay/domain/audit.hpp"
#include "idempay/domain/lifecycle.hpp"
#include "idempay/domain/outbox.hpp"
#include "idempay/domain/payment_reads.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/protocol/methods.hpp"
#include "idempay/protocol/ppp.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::domain {

/// An authorization outcome reported by the acquirer (signed webhook, already verified).
struct AcquirerEvent {
  std::string event_id;   ///< the webhook-id: the inbox key
  std::string body_hash;  ///< SHA-256 of the raw body, hex
  std::string payment_id;
  domain::Authorization authorization;
  int64_t revision = 0;  ///< per payment, increasing; stale revisions are ignored
  /// Set for a report on an operation rather than an authorization outcome (Adyen: a capture,
  /// refund or cancellation carried out or not): recorded in the trail, the payment unchanged.
  std::string report;
  bool report_is_failure = false;  ///< an operation the gateway heard succeed did not
  /// Who sent it, when the acquirer's notification came through a merchant's own path and keys
  /// (Adyen: /webhooks/adyen/{merchant}/{acquirer}): it reaches only a payment that merchant
  /// owns and created through that acquirer entry (its stored route). Empty: the connector's
  /// own acquirer webhook, which may reach any payment.
  std::string sender;
  std::string sender_route;
};

/// One payment as the core sees it: its id and, once created, its stored record and etag.
struct Payment {
  std::string id;
  std::optional<PaymentRecord> record;
  uint64_t etag = 0;
};

/// What the connector's configuration contributes to decisions.
struct CoreConfig {
  std::string fingerprint_key;  ///< keys the request fingerprints
  std::string legacy_owner;     ///< owns the payments stored before owners were recorded
  std::string public_url;       ///< base of a POS payment's submitUrl
  std::string pos_link_key;     ///< signs the token of a POS payment's submitUrl
  /// This instance, when several share the store (empty: the only one; no leases are kept).
  std::string instance;
  /// How long a lease keeps other instances away: longer than the acquirer call it covers.
  int64_t lease_ms = 30'000;
  /// Each offered method's split mode and answer timers (the manifest configuration);
  /// a method not listed has the defaults.
  std::map<std::string, ppp::MethodTerms, std::less<>> methods;
  /// Writes the answers the core stores (the PPP library's); required.
  const AnswerEncoder* answers = nullptr;

  const ppp::MethodTerms& terms(std::string_view method) const;
  const AnswerEncoder& encoder() const;

  bool shared() const { return !instance.empty(); }
};

/// The effect that follows a decision once its writes are durable.
enum class Next : uint8_t {
  kEnd,             ///< answer the waiters with `answer`, if set; the mutation ends
  kAuthorize,       ///< call the acquirer's authorize under the payment's key
  kAskStatus,       ///< ask the acquirer what it did under the payment's key
  kOperate,         ///< call the acquirer's operation `operation`
  kReconcileLater,  ///< answer, end, and ask the acquirer's status again later
  kFollow,          ///< another instance holds the payment's lease: look again shortly
};

/// An operation whose acquirer call is due.
struct PendingOperation {
  ppp::OperationRequest request;
  OperationRecord record;
  std::string key;    ///< where the record is stored
  uint64_t etag = 0;  ///< its version; 0 while its intent is among the decision's writes
};

struct Decision {
  /// Arrivals that change nothing (duplicates, refusals): chained without anyone waiting.
  std::vector<AuditEntry> noted;
  /// Chained, in this order, into the batch that commits `writes`.
  std::vector<AuditEntry> audit;
  /// One atomic batch, each write conditioned on the version it was decided from.
  storage::Batch writes;
  std::optional<PaymentRecord> record;   ///< the payment once `writes` is durable
  std::optional<OutboxEntry> callback;   ///< to the dispatcher once `writes` is durable
  std::optional<Watch> watch;            ///< to the watcher once `writes` is durable
  std::optional<Reply> answer;           ///< to whoever waits on this command
  Next next = Next::kEnd;
  std::optional<PendingOperation> operation;  ///< for Next::kOperate
  /// Set when a rule the core relies on did not hold for this command (a precondition the
  /// shell should have met): nothing of the decision may be written or done.
  std::string broken;

  bool commits() const { return !writes.empty() || !audit.empty(); }
};

/// The rule `d` breaks, if any (empty: none): a precondition the command missed (d.broken),
/// a payment's state written that the lifecycle forbids from its state `before` (G3), a new
/// payment written in any state but processing or undefined, or totals that break their bounds
/// (settled at most the settle limit, refunded at most settled). The shell checks every
/// decision with this before it commits: test builds stop at once (the test that got there
/// fails loudly); in production nothing is written, the callers hear a retryable error, and
/// the broken rule is logged.
std::string broken_invariant(const Payment& before, const Decision& d);

// -- answers shared by several commands ---------------------------------------------------------

/// What another merchant hears about a payment: exactly what a payment that does not exist
/// answers.
Reply unknown_payment(const std::string& payment_id);
/// A Create Payment whose paymentId is taken, by another payment of the caller's or by another
/// merchant's: one answer for both, so that it tells nothing about the other payment.
Reply payment_conflict(const std::string& payment_id);
Reply request_conflict(const std::string& request_id);
/// A cancel, settle or refund whose requestId was used for another operation: the
/// operation's own answer shape with its id null, and Outcome::kFailed — the protocol documents
/// only success, failure and by-hand answers for these routes, and the gateway retries a
/// failure (the same refusal again;
/// nothing is done meanwhile).
Reply operation_request_conflict(const ppp::OperationRequest& req);
/// The Create Payment answer while the outcome is unknown: "undefined", no identifiers yet.
Reply undefined_answer(const std::string& payment_id, const CoreConfig& config);
/// The answer to a terminal submission for a payment that does not exist, is not a POS payment,
/// or was named with a wrong token: one answer for all three.
Reply no_pos_payment(const std::string& payment_id);

/// The payment's owner: payments stored before owners were recorded belong to the legacy owner.
const std::string& owner_of(const PaymentRecord& r, const CoreConfig& config);

/// The token a POS payment's submitUrl carries: unguessable, tied to the payment, checked in
/// constant time before the payment is looked up.
std::string pos_link_token(const std::string& key, const std::string& payment_id);
bool pos_link_token_matches(const std::string& key, const std::string& payment_id, std::string_view token);

/// The arrival's audit entry, attributed to `merchant`.
AuditEntry by(std::string merchant, AuditEntry e);

// -- leases (instances sharing the store) -------------------------------------------------------

/// Another instance holds a lease on the payment that has not expired.
bool leased_elsewhere(const PaymentRecord& r, const CoreConfig& config, int64_t now);

/// The write that makes this instance the payment's lease holder before it calls the
/// acquirer (a compare-and-swap: of two instances taking over, one wins). nullopt when none is
/// needed: a single instance, or a lease of this one with half its time left.
std::optional<Decision> take_lease(const Payment& p, const CoreConfig& config, int64_t now);

/// The answer to a request that found another instance's operation in flight until its
/// deadline: nothing was done here, and the gateway's retry gets the outcome.
Reply in_progress_elsewhere(const std::string& ref);

// -- Create Payment -----------------------------------------------------------------------------

struct CreateArrival {
  const ppp::CreatePaymentRequest& request;
  const std::string& merchant;     ///< the authenticated caller
  const std::string& fingerprint;  ///< ppp::payment_fingerprint of the request
  std::string trace{};        ///< the decision's `traceparent`: a new payment's trace
  std::string trace_state{};  ///< and its `tracestate`
};

/// Another merchant's paymentId or a different payment under it (conflict), or a final
/// payment with nothing left to do (its stored answer, byte for byte).
std::optional<Decision> answer_create_now(const Payment& p, const CreateArrival& a, const CoreConfig& config);

/// The acquirer a new payment goes to: its route (kept with the payment for good), and the
/// name that acquirer will know the payment by when not its paymentId (Acquirer::reference),
/// indexed with the intent so that the acquirer's notifications find the payment.
struct AcquirerRoute {
  std::string name;
  std::string reference;
};

/// At its turn: a new payment writes its intent (put-if-absent) and then authorizes, or, for
/// POS, asks for the terminal; a POS payment whose terminal is known starts its charge; an
/// unresolved one asks the acquirer what it did under the payment's key. `route` is the
/// acquirer a new payment of this merchant and method takes.
Decision start_create(const Payment& p, const CreateArrival& a, const AcquirerRoute& route, const CoreConfig& config,
                      int64_t now);

/// Who must hear of an authorization outcome by callback: whoever heard "undefined", or
/// nobody at all when it was found in the background.
struct Listeners {
  bool background = false;      ///< no caller is waiting: found by reconciliation
  bool told_undefined = false;  ///< a caller was answered "undefined" meanwhile
};

/// The acquirer's authorization: the payment moves to approved, denied or undefined, with the
/// recovery key removed once the outcome is known and a callback for whoever did not hear it.
Decision authorized(const Payment& p, const domain::Authorization& a, Listeners listeners, const CoreConfig& config,
                    int64_t now);

/// The authorize call failed: the outcome is unknown, the callers hear "undefined", and a
/// status call under the same key settles it later (never a second key).
Decision authorize_failed(const Payment& p, const Error& e, const std::string& merchant, const CoreConfig& config);

/// The status call of a Create Payment retried while unresolved: a known outcome applies, a
/// payment the acquirer never saw is authorized (same key), a failed call is as above.
Decision create_status(const Payment& p, const Result<std::optional<domain::Authorization>>& status,
                       Listeners listeners, const std::string& merchant, const CoreConfig& config, int64_t now);

/// The status call of background reconciliation. A failed call answers Next::kReconcileLater.
Decision background_status(const Payment& p, const Result<std::optional<domain::Authorization>>& status,
                           const CoreConfig& config, int64_t now);

/// Reconciliation gave up: a payment still `processing` becomes `orphaned`; nullopt otherwise.
std::optional<Decision> orphan(const Payment& p, int64_t now);

// -- POS terminal submission (docs/ppp-surface.md#payment-methods) -------------------------------------------------

inline constexpr std::string_view kIdentifyTerminal = "identify-terminal";
inline constexpr std::string_view kAwaitPos = "await-pos";

/// Not a POS payment: answered at once.
std::optional<Decision> answer_terminal_now(const Payment& p);
/// The terminal's serial is recorded once; the same serial again is accepted, another refused.
Decision submit_terminal(const Payment& p, const std::string& serial, const CoreConfig& config, int64_t now);

// -- cancel / settle / refund -------------------------------------------------------------------

struct OperationArrival {
  const ppp::OperationRequest& request;
  const std::string& merchant;
  const std::string& fingerprint;  ///< ppp::operation_fingerprint of the request
};

/// The recipients of a settlement or refund where the payment's method does not split at that
/// step (ppp::splits_at) are information only: dropped before the request is fingerprinted or
/// carried out, so that they neither reach the acquirer nor tell two retries apart. The core
/// itself never stores or sends them either way.
void drop_unsplit_recipients(const Payment& p, ppp::OperationRequest& req, const CoreConfig& config);

/// An operation on another merchant's payment: answered as an unknown payment.
std::optional<Decision> answer_operation_now(const Payment& p, const OperationArrival& a, const CoreConfig& config);

/// At its turn, with the operation stored under its requestId (if any): the stored answer, a
/// conflict, the resumption of an unfinished call (same acquirer key), a refusal by the state
/// machine, or a new intent followed by the acquirer call.
Decision start_operation(const Payment& p, const OperationArrival& a,
                         const Result<std::optional<StoredOperation>>& stored, const CoreConfig& config, int64_t now);

/// Start-up recovery of an operation left in flight; nullopt when it is no longer in flight.
std::optional<PendingOperation> resume_operation(const std::string& payment_id, const std::string& request_id,
                                                 const std::optional<StoredOperation>& stored);

/// The acquirer's answer to an operation: recorded as done with its answer, and applied to
/// the payment's state and totals if it succeeded; an operation the acquirer cannot do by API
/// is recorded as done by hand (Outcome::kManual). A failed call records nothing, and neither does one the
/// acquirer accepted but has not completed (a pending refund: a failure, "not yet"): the retry
/// resumes the same requestId, under the same acquirer key, until the acquirer says it is done.
Decision operation_done(const Payment& p, const PendingOperation& op,
                        const Result<domain::OperationOutcome>& outcome, const CoreConfig& config, int64_t now);

/// operation_done() again after its commit lost a race with another instance, on the payment
/// and the operation as stored now (`stored`): an operation another instance recorded as done
/// meanwhile (it took the operation over and applied its outcome first) is answered as it was
/// recorded, never applied to the payment a second time; otherwise operation_done().
Decision operation_done_again(const Payment& p, const PendingOperation& op,
                              const Result<std::optional<StoredOperation>>& stored,
                              const Result<domain::OperationOutcome>& outcome, const CoreConfig& config, int64_t now);

/// A cancel of a payment whose outcome is unknown asks the acquirer first (start_operation:
/// `ask status`): a known outcome is applied (the actor then runs the cancel again on it);
/// an unknown one answers a failure in the Cancel shape, not stored, for the gateway to retry.
Decision cancel_status(const Payment& p, const ppp::OperationRequest& req,
                       const Result<std::optional<domain::Authorization>>& status, const CoreConfig& config,
                       int64_t now);

/// The payment after a successful operation of `amount`.
PaymentRecord apply_operation(PaymentRecord r, ppp::OperationKind kind, Cents amount, int64_t now);

// -- acquirer webhooks and refreshes ------------------------------------------------------------

/// A verified webhook, with what the inbox holds under its id: a duplicate or a conflict, or
/// the outcome applied in one batch with the inbox record. An event whose sender does not own
/// the payment, or did not create it through the route it came by, is answered as for an
/// unknown payment and changes nothing (its arrival noted in the payment's trail).
Decision receive_event(const Payment& p, const AcquirerEvent& event,
                       const Result<std::optional<storage::Versioned>>& seen, const CoreConfig& config, int64_t now);

/// Who asks for a payment's status to be looked up again.
enum class Asker : uint8_t {
  kMerchant,  ///< the payment's merchant, authenticated (the PPP inbound route)
  kHint,  ///< an acquirer's notification that names the merchant only in its path, unauthenticated (API Pix)
  kConnector,  ///< the connector itself (a look after a refused cancel, the polling of a pending payment)
};

/// An inbound refresh: unknown or another merchant's payment; nullopt when it needs the
/// payment's turn. A merchant asking for another's payment is noted in that payment's trail;
/// a hint is not (anyone may post to a path), and the connector asks for any payment.
std::optional<Decision> answer_refresh_now(const Payment& p, const std::string& merchant, Asker asker,
                                           const CoreConfig& config);
/// At its turn: the stored answer, or a status call for an undefined payment.
Decision start_refresh(const Payment& p);
/// The status call's answer: applied if it is a newer final outcome; else the stored answer.
Decision refreshed(const Payment& p, const Result<std::optional<domain::Authorization>>& status,
                   const CoreConfig& config, int64_t now);

/// An action on the payment's acquirer side asked for by `merchant` (the in-process stub's
/// trigger): for its owner, the audit entry that records who asked for `what` and no answer
/// yet (the shell acts, then answers); for anyone else, the answer an unknown payment gets.
Decision owner_action(const Payment& p, const std::string& merchant, std::string_view what, const CoreConfig& config);

/// The Create Payment answer for the record's state; identifiers come from the record, so they
/// never change once issued (G2).
std::string create_response(const std::string& payment_id, const PaymentRecord& r, std::string_view code,
                            std::string_view message, const CoreConfig& config);

}  // namespace idempay::domain
