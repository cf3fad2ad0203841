#include "idempay/domain/payment_core.hpp"

#include <algorithm>

#include "idempay/domain/deliveries.hpp"
#include "idempay/base/assert.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/protocol/methods.hpp"

namespace idempay::domain {

namespace {

// Short, for the many entries below.
AuditEntry entry(AuditKind kind, std::string ref, std::string fingerprint = {}, std::string_view before = {},
                 std::string_view after = {}, std::string detail = {}) {
  return audit_entry(kind, std::move(ref), std::move(fingerprint), before, after, std::move(detail));
}

// An operation_received entry's detail: its kind, and who asked and why for an operator's.
std::string received_detail(const ppp::OperationRequest& req) {
  std::string kind(ppp::to_string(req.kind));
  return req.note.empty() ? kind : kind + " " + req.note;
}

Decision answer(Reply reply) {
  Decision d;
  d.answer = std::move(reply);
  return d;
}

// What the access log calls an answer noted as `kind`.
std::string_view served_as(AuditKind kind) {
  switch (kind) {
    case AuditKind::kEventDuplicateReused:
    case AuditKind::kOperationDuplicateReused:
      return "reused";
    case AuditKind::kEventRefused:
    case AuditKind::kOperationRefused:
    case AuditKind::kAccessRefused:
      return "conflict";
    default:
      return {};
  }
}

// An arrival noted in the trail with its answer; a refusal's entry gives its code first, so
// that the trail and the answer name the same refusal.
Decision noted_answer(AuditEntry noted, Reply reply) {
  reply.served = served_as(noted.kind);
  if (reply.refused) {
    noted.detail = std::string(code_of(reply.refused->refusal)) + (noted.detail.empty() ? "" : ": " + noted.detail);
  }
  Decision d = answer(std::move(reply));
  d.noted.push_back(std::move(noted));
  return d;
}

// A precondition the shell guarantees did not hold: the command is refused, nothing written.
Decision precondition_failed(std::string_view what) {
  Decision d = answer(refusal(Refusal::kInvariantBroken, "an internal rule did not hold; nothing was done"));
  d.broken = std::string(what);
  return d;
}

Decision then(Next next) {
  Decision d;
  d.next = next;
  return d;
}

PaymentState state_of(domain::AuthorizationStatus s) {
  switch (s) {
    case domain::AuthorizationStatus::kApproved:
      return PaymentState::kApproved;
    case domain::AuthorizationStatus::kDenied:
      return PaymentState::kDenied;
    default:
      return PaymentState::kUndefined;
  }
}

OutboxEntry new_callback(const std::string& payment_id, PaymentRecord& r, const CoreConfig& config, int64_t now) {
  OutboxEntry e;
  e.id = delivery_prefix(payment_id) + std::to_string(++r.callbacks);
  e.payment_id = payment_id;
  e.merchant = owner_of(r, config);
  e.url = r.callback_url;
  e.body = r.response;
  e.trace = r.trace;
  e.trace_state = r.trace_state;
  e.created_at = e.next_attempt_at = now;
  return e;
}

// Queues a callback carrying `r`'s answer, in the same batch as the transition it reports.
void add_callback(Decision& d, const std::string& payment_id, PaymentRecord& r, const CoreConfig& config,
                  int64_t now) {
  d.callback = new_callback(payment_id, r, config, now);
  d.writes.push_back({Space::kOutbox, d.callback->id, encode(*d.callback), 0});
  d.audit.push_back(entry(AuditKind::kDeliveryWritten, d.callback->id));
}

// The payment's own write, conditioned on the version it was decided from.
// A watched payment that leaves `undefined` is no longer watched: its index entry goes in the
// same batch.
void write_payment(Decision& d, const Payment& p, PaymentRecord updated) {
  if (updated.watch_until > 0 && updated.state != PaymentState::kUndefined) {
    updated.watch_until = 0;
    d.writes.push_back({Space::kWatches, p.id, std::nullopt, std::nullopt, true});
  }
  d.writes.push_back({Space::kPayments, p.id, encode(updated), p.etag});
  d.record = std::move(updated);
}

// How long past its document's expiry a watched payment is still asked about: an API Pix
// charge is removed, and reported denied, two minutes after it expires.
constexpr int64_t kWatchGraceMs = 300'000;

// A pending outcome whose acquirer answers status calls: watched from now until its document
// expires (and a grace), the index entry in the same batch as the record.
void start_watch(Decision& d, const Payment& p, PaymentRecord& updated, const domain::Authorization& a,
                 const CoreConfig& config, int64_t now) {
  if (!a.watch || updated.state != PaymentState::kUndefined || updated.watch_until > 0) {
    return;
  }
  updated.watch_until = now + a.document.expires_in_seconds * 1000 + kWatchGraceMs;
  Watch w{p.id, updated.watch_until, owner_of(updated, config) + "/" + updated.acquirer_route};
  d.writes.push_back({Space::kWatches, p.id, encode(w), std::nullopt, true});
  d.watch = std::move(w);
}

// Instances sharing the store: this one calls the acquirer for the payment until the lease
// expires. A single instance keeps none (nothing to keep away, and fewer bytes per record).
void grant_lease(PaymentRecord& r, const CoreConfig& config, int64_t now) {
  if (config.shared()) {
    r.lease_owner = config.instance;
    r.lease_until = now + config.lease_ms;
  }
}

void release_lease(PaymentRecord& r) {
  r.lease_owner.clear();
  r.lease_until = 0;
}

// What the shopper needs while the payment is open, and a POS result's card, as recorded; the
// answer's fields for them are the encoder's.
PaymentDocumentFacts document_facts(const std::string& payment_id, const PaymentRecord& r, const CoreConfig& config) {
  PaymentDocumentFacts f;
  f.family = ppp::method_family(r.payment_method).value_or(ppp::MethodFamily::kCard);
  f.open = r.state == PaymentState::kUndefined || r.state == PaymentState::kProcessing;
  f.approved = r.state == PaymentState::kApproved;
  f.document = r.document;
  if (r.pos_phase == kIdentifyTerminal) {
    f.pos_submit_url = config.public_url + "/pos/" + payment_id + "/terminal?token=" +
                       pos_link_token(config.pos_link_key, payment_id);
  }
  return f;
}

// True when a Create Payment must do more than replay: the terminal is known but the charge
// has not started, or it started and its answer was never recorded (a crash in between).
bool pos_charge_due(const PaymentRecord& r) {
  if (r.state != PaymentState::kUndefined || !ppp::is_pos(r.payment_method)) {
    return false;
  }
  return (r.pos_phase == kIdentifyTerminal && !r.terminal_serial.empty())
         || (r.pos_phase == kAwaitPos && r.tid.empty());
}

// A new payment: its intent, written only if the paymentId is still free.
Decision write_intent(const Payment& p, const CreateArrival& a, const AcquirerRoute& route, const CoreConfig& config,
                      int64_t now) {
  const auto& request = a.request;
  PaymentRecord r;
  r.state = PaymentState::kProcessing;
  r.amounts.authorized = request.value;
  r.currency = request.currency;
  r.payment_method = request.payment_method;
  r.order_id = request.order_id;
  r.reference = request.reference;
  r.transaction_id = request.transaction_id;
  r.merchant = request.merchant_name;
  r.owner = a.merchant;
  r.acquirer_route = route.name;
  r.fingerprint = a.fingerprint;
  r.callback_url = request.callback_url;
  r.card = request.card_summary;
  r.trace = a.trace;
  r.trace_state = a.trace_state;
  r.created_at = r.updated_at = now;
  bool pos = ppp::is_pos(request.payment_method);
  if (!pos) {
    grant_lease(r, config, now);  // the acquirer is called next
  }
  if (pos) {
    // The first POS call only asks for the terminal; nothing reaches the acquirer yet.
    r.state = PaymentState::kUndefined;
    r.pos_phase = std::string(kIdentifyTerminal);
    r.response = create_response(p.id, r, "pending", "identify the terminal", config);
  }
  Decision d;
  d.audit.push_back(entry(AuditKind::kEventReceived, p.id, r.fingerprint));
  d.audit.push_back(pos ? entry(AuditKind::kEventProcessed, p.id, r.fingerprint, "", to_string(r.state), "identify-terminal")
                        : entry(AuditKind::kEventProcessingStarted, p.id, r.fingerprint, "", to_string(r.state)));
  d.writes.push_back({Space::kPayments, p.id, encode(r), 0});
  if (!route.reference.empty()) {
    d.writes.push_back({Space::kReferences, route.reference, p.id, std::nullopt, true});
  }
  if (is_unresolved(r.state)) {
    d.writes.push_back({Space::kRecovery, recovery_key(p.id), std::string(), std::nullopt, true});
  }
  if (pos) {
    d.answer = Reply{Outcome::kDone, r.response};
  } else {
    d.next = Next::kAuthorize;
  }
  d.record = std::move(r);
  return d;
}

// The identify-terminal -> await-pos compare-and-swap: only its winner starts the charge.
Decision start_pos_charge(const Payment& p, const CoreConfig& config, int64_t now) {
  PaymentRecord updated = *p.record;
  updated.pos_phase = std::string(kAwaitPos);
  updated.response = create_response(p.id, updated, "pending", "waiting for the terminal", config);
  updated.updated_at = now;
  grant_lease(updated, config, now);
  Decision d;
  d.audit.push_back(entry(AuditKind::kEventProcessingStarted, p.id, updated.fingerprint, {}, {},
                          "await-pos: charging terminal " + updated.terminal_serial));
  write_payment(d, p, std::move(updated));
  d.next = Next::kAuthorize;
  return d;
}

// A final outcome moves an `undefined` payment, if it is newer than the one applied; `extra`
// (the inbox record) is written either way. Answers `reply`, or the payment's Create Payment
// answer if none is given.
Decision apply_outcome(const Payment& p, const domain::Authorization& a, storage::Batch extra,
                       std::optional<Reply> reply, const std::string& source, const std::string& source_hash,
                       const CoreConfig& config, int64_t now) {
  const PaymentRecord& r = *p.record;
  bool final = a.status != domain::AuthorizationStatus::kPending;
  bool applies = final && r.state == PaymentState::kUndefined && a.revision > r.acquirer_revision;
  Decision d;
  d.writes = std::move(extra);
  if (applies) {
    PaymentRecord updated = r;
    updated.state = state_of(a.status);
    updated.acquirer_revision = a.revision;
    if (updated.state == PaymentState::kApproved && updated.authorization_id.empty()) {
      updated.authorization_id = a.authorization_id;  // issued now, never changed later
    }
    if (updated.nsu.empty()) {
      updated.nsu = a.nsu;  // the same (a Pix's endToEndId): whatever path decided the payment
    }
    updated.response = create_response(p.id, updated, a.code, a.message, config);
    updated.updated_at = now;
    release_lease(updated);
    d.audit.push_back(entry(AuditKind::kWebhookApplied, source, source_hash, to_string(r.state), to_string(updated.state)));
    if (!updated.callback_url.empty()) {
      add_callback(d, p.id, updated, config, now);
    }
    write_payment(d, p, std::move(updated));
  } else if (!d.writes.empty() && a.status == domain::AuthorizationStatus::kApproved
             && (r.state == PaymentState::kCancelled || r.state == PaymentState::kDenied)) {
    // Paid after the gateway heard it would not be (a boleto paid on its last day, cleared
    // after the cancellation): never moved back, and never silent either.
    d.audit.push_back(entry(AuditKind::kAcquirerFailureReported, source, source_hash, {}, {},
                            "the acquirer reports the payment approved after it was "
                                + std::string(to_string(r.state))
                                + ": the shopper may have paid; return the money by hand"));
  } else if (!d.writes.empty()) {
    d.audit.push_back(entry(AuditKind::kWebhookIgnored, source, source_hash, {}, {},
                            final ? "stale revision or payment no longer undefined" : "not final"));
  }
  d.answer = reply ? std::move(*reply) : Reply{Outcome::kDone, d.record ? d.record->response : r.response};
  return d;
}

}  // namespace

// -- invariants -------------------------------------------------------------------------------

std::string broken_invariant(const Payment& before, const Decision& d) {
  if (!d.broken.empty() || !d.record) {
    return d.broken;
  }
  const PaymentRecord& after = *d.record;
  if (!before.record && after.state != PaymentState::kProcessing && after.state != PaymentState::kUndefined) {
    return "a new payment written as " + std::string(to_string(after.state));
  }
  if (before.record && before.record->state != after.state && !is_legal_transition(before.record->state, after.state)) {
    return "payment " + before.id + " written from " + std::string(to_string(before.record->state)) + " to " +
           std::string(to_string(after.state)) + ", which the lifecycle forbids";
  }
  if (after.amounts.settled > after.amounts.settle_limit() || after.amounts.refunded > after.amounts.settled) {
    return "payment " + before.id + " written with totals out of their bounds (settled " +
           format_amount(after.amounts.settled) + ", refunded " + format_amount(after.amounts.refunded) + ")";
  }
  return {};
}

// -- answers ----------------------------------------------------------------------------------

Reply unknown_payment(const std::string& payment_id) {
  return refusal(Refusal::kNotFound, "unknown payment " + payment_id);
}

Reply payment_conflict(const std::string& payment_id) {
  return refusal(Refusal::kPaymentConflict, "paymentId " + payment_id + " was already used for a different payment");
}

Reply operation_request_conflict(const ppp::OperationRequest& req) {
  return operation_refusal(req, Refusal::kRequestConflict,
                           "requestId " + req.request_id + " was already used for a different operation");
}

Reply request_conflict(const std::string& request_id) {
  return refusal(Refusal::kRequestConflict, "requestId " + request_id + " was already used for a different operation");
}

Reply undefined_answer(const std::string& payment_id, const CoreConfig& config) {
  PaymentAnswer a;
  a.payment_id = payment_id;
  a.status = "undefined";
  a.code = "processing";
  a.message = "the outcome is being confirmed with the acquirer";
  return Reply{Outcome::kDone, config.encoder().payment(a)};
}

Reply no_pos_payment(const std::string& payment_id) {
  return refusal(Refusal::kNotFound, "no POS payment " + payment_id);
}

const std::string& owner_of(const PaymentRecord& r, const CoreConfig& config) {
  return r.owner.empty() ? config.legacy_owner : r.owner;
}

std::string pos_link_token(const std::string& key, const std::string& payment_id) {
  auto mac = crypto::hmac_sha256(key, "pos-submit/v1|" + payment_id);
  return crypto::to_hex(mac.data(), 16);  // 128 bits
}

bool pos_link_token_matches(const std::string& key, const std::string& payment_id, std::string_view token) {
  std::string expected = pos_link_token(key, payment_id);
  if (token.size() != expected.size()) {
    return false;
  }
  unsigned char diff = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(expected[i] ^ token[i]);
  }
  return diff == 0;
}

AuditEntry by(std::string merchant, AuditEntry e) {
  e.merchant = std::move(merchant);
  return e;
}

// -- leases -----------------------------------------------------------------------------------

bool leased_elsewhere(const PaymentRecord& r, const CoreConfig& config, int64_t now) {
  return config.shared() && !r.lease_owner.empty() && r.lease_owner != config.instance && r.lease_until > now;
}

std::optional<Decision> take_lease(const Payment& p, const CoreConfig& config, int64_t now) {
  const PaymentRecord& r = *p.record;
  if (!config.shared() || (r.lease_owner == config.instance && r.lease_until - now >= config.lease_ms / 2)) {
    return std::nullopt;
  }
  PaymentRecord updated = r;
  grant_lease(updated, config, now);
  Decision d;
  write_payment(d, p, std::move(updated));
  return d;
}

Reply in_progress_elsewhere(const std::string& ref) {
  return refusal(Refusal::kInProgress, "another instance is carrying out a request for " + ref + "; retry the same request");
}

const ppp::MethodTerms& CoreConfig::terms(std::string_view method) const {
  static const ppp::MethodTerms kDefaults;
  auto it = methods.find(method);
  return it != methods.end() ? it->second : kDefaults;
}

const AnswerEncoder& CoreConfig::encoder() const {
  IDEMPAY_ASSERT(answers != nullptr, "the core was configured without an answer encoder");
  return *answers;
}

std::string create_response(const std::string& payment_id, const PaymentRecord& r, std::string_view code,
                            std::string_view message, const CoreConfig& config) {
  PaymentAnswer a;
  const ppp::MethodTerms& terms = config.terms(r.payment_method);
  a.delay_to_auto_settle = terms.delay_to_auto_settle;
  a.delay_to_auto_settle_after_antifraud = terms.delay_to_auto_settle_after_antifraud;
  a.delay_to_cancel = terms.delay_to_cancel;
  a.payment_id = payment_id;
  a.status = std::string(create_payment_status(r.state));
  a.authorization_id = r.state == PaymentState::kApproved ? r.authorization_id : "";
  a.tid = r.tid;
  a.nsu = r.nsu;
  a.acquirer = r.acquirer;
  a.code = std::string(code);
  a.message = std::string(message);
  a.max_value = r.state == PaymentState::kApproved ? r.amounts.max_value : 0;
  a.method = document_facts(payment_id, r, config);
  return config.encoder().payment(a);
}

// -- Create Payment -----------------------------------------------------------------------------

std::optional<Decision> answer_create_now(const Payment& p, const CreateArrival& a, const CoreConfig& config) {
  if (!p.record) {
    return std::nullopt;
  }
  const PaymentRecord& r = *p.record;
  if (owner_of(r, config) != a.merchant) {
    return noted_answer(by(a.merchant, entry(AuditKind::kAccessRefused, p.id, a.fingerprint, {}, {},
                                             "Create Payment with another merchant's paymentId")),
                        payment_conflict(p.id));
  }
  if (!ppp::same_payment(config.fingerprint_key, r.fingerprint, a.fingerprint, a.request)) {
    return noted_answer(by(a.merchant, entry(AuditKind::kEventRefused, p.id, a.fingerprint, {}, {},
                                             "a different payment under this paymentId")),
                        payment_conflict(p.id));
  }
  if (!is_unresolved(r.state) && !pos_charge_due(r)) {
    // Same question, same answer.
    return noted_answer(by(a.merchant, entry(AuditKind::kEventDuplicateReused, p.id, a.fingerprint)), Reply{Outcome::kDone, r.response});
  }
  return std::nullopt;
}

Decision start_create(const Payment& p, const CreateArrival& a, const AcquirerRoute& route, const CoreConfig& config,
                      int64_t now) {
  if (!p.record) {
    return write_intent(p, a, route, config, now);
  }
  if (pos_charge_due(*p.record) && p.record->pos_phase == kIdentifyTerminal) {
    return start_pos_charge(p, config, now);
  }
  // A record left unresolved (crash, acquirer failure), or a POS charge never answered: ask
  // the acquirer what it did under this key; authorize (same key) only if it never saw it.
  // Unless another instance is doing just that: then its outcome is followed.
  if (leased_elsewhere(*p.record, config, now)) {
    return then(Next::kFollow);
  }
  if (auto lease = take_lease(p, config, now)) {
    lease->next = Next::kAskStatus;
    return std::move(*lease);
  }
  return then(Next::kAskStatus);
}

Decision authorized(const Payment& p, const domain::Authorization& a, Listeners listeners, const CoreConfig& config,
                    int64_t now) {
  if (!p.record) {
    return precondition_failed("authorized() needs the payment's stored intent");
  }
  const PaymentRecord& r = *p.record;
  PaymentRecord updated = r;
  updated.state = state_of(a.status);
  updated.tid = a.tid;
  updated.nsu = a.nsu;
  updated.authorization_id = a.authorization_id;
  updated.acquirer = a.acquirer;
  updated.acquirer_revision = a.revision;
  updated.document = a.document;
  if (updated.state == PaymentState::kApproved && a.max_value > r.amounts.authorized) {
    updated.amounts.max_value = a.max_value;  // settlements may exceed the amount up to it
  }
  updated.response = create_response(p.id, updated, a.code, a.message, config);
  updated.updated_at = now;
  release_lease(updated);
  Decision d;
  d.audit.push_back(entry(AuditKind::kEventProcessed, p.id, r.fingerprint, to_string(r.state), to_string(updated.state),
                          listeners.background ? "reconciled with the acquirer" : ""));
  // Whoever heard "undefined" (or nothing, before a crash) learns the final outcome by callback.
  bool final = updated.state != PaymentState::kUndefined;
  if (final && (listeners.background || listeners.told_undefined) && !updated.callback_url.empty()) {
    add_callback(d, p.id, updated, config, now);
  }
  if (is_unresolved(r.state) && !is_unresolved(updated.state)) {
    d.writes.push_back({Space::kRecovery, recovery_key(p.id), std::nullopt, std::nullopt, true});
  }
  d.answer = Reply{Outcome::kDone, updated.response};
  start_watch(d, p, updated, a, config, now);
  write_payment(d, p, std::move(updated));
  return d;
}

Decision authorize_failed(const Payment& p, const Error& e, const std::string& merchant, const CoreConfig& config) {
  if (!p.record) {
    return precondition_failed("authorize_failed() needs the payment's stored intent");
  }
  Decision d = noted_answer(by(merchant, entry(AuditKind::kEventFailed, p.id, p.record->fingerprint, {}, {},
                                               "acquirer: " + e.message)),
                            undefined_answer(p.id, config));
  d.next = Next::kReconcileLater;
  return d;
}

Decision create_status(const Payment& p, const Result<std::optional<domain::Authorization>>& status,
                       Listeners listeners, const std::string& merchant, const CoreConfig& config, int64_t now) {
  if (!status) {
    return authorize_failed(p, status.error(), merchant, config);
  }
  if (*status) {
    return authorized(p, **status, listeners, config, now);
  }
  return then(Next::kAuthorize);  // the acquirer never saw it: authorize under the same key
}

Decision background_status(const Payment& p, const Result<std::optional<domain::Authorization>>& status,
                           const CoreConfig& config, int64_t now) {
  if (!status) {
    return then(Next::kReconcileLater);
  }
  if (*status) {
    return authorized(p, **status, Listeners{true, false}, config, now);
  }
  Decision d;
  d.noted.push_back(entry(AuditKind::kEventReconciled, p.id, {}, {}, {},
                          "the acquirer never saw this payment; the gateway's retry authorizes it"));
  return d;
}

std::optional<Decision> orphan(const Payment& p, int64_t now) {
  if (!p.record || p.record->state != PaymentState::kProcessing) {
    return std::nullopt;
  }
  PaymentRecord updated = *p.record;
  updated.state = PaymentState::kOrphaned;
  updated.updated_at = now;
  release_lease(updated);
  Decision d;
  d.audit.push_back(entry(AuditKind::kEventOrphaned, p.id, p.record->fingerprint, to_string(p.record->state),
                          to_string(updated.state), "the acquirer could not confirm the outcome either way"));
  write_payment(d, p, std::move(updated));
  return d;
}

// -- POS terminal -------------------------------------------------------------------------------

std::optional<Decision> answer_terminal_now(const Payment& p) {
  if (!p.record || !ppp::is_pos(p.record->payment_method)) {
    return answer(no_pos_payment(p.id));
  }
  return std::nullopt;
}

Decision submit_terminal(const Payment& p, const std::string& serial, const CoreConfig& config, int64_t now) {
  if (!p.record) {
    return precondition_failed("submit_terminal() needs a stored POS payment (answer_terminal_now first)");
  }
  const PaymentRecord& r = *p.record;
  Reply accepted{Outcome::kDone, config.encoder().terminal_accepted()};
  if (r.terminal_serial == serial) {
    return answer(accepted);
  }
  if (r.pos_phase != kIdentifyTerminal || !r.terminal_serial.empty()) {
    return answer(refusal(Refusal::kTerminalConflict, "this payment already has its terminal"));
  }
  PaymentRecord updated = r;
  updated.terminal_serial = serial;
  updated.updated_at = now;
  Decision d = answer(accepted);
  d.audit.push_back(entry(AuditKind::kTerminalSubmitted, serial));
  write_payment(d, p, std::move(updated));
  return d;
}

// -- cancel / settle / refund -------------------------------------------------------------------

std::optional<Decision> answer_operation_now(const Payment& p, const OperationArrival& a, const CoreConfig& config) {
  if (p.record && owner_of(*p.record, config) != a.merchant) {
    return noted_answer(by(a.merchant, entry(AuditKind::kAccessRefused, a.request.request_id, a.fingerprint, {}, {},
                                             std::string(ppp::to_string(a.request.kind))
                                                 + " of another merchant's payment")),
                        operation_refusal(a.request, Refusal::kNotFound, "unknown payment " + p.id));
  }
  return std::nullopt;
}

namespace {

// Whether the method splits at this operation (ppp::splits_at): a cancellation never does.
bool applies_split(const PaymentRecord& r, ppp::OperationKind kind, const CoreConfig& config) {
  ppp::SplitMode mode = config.terms(r.payment_method).allows_split;
  return (kind == ppp::OperationKind::kSettle && ppp::splits_at(mode, ppp::SplitStep::kCapture)) ||
         (kind == ppp::OperationKind::kRefund && ppp::splits_at(mode, ppp::SplitStep::kRefund));
}

// The lifecycle's rule the operation would break (G3: lifecycle.hpp), if any.
std::optional<Refused> refusal_by_lifecycle(const PaymentRecord& r, const ppp::OperationRequest& req) {
  switch (req.kind) {
    case ppp::OperationKind::kCancel:
      return cancel_refusal(r.state);
    case ppp::OperationKind::kSettle:
      return settle_refusal(r.state, r.amounts, req.value);
    case ppp::OperationKind::kRefund:
      return refund_refusal(r.state, r.amounts, req.value);
  }
  return std::nullopt;
}

// Why the operation cannot be done on the payment, if it cannot.
std::optional<Refused> refusal_of_operation(const Payment& p, const ppp::OperationRequest& req,
                                            const CoreConfig& config) {
  if (!p.record) return Refused{Refusal::kNotFound, "unknown payment " + p.id};
  const PaymentRecord& r = *p.record;
  if (applies_split(r, req.kind, config)) {
    if (auto s = ppp::check_split(req.recipients, req.value); !s) return Refused{Refusal::kInvalidSplit, s.error().message};
  }
  return refusal_by_lifecycle(r, req);
}

Decision call_operation(PendingOperation op) {
  Decision d = then(Next::kOperate);
  d.operation = std::move(op);
  return d;
}

}  // namespace

void drop_unsplit_recipients(const Payment& p, ppp::OperationRequest& req, const CoreConfig& config) {
  if (p.record && !applies_split(*p.record, req.kind, config)) {
    req.recipients.clear();
  }
}

namespace {

// Shared stores: an operation calls the acquirer under the payment's lease, taken in the same
// batch as its intent, so that no other instance operates on the payment meanwhile.
Decision under_lease(Decision d, const Payment& p, const CoreConfig& config, int64_t now) {
  if (auto lease = take_lease(p, config, now)) {
    std::move(lease->writes.begin(), lease->writes.end(), std::back_inserter(d.writes));
    d.record = std::move(lease->record);
  }
  return d;
}

}  // namespace

// A cancel the acquirer has nothing to do for (docs/ppp-surface.md#refunds-and-cancellations): a denied payment holds no
// money and a cancelled one was voided already — the Cancel answer; a settled one cannot be
// voided (the gateway refunds it) — an already-settled failure in the Cancel shape. Stored under the requestId
// like any operation answer.
// An operation answered without the acquirer, stored under its requestId as done, so that
// every repeat gets these bytes again; the payment itself does not change.
Decision done_without_acquirer(const Payment& p, const OperationArrival& a, const OperationAnswer& response,
                               Outcome outcome, const CoreConfig& config, int64_t now) {
  const auto& req = a.request;
  std::string key = operation_key(p.id, req.request_id);
  OperationRecord op;
  op.kind = req.kind;
  op.phase = OperationPhase::kDone;
  op.payment_id = p.id;
  op.fingerprint = a.fingerprint;
  op.acquirer_key = key;
  op.outcome = outcome;
  op.response = config.encoder().operation(response);
  op.updated_at = now;
  Decision d = answer(Reply{op.outcome, op.response});
  d.writes.push_back({Space::kOperations, key, encode(op), 0});
  std::string kind(ppp::to_string(req.kind));
  std::string state(to_string(p.record->state));
  d.audit.push_back(entry(AuditKind::kOperationReceived, req.request_id, op.fingerprint, {}, {}, received_detail(req)));
  d.audit.push_back(entry(AuditKind::kOperationProcessed, req.request_id, op.fingerprint, state, state,
                          kind + " without the acquirer: " + response.message));
  return d;
}

// By hand (Outcome::kManual), as the protocol has it: the merchant does this one.
OperationAnswer manual_answer(const ppp::OperationRequest& req) {
  bool cancel = req.kind == ppp::OperationKind::kCancel;
  Refusal by_hand = cancel ? Refusal::kCancelManually : Refusal::kRefundManually;
  return OperationAnswer{req.kind, req.payment_id, req.request_id, "", 0, std::string(code_of(by_hand)),
                         cancel ? "This payment needs to be manually cancelled"
                                : "This payment needs to be manually refunded"};
}

std::optional<Decision> cancel_without_acquirer(const Payment& p, const OperationArrival& a, const CoreConfig& config,
                                                int64_t now) {
  const PaymentRecord& r = *p.record;
  const auto& req = a.request;
  std::string key = operation_key(p.id, req.request_id);
  OperationAnswer response{req.kind, p.id, req.request_id, "", 0, "", ""};
  Outcome outcome = Outcome::kDone;
  switch (r.state) {
    case PaymentState::kDenied:
      response.id = "void-" + key;  // nothing held, nothing voided: the connector's own id
      response.message = "nothing to cancel: the payment was denied";
      break;
    case PaymentState::kCancelled:
      response.id = r.cancellation_id.empty() ? "void-" + key : r.cancellation_id;
      response.message = "already cancelled";
      break;
    case PaymentState::kSettled:
    case PaymentState::kRefunded:
      outcome = outcome_of(Refusal::kAlreadySettled);
      response.code = std::string(code_of(Refusal::kAlreadySettled));
      response.message = "a settled payment is refunded, not cancelled";
      break;
    default:
      return std::nullopt;
  }
  return done_without_acquirer(p, a, response, outcome, config, now);
}

Reply cancel_not_known_yet(const ppp::OperationRequest& req, std::string message) {
  return operation_refusal(req, Refusal::kOutcomeUnknown, std::move(message));
}

Decision start_operation(const Payment& p, const OperationArrival& a,
                         const Result<std::optional<StoredOperation>>& stored, const CoreConfig& config, int64_t now) {
  const auto& req = a.request;
  if (!stored) {
    return answer(error_reply(stored.error()));
  }
  bool done = *stored && (*stored)->record.phase == OperationPhase::kDone;
  if (!done && p.record && leased_elsewhere(*p.record, config, now)) {
    return then(Next::kFollow);  // another instance operates on this payment: its turn first
  }
  if (*stored) {
    const OperationRecord& existing = (*stored)->record;
    if (existing.fingerprint != a.fingerprint) {
      return noted_answer(by(a.merchant, entry(AuditKind::kOperationRefused, req.request_id, a.fingerprint, {}, {},
                                               "requestId reused for another operation")),
                          operation_request_conflict(req));
    }
    if (existing.phase == OperationPhase::kDone) {
      return noted_answer(by(a.merchant, entry(AuditKind::kOperationDuplicateReused, req.request_id, a.fingerprint)),
                          Reply{existing.outcome, existing.response});  // G2
    }
    // Intent written by an earlier attempt that never finished: the acquirer call is
    // idempotent on its key, so calling again cannot act twice.
    return under_lease(call_operation(PendingOperation{req, existing, (*stored)->key, (*stored)->etag}), p, config,
                       now);
  }
  if (req.kind == ppp::OperationKind::kCancel && p.record) {
    if (auto d = cancel_without_acquirer(p, a, config, now)) {
      return std::move(*d);
    }
    if (is_unresolved(p.record->state)) {
      return then(Next::kAskStatus);  // what happened first; cancel_status
    }
  }
  if (auto refused = refusal_of_operation(p, req, config)) {
    return noted_answer(by(a.merchant, entry(AuditKind::kOperationRefused, req.request_id, a.fingerprint, {}, {},
                                             refused->message)),
                        operation_refusal(req, refused->refusal, refused->message));
  }
  const ppp::MethodTerms& terms = config.terms(p.record->payment_method);
  bool by_hand = req.manual || (req.kind == ppp::OperationKind::kCancel && terms.manual_cancel) ||
                 (req.kind == ppp::OperationKind::kRefund && terms.manual_refund);
  if (by_hand && req.kind != ppp::OperationKind::kSettle) {
    return done_without_acquirer(p, a, manual_answer(req), Outcome::kManual, config, now);
  }
  OperationRecord op;
  op.kind = req.kind;
  op.payment_id = p.id;
  op.fingerprint = a.fingerprint;
  op.acquirer_key = operation_key(p.id, req.request_id);
  op.amount = req.kind == ppp::OperationKind::kCancel ? p.record->amounts.authorized : req.value;
  if (applies_split(*p.record, req.kind, config)) {
    op.recipients = req.recipients;  // a split the acquirer applies; anything else was information
  }
  op.updated_at = now;
  std::string key = operation_key(p.id, req.request_id);
  Decision d = call_operation(PendingOperation{req, op, key, 0});
  d.writes.push_back({Space::kOperations, key, encode(op), 0});
  d.audit.push_back(entry(AuditKind::kOperationReceived, req.request_id, op.fingerprint, {}, {}, received_detail(req)));
  d.audit.push_back(entry(AuditKind::kOperationProcessingStarted, req.request_id, op.fingerprint));
  d.writes.push_back({Space::kRecovery, recovery_key(p.id, req.request_id), std::string(), std::nullopt, true});
  return under_lease(std::move(d), p, config, now);
}

std::optional<PendingOperation> resume_operation(const std::string& payment_id, const std::string& request_id,
                                                 const std::optional<StoredOperation>& stored) {
  if (!stored || stored->record.phase != OperationPhase::kProcessing) {
    return std::nullopt;
  }
  const OperationRecord& op = stored->record;
  ppp::OperationRequest req;
  req.kind = op.kind;
  req.payment_id = payment_id;
  req.request_id = request_id;
  req.value = op.amount;
  req.recipients = op.recipients;
  return PendingOperation{std::move(req), op, stored->key, stored->etag};
}

PaymentRecord apply_operation(PaymentRecord r, ppp::OperationKind kind, Cents amount, int64_t now) {
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
  r.updated_at = now;
  return r;
}

Decision cancel_status(const Payment& p, const ppp::OperationRequest& req,
                       const Result<std::optional<domain::Authorization>>& status, const CoreConfig& config,
                       int64_t now) {
  if (!p.record) {
    return precondition_failed("cancel_status() needs a stored payment");
  }
  if (!status) {
    return answer(cancel_not_known_yet(req, "the acquirer could not say what became of the payment; retry the same request"));
  }
  if (!*status) {
    // Nothing is held now, but the authorization sent before the outcome was lost may still
    // reach the acquirer: not cancelled until that is known.
    return answer(cancel_not_known_yet(req, "the acquirer has not seen this payment yet; retry the same request"));
  }
  Decision d = authorized(p, **status, Listeners{true, false}, config, now);
  d.answer.reset();  // the cancel runs again on the outcome
  return d;
}

namespace {

// The acquirer accepted the operation but has not completed it (a refund in flight at the
// card network): "not yet" in the operation's shape (a failure the gateway retries for a
// day), nothing recorded as done, the recovery key kept; each retry asks again under the same
// acquirer key. The payment's lease, if any, ends: nothing is in flight here any more.
Decision operation_pending(const Payment& p, const PendingOperation& pending, const domain::OperationOutcome& o) {
  const auto& req = pending.request;
  Refusal not_yet = req.kind == ppp::OperationKind::kRefund ? Refusal::kRefundPending : Refusal::kOperationPending;
  Decision d = answer(operation_refusal(
      req, not_yet, "the acquirer has accepted the " + std::string(ppp::to_string(req.kind))
                     + " and not completed it yet; retry the same request" + (o.message.empty() ? "" : ": " + o.message)));
  d.audit.push_back(entry(AuditKind::kOperationPending, req.request_id, pending.record.fingerprint, {}, {},
                          std::string(ppp::to_string(req.kind)) + " accepted by the acquirer, not completed"));
  if (p.record && !p.record->lease_owner.empty()) {
    PaymentRecord released = *p.record;
    release_lease(released);
    write_payment(d, p, std::move(released));
  }
  return d;
}

}  // namespace

Decision operation_done_again(const Payment& p, const PendingOperation& pending,
                              const Result<std::optional<StoredOperation>>& stored,
                              const Result<domain::OperationOutcome>& result, const CoreConfig& config, int64_t now) {
  if (!stored) {
    return answer(error_reply(stored.error()));
  }
  if (*stored && (*stored)->record.phase == OperationPhase::kDone) {
    const OperationRecord& done = (*stored)->record;
    return answer(Reply{done.outcome, done.response});  // G2: as recorded
  }
  return operation_done(p, pending, result, config, now);
}

Decision operation_done(const Payment& p, const PendingOperation& pending,
                        const Result<domain::OperationOutcome>& result, const CoreConfig& config, int64_t now) {
  if (!p.record) {
    return precondition_failed("operation_done() needs a stored payment");
  }
  const auto& req = pending.request;
  if (!result) {
    // Unknown outcome: nothing recorded as done; the retry resumes the same requestId.
    return answer(operation_refusal(req, Refusal::kAcquirerUnavailable, "the acquirer did not answer; retry the same request"));
  }
  const auto& outcome = *result;
  if (outcome.pending) {
    return operation_pending(p, pending, outcome);
  }
  OperationAnswer response{req.kind,
                           p.id,
                           req.request_id,
                           outcome.succeeded ? outcome.id : "",
                           outcome.succeeded ? outcome.amount : 0,
                           outcome.succeeded ? "" : outcome.code,
                           outcome.message};
  if (outcome.manual) {
    response = manual_answer(req);
  }
  OperationRecord op = pending.record;
  op.phase = OperationPhase::kDone;
  op.outcome = outcome.succeeded ? Outcome::kDone : outcome.manual ? Outcome::kManual : Outcome::kFailed;
  op.response = config.encoder().operation(response);
  op.updated_at = now;
  // An operation is started only for a payment that exists: validate() and the stored
  // operation's lookup both require the record, and nothing deletes one.
  const PaymentRecord& r = *p.record;
  Decision d = answer(Reply{op.outcome, op.response});
  d.writes.push_back({Space::kOperations, pending.key, encode(op), pending.etag});
  std::optional<PaymentRecord> updated;
  if (outcome.succeeded) {
    updated = apply_operation(r, req.kind, outcome.amount, now);
    if (req.kind == ppp::OperationKind::kCancel) {
      updated->cancellation_id = outcome.id;
      if (r.state == PaymentState::kUndefined) {
        // Never authorized: Create Payment now answers that it will not be (`denied`), so
        // that the gateway stops asking.
        updated->response = create_response(p.id, *updated, "cancelled", "cancelled before it was authorized", config);
      }
    }
  }
  if (!r.lease_owner.empty()) {  // the operation's lease ends with it
    if (!updated) {
      updated = r;
    }
    release_lease(*updated);
  }
  d.audit.push_back(entry(AuditKind::kOperationProcessed, req.request_id, op.fingerprint, to_string(r.state),
                          to_string(updated ? updated->state : r.state),
                          std::string(ppp::to_string(req.kind)) + " "
                              + format_amount(outcome.succeeded ? outcome.amount : 0)
                              + (outcome.succeeded ? ""
                                 : outcome.manual  ? " to be done by hand"
                                                   : " refused: " + outcome.code)));
  d.writes.push_back({Space::kRecovery, recovery_key(p.id, req.request_id), std::nullopt, std::nullopt, true});
  if (updated) {
    write_payment(d, p, std::move(*updated));
  }
  return d;
}

// -- webhooks and refreshes ---------------------------------------------------------------------

Decision receive_event(const Payment& p, const AcquirerEvent& event,
                       const Result<std::optional<storage::Versioned>>& seen, const CoreConfig& config, int64_t now) {
  if (!seen) {
    return answer(error_reply(seen.error()));
  }
  if (p.record && !event.sender.empty()
      && (owner_of(*p.record, config) != event.sender || p.record->acquirer_route != event.sender_route)) {
    return noted_answer(
        by(event.sender, entry(AuditKind::kAccessRefused, event.event_id, event.body_hash, {}, {},
                               "acquirer notification for a payment not created through its path")),
        unknown_payment(p.id));
  }
  if (*seen) {
    bool same = (*seen)->value == event.body_hash;
    return noted_answer(entry(same ? AuditKind::kWebhookDuplicate : AuditKind::kWebhookConflict, event.event_id, event.body_hash),
                        same ? Reply{Outcome::kDone, config.encoder().received(true)}
                             : refusal(Refusal::kEventConflict,
                                       "event " + event.event_id + " was received with a different body"));
  }
  if (!p.record) {
    return answer(unknown_payment(p.id));
  }
  // The inbox record rides in the same batch as the transition it caused.
  storage::Batch inbox{{Space::kInbox, event.event_id, event.body_hash, 0}};
  if (!event.report.empty()) {
    // What became of an operation: the payment stays as it is (never moved backwards), and
    // a failure is in the trail, the event log and the metrics, where operators look.
    Decision d;
    d.writes = std::move(inbox);
    d.audit.push_back(entry(event.report_is_failure ? AuditKind::kAcquirerFailureReported : AuditKind::kAcquirerReported,
                            p.id, event.body_hash, {}, {}, event.report));
    d.answer = Reply{Outcome::kDone, config.encoder().received(false)};
    return d;
  }
  return apply_outcome(p, event.authorization, std::move(inbox), Reply{Outcome::kDone, config.encoder().received(false)},
                       event.event_id,
                       event.body_hash, config, now);
}

std::optional<Decision> answer_refresh_now(const Payment& p, const std::string& merchant, Asker asker,
                                           const CoreConfig& config) {
  if (!p.record) {
    return answer(unknown_payment(p.id));
  }
  if (asker == Asker::kConnector) {
    return std::nullopt;
  }
  if (owner_of(*p.record, config) != merchant) {
    if (asker == Asker::kHint) {
      return answer(unknown_payment(p.id));  // not the path's merchant's: nothing of it is theirs to note
    }
    return noted_answer(by(merchant, entry(AuditKind::kAccessRefused, p.id, {}, {}, {},
                                           "inbound request for another merchant's payment")),
                        unknown_payment(p.id));
  }
  return std::nullopt;
}

Decision owner_action(const Payment& p, const std::string& merchant, std::string_view what, const CoreConfig& config) {
  if (!p.record) {
    return answer(unknown_payment(p.id));
  }
  if (owner_of(*p.record, config) != merchant) {
    return noted_answer(by(merchant, entry(AuditKind::kAccessRefused, p.id, {}, {}, {},
                                           std::string(what) + " for another merchant's payment")),
                        unknown_payment(p.id));
  }
  Decision d;
  d.noted.push_back(by(merchant, entry(AuditKind::kAcquirerActionRequested, p.id, {}, {}, {}, std::string(what))));
  return d;
}

Decision start_refresh(const Payment& p) {
  if (!p.record) {
    return precondition_failed("start_refresh() needs a stored payment (answer_refresh_now first)");
  }
  if (p.record->state != PaymentState::kUndefined) {
    return answer(Reply{Outcome::kDone, p.record->response});
  }
  return then(Next::kAskStatus);
}

Decision refreshed(const Payment& p, const Result<std::optional<domain::Authorization>>& status,
                   const CoreConfig& config, int64_t now) {
  if (!p.record) {
    return precondition_failed("refreshed() needs a stored payment");
  }
  if (!status || !*status) {
    return answer(Reply{Outcome::kDone, p.record->response});
  }
  return apply_outcome(p, **status, {}, std::nullopt, "status-call", {}, config, now);
}

}  // namespace idempay::domain
