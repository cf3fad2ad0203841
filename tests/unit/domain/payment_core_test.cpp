// The payment core, command by state, without CAF or a store: every decision is data, so each
// row of docs/payment-core.md is asserted here. The expectations are written out from the
// protocol's rules (a table per command), never computed by the functions under test.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "idempay/answers/answers.hpp"
#include "idempay/domain/payment_core.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/protocol/methods.hpp"

namespace idempay::domain {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr uint64_t kEtag = 7;
const std::string kMerchant = "shop-a";
const std::string kOther = "shop-b";

const answers::PppAnswers kEncoder;

// An answer as it leaves the process: a document as stored, or a refusal written.
std::string body(const Reply& reply) { return answers::body_of(reply); }

CoreConfig config() {
  CoreConfig c;
  c.answers = &kEncoder;
  c.fingerprint_key = "fingerprint-key";
  c.legacy_owner = kMerchant;
  c.public_url = "https://connector.example";
  c.pos_link_key = "pos-key";
  return c;
}

ppp::CreatePaymentRequest card_request(const std::string& method = "Visa") {
  ppp::CreatePaymentRequest r;
  r.payment_id = "pay-1";
  r.transaction_id = "tx-1";
  r.reference = "ref-1";
  r.order_id = "order-1";
  r.payment_method = method;
  r.merchant_name = "store";
  r.currency = "BRL";
  r.callback_url = "https://gateway.example/callback";
  r.value = 1000;
  return r;
}

std::string fingerprint(const ppp::CreatePaymentRequest& r) { return ppp::payment_fingerprint(config().fingerprint_key, r); }

const PaymentState kAllStates[] = {PaymentState::kProcessing, PaymentState::kUndefined, PaymentState::kApproved,
                                   PaymentState::kDenied,     PaymentState::kCancelled, PaymentState::kSettled,
                                   PaymentState::kRefunded,   PaymentState::kOrphaned};

// A payment of kMerchant in `state`, created by card_request(): authorized 10.00, with settled
// and refunded totals that leave room for one more 1.00 operation where the state allows one.
Payment payment_in(PaymentState state, const std::string& method = "Visa") {
  auto request = card_request(method);
  PaymentRecord r;
  r.state = state;
  r.amounts.authorized = 1000;
  r.amounts.settled = state == PaymentState::kSettled ? 500 : state == PaymentState::kRefunded ? 1000 : 0;
  r.amounts.refunded = state == PaymentState::kRefunded ? 100 : 0;
  r.currency = request.currency;
  r.payment_method = request.payment_method;
  r.owner = kMerchant;
  r.fingerprint = fingerprint(request);
  r.callback_url = request.callback_url;
  r.tid = state == PaymentState::kProcessing ? "" : "tid-1";
  r.response = R"({"stored":")" + std::string(to_string(state)) + R"("})";
  return Payment{"pay-1", r, kEtag};
}

Payment no_payment() { return Payment{"pay-1", std::nullopt, 0}; }

const storage::Write* write_to(const Decision& d, storage::Keyspace space) {
  for (const auto& w : d.writes) {
    if (w.keyspace == space) {
      return &w;
    }
  }
  return nullptr;
}

std::string state_name(const Decision& d) { return d.record ? std::string(to_string(d.record->state)) : "-"; }

// -- Create Payment -----------------------------------------------------------------------------

// What a repeated Create Payment of the same merchant does in each state: 'S' replays the
// stored answer at once, 'A' asks the acquirer what it did under the payment's key.
TEST(PaymentCoreTest, CreatePaymentRetriedInEveryState) {
  const std::map<PaymentState, char> expected = {
      {PaymentState::kProcessing, 'A'}, {PaymentState::kUndefined, 'S'}, {PaymentState::kApproved, 'S'},
      {PaymentState::kDenied, 'S'},     {PaymentState::kCancelled, 'S'}, {PaymentState::kSettled, 'S'},
      {PaymentState::kRefunded, 'S'},   {PaymentState::kOrphaned, 'A'},
  };
  auto request = card_request();
  auto fp = fingerprint(request);
  for (auto state : kAllStates) {
    SCOPED_TRACE(std::string(to_string(state)));
    Payment p = payment_in(state);
    auto now = answer_create_now(p, CreateArrival{request, kMerchant, fp}, config());
    if (expected.at(state) == 'S') {
      ASSERT_TRUE(now);
      EXPECT_EQ(now->answer->outcome, Outcome::kDone);
      EXPECT_EQ(body(*now->answer), p.record->response);  // byte for byte
      EXPECT_FALSE(now->commits());
      ASSERT_EQ(now->noted.size(), 1u);
      EXPECT_EQ(to_string(now->noted[0].kind), "event_duplicate_reused");
      continue;
    }
    EXPECT_FALSE(now);
    Decision d = start_create(p, CreateArrival{request, kMerchant, fp}, {}, config(), kNow);
    EXPECT_EQ(d.next, Next::kAskStatus);
    EXPECT_FALSE(d.commits());  // nothing is written before the acquirer has been asked
  }
}

// Another merchant's paymentId and a different payment under the same id get one answer, in
// every state, and leave an audit entry on the payment they tried.
TEST(PaymentCoreTest, CreatePaymentConflictsInEveryState) {
  auto request = card_request();
  auto fp = fingerprint(request);
  auto different = card_request();
  different.value = 2000;
  auto different_fp = fingerprint(different);
  for (auto state : kAllStates) {
    SCOPED_TRACE(std::string(to_string(state)));
    Payment p = payment_in(state);
    auto theirs = answer_create_now(p, CreateArrival{request, kOther, fp}, config());
    auto changed = answer_create_now(p, CreateArrival{different, kMerchant, different_fp}, config());
    ASSERT_TRUE(theirs && changed);
    EXPECT_EQ(theirs->answer->outcome, Outcome::kRefused);
    EXPECT_EQ(body(*theirs->answer), body(*changed->answer));  // tells nothing about the other payment
    EXPECT_EQ(to_string(theirs->noted.at(0).kind), "access_refused");
    EXPECT_EQ(theirs->noted.at(0).merchant, kOther);
    EXPECT_EQ(to_string(changed->noted.at(0).kind), "event_refused");
    EXPECT_EQ(theirs->noted.at(0).detail.rfind("payment-conflict: ", 0), 0u) << theirs->noted.at(0).detail;
    EXPECT_FALSE(theirs->commits() || changed->commits());
  }
}

TEST(PaymentCoreTest, ANewPaymentWritesItsIntentBeforeTheAcquirerHearsOfIt) {
  auto request = card_request();
  auto fp = fingerprint(request);
  Payment p = no_payment();
  EXPECT_FALSE(answer_create_now(p, CreateArrival{request, kMerchant, fp}, config()));
  Decision d = start_create(p, CreateArrival{request, kMerchant, fp}, AcquirerRoute{"route-b", {}}, config(), kNow);
  EXPECT_EQ(d.next, Next::kAuthorize);
  EXPECT_FALSE(d.answer);  // the caller waits for the acquirer
  const auto* intent = write_to(d, Space::kPayments);
  ASSERT_NE(intent, nullptr);
  EXPECT_EQ(intent->expected_etag, std::optional<uint64_t>(0));  // put-if-absent: the serialisation point
  ASSERT_NE(write_to(d, Space::kRecovery), nullptr);              // found again after a crash
  EXPECT_TRUE(write_to(d, Space::kRecovery)->value.has_value());
  ASSERT_TRUE(d.record);
  EXPECT_EQ(d.record->state, PaymentState::kProcessing);
  EXPECT_EQ(d.record->owner, kMerchant);
  EXPECT_EQ(d.record->acquirer_route, "route-b");
  EXPECT_EQ(d.record->created_at, kNow);
  EXPECT_EQ(intent->value, encode(*d.record));
  ASSERT_EQ(d.audit.size(), 2u);
  EXPECT_EQ(to_string(d.audit[0].kind), "event_received");
  EXPECT_EQ(to_string(d.audit[1].kind), "event_processing_started");
  EXPECT_EQ(write_to(d, Space::kReferences), nullptr) << "no reference: nothing indexed";
}

TEST(PaymentCoreTest, TheNameTheAcquirerKnowsAPaymentByIsIndexedWithItsIntent) {
  auto request = card_request();
  auto fp = fingerprint(request);
  Decision d = start_create(no_payment(), CreateArrival{request, kMerchant, fp},
                            AcquirerRoute{"@pix", "bcb-pix/abc123"}, config(), kNow);
  const auto* indexed = write_to(d, Space::kReferences);
  ASSERT_NE(indexed, nullptr) << "in the same batch as the intent: no charge without it";
  EXPECT_EQ(indexed->key, "bcb-pix/abc123");
  EXPECT_EQ(indexed->value, std::optional<std::string>("pay-1"));
}

TEST(PaymentCoreTest, APosPaymentFirstAsksForItsTerminal) {
  auto request = card_request("Venda Direta Debito");
  ASSERT_TRUE(ppp::is_pos(request.payment_method));
  auto fp = fingerprint(request);
  Decision d = start_create(no_payment(), CreateArrival{request, kMerchant, fp}, {}, config(), kNow);
  EXPECT_EQ(d.next, Next::kEnd);  // nothing reaches the acquirer yet
  ASSERT_TRUE(d.record && d.answer);
  EXPECT_EQ(d.record->state, PaymentState::kUndefined);
  EXPECT_EQ(d.record->pos_phase, kIdentifyTerminal);
  EXPECT_EQ(write_to(d, Space::kRecovery), nullptr);  // undefined: the acquirer has not heard of it
  auto answer = JsonValue::parse(body(*d.answer));
  ASSERT_TRUE(answer);
  ASSERT_NE(answer->find("paymentAppData"), nullptr);
  EXPECT_EQ(answer->find("paymentAppData")->string_or("appName"), "vtex.terminal-connector-app");
  auto token = pos_link_token(config().pos_link_key, "pay-1");
  EXPECT_NE(body(*d.answer).find("/pos/pay-1/terminal?token=" + token), std::string::npos);
  EXPECT_TRUE(pos_link_token_matches(config().pos_link_key, "pay-1", token));
  EXPECT_FALSE(pos_link_token_matches(config().pos_link_key, "pay-2", token));
}

// The POS flow, step by step: the terminal is recorded once, the next Create Payment starts
// the charge with a compare-and-swap, and one that finds the charge unanswered (a crash)
// asks the acquirer.
TEST(PaymentCoreTest, PosTerminalThenChargeThenResumption) {
  auto request = card_request("Venda Direta Debito");
  auto fp = fingerprint(request);
  Decision created = start_create(no_payment(), CreateArrival{request, kMerchant, fp}, {}, config(), kNow);
  Payment p{"pay-1", created.record, 1};

  EXPECT_FALSE(answer_terminal_now(p));
  Decision submitted = submit_terminal(p, "T-1", config(), kNow);
  ASSERT_TRUE(submitted.commits());
  EXPECT_EQ(write_to(submitted, Space::kPayments)->expected_etag, std::optional<uint64_t>(1));
  EXPECT_EQ(submitted.answer->outcome, Outcome::kDone);
  p = Payment{"pay-1", submitted.record, 2};
  EXPECT_FALSE(submit_terminal(p, "T-1", config(), kNow).commits());  // the same terminal again: accepted
  EXPECT_EQ(submit_terminal(p, "T-1", config(), kNow).answer->outcome, Outcome::kDone);
  EXPECT_EQ(submit_terminal(p, "T-2", config(), kNow).answer->outcome, Outcome::kConflict);

  EXPECT_FALSE(answer_create_now(p, CreateArrival{request, kMerchant, fp}, config()));  // work is due
  Decision charge = start_create(p, CreateArrival{request, kMerchant, fp}, {}, config(), kNow);
  EXPECT_EQ(charge.next, Next::kAuthorize);
  EXPECT_EQ(write_to(charge, Space::kPayments)->expected_etag, std::optional<uint64_t>(2));
  EXPECT_EQ(charge.record->pos_phase, kAwaitPos);

  p = Payment{"pay-1", charge.record, 3};  // crash: the charge's answer was never recorded
  EXPECT_FALSE(answer_create_now(p, CreateArrival{request, kMerchant, fp}, config()));
  EXPECT_EQ(start_create(p, CreateArrival{request, kMerchant, fp}, {}, config(), kNow).next, Next::kAskStatus);

  EXPECT_EQ(answer_terminal_now(payment_in(PaymentState::kApproved))->answer->outcome, Outcome::kNotFound);  // not POS
  EXPECT_EQ(answer_terminal_now(no_payment())->answer->outcome, Outcome::kNotFound);
}

domain::Authorization outcome(domain::AuthorizationStatus status, int64_t revision = 1) {
  domain::Authorization a;
  a.status = status;
  a.tid = "tid-9";
  a.nsu = "nsu-9";
  a.authorization_id = "auth-9";
  a.acquirer = "stub";
  a.code = "ok";
  a.message = "message";
  a.revision = revision;
  return a;
}

// The acquirer's answer to authorize, for a caller that waited, one told "undefined", and
// reconciliation in the background: only those who did not hear the outcome get a callback.
TEST(PaymentCoreTest, AuthorizationOutcomesAndWhoIsCalledBack) {
  struct Row {
    domain::AuthorizationStatus status;
    Listeners listeners;
    const char* state;
    bool callback;
  };
  using S = domain::AuthorizationStatus;
  const Row rows[] = {
      {S::kApproved, {false, false}, "approved", false}, {S::kDenied, {false, false}, "denied", false},
      {S::kPending, {false, false}, "undefined", false}, {S::kApproved, {false, true}, "approved", true},
      {S::kDenied, {true, false}, "denied", true},       {S::kPending, {true, false}, "undefined", false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.state) + (row.listeners.background ? " background" : "")
                 + (row.listeners.told_undefined ? " told undefined" : ""));
    Payment p = payment_in(PaymentState::kProcessing);
    Decision d = authorized(p, outcome(row.status), row.listeners, config(), kNow);
    EXPECT_EQ(state_name(d), row.state);
    EXPECT_EQ(write_to(d, Space::kPayments)->expected_etag, std::optional<uint64_t>(kEtag));
    const auto* recovery = write_to(d, Space::kRecovery);
    ASSERT_NE(recovery, nullptr);  // the outcome is known: nothing left to recover
    EXPECT_FALSE(recovery->value.has_value());
    EXPECT_EQ(d.callback.has_value(), row.callback);
    EXPECT_EQ(write_to(d, Space::kOutbox) != nullptr, row.callback);  // in the same batch
    EXPECT_EQ(body(*d.answer), d.record->response);
    if (d.callback) {
      EXPECT_EQ(d.callback->body, d.record->response);
      EXPECT_EQ(d.callback->id, "dlv_pay-1_1");
      EXPECT_EQ(d.record->callbacks, 1);
    }
  }
}

// A pending outcome whose acquirer's status call tells when it ends (API Pix) is watched: the
// watch index entry (until the document's expiry and a grace, with the acquirer entry whose
// looks are capped) is in the batch that records the outcome; the payment's leaving
// `undefined`, by whatever path, removes it in its own batch. Other outcomes write none.
TEST(PaymentCoreTest, APendingOutcomeIsWatchedUntilItsDocumentExpires) {
  Payment p = payment_in(PaymentState::kProcessing, "Pix");
  p.record->acquirer_route = "@psp";
  auto pending = outcome(domain::AuthorizationStatus::kPending);
  pending.watch = true;
  pending.document.expires_in_seconds = 1800;
  Decision d = authorized(p, pending, Listeners{}, config(), kNow);
  const auto* watch = write_to(d, Space::kWatches);
  ASSERT_NE(watch, nullptr);
  auto stored = decode_watch("pay-1", watch->value.value());
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->until, kNow + 1'800'000 + 300'000);
  EXPECT_EQ(stored->acquirer, kMerchant + "/@psp");
  EXPECT_EQ(d.record->watch_until, stored->until);
  ASSERT_TRUE(d.watch);
  EXPECT_EQ(d.watch->payment_id, "pay-1");

  Payment watched{"pay-1", *d.record, kEtag + 1};
  Decision again = refreshed(watched, pending, config(), kNow);
  EXPECT_EQ(write_to(again, Space::kWatches), nullptr) << "watched once";
  Decision paid = refreshed(watched, outcome(domain::AuthorizationStatus::kApproved, 9), config(), kNow);
  const auto* unwatch = write_to(paid, Space::kWatches);
  ASSERT_NE(unwatch, nullptr);
  EXPECT_FALSE(unwatch->value.has_value());
  EXPECT_EQ(paid.record->watch_until, 0);

  auto not_watched = outcome(domain::AuthorizationStatus::kPending);
  EXPECT_EQ(write_to(authorized(p, not_watched, Listeners{}, config(), kNow), Space::kWatches), nullptr);
  auto approved = outcome(domain::AuthorizationStatus::kApproved);
  approved.watch = true;
  EXPECT_EQ(write_to(authorized(p, approved, Listeners{}, config(), kNow), Space::kWatches), nullptr);
}

TEST(PaymentCoreTest, AFailedAcquirerCallAnswersUndefinedAndReconcilesLater) {
  Payment p = payment_in(PaymentState::kProcessing);
  Decision d = authorize_failed(p, Error{ErrorCode::kUnavailable, "timeout"}, kMerchant, config());
  EXPECT_FALSE(d.commits());  // the record stays unresolved
  EXPECT_EQ(d.next, Next::kReconcileLater);
  EXPECT_EQ(body(*d.answer), body(undefined_answer("pay-1", config())));
  EXPECT_EQ(to_string(d.noted.at(0).kind), "event_failed");

  auto failed = Result<std::optional<domain::Authorization>>(tl::unexpected(Error{ErrorCode::kUnavailable, "x"}));
  EXPECT_EQ(create_status(p, failed, {}, kMerchant, config(), kNow).next, Next::kReconcileLater);
  EXPECT_EQ(background_status(p, failed, config(), kNow).next, Next::kReconcileLater);
  EXPECT_FALSE(background_status(p, failed, config(), kNow).answer);  // nobody waits
}

// Resumption after a crash at each step of a Create Payment: the retry never authorizes under
// a new key, never writes a second intent, and ends in the outcome the acquirer recorded.
TEST(PaymentCoreTest, CreatePaymentResumesAfterACrashAtEachStep) {
  auto request = card_request();
  auto fp = fingerprint(request);
  CreateArrival arrival{request, kMerchant, fp};
  Decision intent = start_create(no_payment(), arrival, {}, config(), kNow);
  Payment after_intent{"pay-1", intent.record, 1};  // crash before the acquirer was called

  Decision retried = start_create(after_intent, arrival, {}, config(), kNow);
  ASSERT_EQ(retried.next, Next::kAskStatus);
  Decision never_saw = create_status(after_intent, std::optional<domain::Authorization>(), {}, kMerchant, config(), kNow);
  EXPECT_EQ(never_saw.next, Next::kAuthorize);  // under the payment's own key, still only one
  EXPECT_FALSE(never_saw.commits());

  // Crash after the acquirer approved, before the result was written.
  Decision found = create_status(after_intent, outcome(domain::AuthorizationStatus::kApproved), {}, kMerchant,
                                 config(), kNow);
  EXPECT_EQ(state_name(found), "approved");
  EXPECT_EQ(write_to(found, Space::kPayments)->expected_etag, std::optional<uint64_t>(1));
  Payment after_result{"pay-1", found.record, 2};

  // Crash after the result: the retry replays it byte for byte.
  auto replay = answer_create_now(after_result, arrival, config());
  ASSERT_TRUE(replay);
  EXPECT_EQ(body(*replay->answer), body(*found.answer));

  // Found in the background instead: the caller who heard "undefined" is called back.
  Decision background = background_status(after_intent, outcome(domain::AuthorizationStatus::kDenied), config(), kNow);
  EXPECT_EQ(state_name(background), "denied");
  EXPECT_TRUE(background.callback);
  Decision unseen = background_status(after_intent, std::optional<domain::Authorization>(), config(), kNow);
  EXPECT_FALSE(unseen.commits());  // the gateway's retry authorizes it
  EXPECT_EQ(to_string(unseen.noted.at(0).kind), "event_reconciled");
}

TEST(PaymentCoreTest, OnlyAProcessingPaymentIsOrphaned) {
  for (auto state : kAllStates) {
    SCOPED_TRACE(std::string(to_string(state)));
    auto d = orphan(payment_in(state), kNow);
    EXPECT_EQ(d.has_value(), state == PaymentState::kProcessing);
    if (d) {
      EXPECT_EQ(state_name(*d), "orphaned");
      EXPECT_EQ(write_to(*d, Space::kPayments)->expected_etag, std::optional<uint64_t>(kEtag));
    }
  }
  EXPECT_FALSE(orphan(no_payment(), kNow));
}

// -- cancel / settle / refund -------------------------------------------------------------------

ppp::OperationRequest operation(ppp::OperationKind kind, Cents value, const std::string& request_id = "req-1") {
  ppp::OperationRequest r;
  r.kind = kind;
  r.payment_id = "pay-1";
  r.request_id = request_id;
  r.value = value;
  return r;
}

std::string op_fingerprint(const ppp::OperationRequest& r) {
  return ppp::operation_fingerprint(config().fingerprint_key, r);
}

Decision start(const Payment& p, const ppp::OperationRequest& req,
               const Result<std::optional<StoredOperation>>& stored = std::optional<StoredOperation>()) {
  auto fp = op_fingerprint(req);
  return start_operation(p, OperationArrival{req, kMerchant, fp}, stored, config(), kNow);
}

// A first cancel, settle (1.00) or refund (1.00) in each state: 'I' writes its intent and calls
// the acquirer, 'R' is refused by the state machine with nothing written. Cancels as the
// protocol specifies them (docs/ppp-surface.md#refunds-and-cancellations): 'A' answers the Cancel answer without the
// acquirer (nothing to void), stored; 'X' a stored 500 in the Cancel shape (settled: the
// gateway refunds instead); 'S' asks the acquirer what happened first (outcome unknown).
TEST(PaymentCoreTest, OperationsInEveryState) {
  using K = ppp::OperationKind;
  const std::map<PaymentState, std::string> expected = {
      // cancel, settle, refund
      {PaymentState::kProcessing, "SRR"}, {PaymentState::kUndefined, "IRR"}, {PaymentState::kApproved, "IIR"},
      {PaymentState::kDenied, "ARR"},     {PaymentState::kCancelled, "ARR"}, {PaymentState::kSettled, "XII"},
      {PaymentState::kRefunded, "XRI"},   {PaymentState::kOrphaned, "SRR"},
  };
  const K kinds[] = {K::kCancel, K::kSettle, K::kRefund};
  for (auto state : kAllStates) {
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE(std::string(to_string(state)) + " " + std::string(ppp::to_string(kinds[i])));
      Payment p = payment_in(state);
      auto req = operation(kinds[i], kinds[i] == K::kCancel ? 0 : 100);
      Decision d = start(p, req);
      char what = expected.at(state)[i];
      if (what == 'A' || what == 'X') {
        EXPECT_EQ(d.next, Next::kEnd);
        const auto* stored = write_to(d, Space::kOperations);
        ASSERT_NE(stored, nullptr);
        EXPECT_EQ(stored->expected_etag, std::optional<uint64_t>(0));
        EXPECT_EQ(write_to(d, Space::kPayments), nullptr);
        EXPECT_EQ(write_to(d, Space::kRecovery), nullptr);
        auto doc = JsonValue::parse(body(*d.answer));
        ASSERT_TRUE(doc);
        EXPECT_EQ(d.answer->outcome, what == 'A' ? Outcome::kDone : Outcome::kFailed);
        EXPECT_EQ(doc->string_or("requestId"), "req-1");
        ASSERT_NE(doc->find("cancellationId"), nullptr);
        EXPECT_EQ(doc->find("cancellationId")->is_null(), what == 'X');  // null exactly when nothing was cancelled
        EXPECT_EQ(doc->string_or("code"), what == 'X' ? "already-settled" : "");
      } else if (what == 'S') {
        EXPECT_EQ(d.next, Next::kAskStatus);
        EXPECT_FALSE(d.commits());
      } else if (what == 'I') {
        EXPECT_EQ(d.next, Next::kOperate);
        const auto* intent = write_to(d, Space::kOperations);
        ASSERT_NE(intent, nullptr);
        EXPECT_EQ(intent->key, "pay-1/req-1");
        EXPECT_EQ(intent->expected_etag, std::optional<uint64_t>(0));
        EXPECT_EQ(d.operation->record.acquirer_key, "pay-1/req-1");  // scoped to the payment
        EXPECT_EQ(d.operation->record.amount, kinds[i] == K::kCancel ? 1000 : 100);
        EXPECT_EQ(write_to(d, Space::kPayments), nullptr);  // the payment changes once it is done
        ASSERT_NE(write_to(d, Space::kRecovery), nullptr);
      } else {
        EXPECT_EQ(d.next, Next::kEnd);
        EXPECT_FALSE(d.commits());
        EXPECT_EQ(d.answer->outcome, Outcome::kFailed);  // the operation's own shape, a 500
        EXPECT_EQ(to_string(d.noted.at(0).kind), "operation_refused");
        // One name for the refusal: the answer's code begins the trail's entry.
        ASSERT_TRUE(d.answer->refused);
        std::string code(code_of(d.answer->refused->refusal));
        EXPECT_EQ(d.noted.at(0).detail.rfind(code + ": ", 0), 0u) << d.noted.at(0).detail;
        EXPECT_NE(body(*d.answer).find("\"code\":\"" + code + "\""), std::string::npos);
      }
    }
  }
  EXPECT_EQ(start(no_payment(), operation(K::kCancel, 0)).answer->outcome, Outcome::kFailed);
}

TEST(PaymentCoreTest, AnotherMerchantsPaymentIsUnknownToOperations) {
  for (auto state : kAllStates) {
    auto req = operation(ppp::OperationKind::kCancel, 0);
    auto fp = op_fingerprint(req);
    auto d = answer_operation_now(payment_in(state), OperationArrival{req, kOther, fp}, config());
    ASSERT_TRUE(d);
    EXPECT_EQ(body(*d->answer), body(*start(no_payment(), req).answer));
    EXPECT_FALSE(answer_operation_now(payment_in(state), OperationArrival{req, kMerchant, fp}, config()));
  }
}

// A marketplace order's recipients split an operation only where the method splits at that
// step; elsewhere they are dropped before the fingerprint and never reach the acquirer.
TEST(PaymentCoreTest, RecipientsSplitOnlyWhereTheMethodSplits) {
  using K = ppp::OperationKind;
  using M = ppp::SplitMode;
  ppp::Recipient seller;
  seller.id = "seller-1";
  seller.role = "seller";
  seller.amount = 100;
  // kind, the method's mode -> the recipients kept as a split
  const std::tuple<K, M, bool> cases[] = {
      {K::kSettle, M::kDisabled, false},   {K::kSettle, M::kOnAuthorize, false}, {K::kSettle, M::kOnCapture, true},
      {K::kRefund, M::kDisabled, false},   {K::kRefund, M::kOnAuthorize, true},  {K::kRefund, M::kOnCapture, true},
  };
  for (auto [kind, mode, kept] : cases) {
    SCOPED_TRACE(std::string(ppp::to_string(kind)) + " " + std::string(ppp::to_string(mode)));
    CoreConfig c = config();
    c.methods["Visa"].allows_split = mode;
    Payment p = payment_in(kind == K::kSettle ? PaymentState::kApproved : PaymentState::kSettled);
    auto req = operation(kind, 100);
    req.recipients = {seller};
    drop_unsplit_recipients(p, req, c);
    EXPECT_EQ(req.recipients.size(), kept ? 1u : 0u);
    auto fp = ppp::operation_fingerprint(c.fingerprint_key, req);
    Decision d = start_operation(p, OperationArrival{req, kMerchant, fp}, std::optional<StoredOperation>(), c, kNow);
    ASSERT_EQ(d.next, Next::kOperate);
    EXPECT_EQ(d.operation->record.recipients.size(), kept ? 1u : 0u);
  }
  // Where the method splits, the split must add up; where it does not, nothing is checked.
  CoreConfig c = config();
  c.methods["Visa"].allows_split = M::kOnCapture;
  auto req = operation(K::kSettle, 100);
  seller.amount = 60;
  req.recipients = {seller};
  auto fp = ppp::operation_fingerprint(c.fingerprint_key, req);
  Decision refused = start_operation(payment_in(PaymentState::kApproved), OperationArrival{req, kMerchant, fp},
                                     std::optional<StoredOperation>(), c, kNow);
  EXPECT_EQ(to_string(refused.noted.at(0).kind), "operation_refused");
  // The core keeps the rule even if the shell forgot to drop them.
  c.methods["Visa"].allows_split = M::kDisabled;
  Decision d = start_operation(payment_in(PaymentState::kApproved), OperationArrival{req, kMerchant, fp},
                               std::optional<StoredOperation>(), c, kNow);
  ASSERT_EQ(d.next, Next::kOperate);
  EXPECT_TRUE(d.operation->record.recipients.empty());
}

// The rules the core relies on, checked on every decision before the shell commits it.
TEST(PaymentCoreTest, ADecisionThatWouldBreakARuleIsNamedAndWritesNothing) {
  // A precondition the shell missed: an acquirer's answer for a payment never stored.
  domain::Authorization approval;
  approval.status = domain::AuthorizationStatus::kApproved;
  Decision missed = authorized(no_payment(), approval, Listeners{}, config(), kNow);
  EXPECT_FALSE(missed.broken.empty());
  EXPECT_FALSE(missed.commits());
  EXPECT_EQ(missed.answer->outcome, Outcome::kRetry);
  EXPECT_EQ(broken_invariant(no_payment(), missed), missed.broken);
  // A state the lifecycle forbids, however a decision came to it; totals out of bounds.
  Payment settled = payment_in(PaymentState::kSettled);
  Decision backwards;
  backwards.record = *settled.record;
  backwards.record->state = PaymentState::kApproved;
  EXPECT_NE(broken_invariant(settled, backwards), "");
  Decision over = backwards;
  over.record->state = PaymentState::kRefunded;
  over.record->amounts.refunded = over.record->amounts.settled + 1;
  EXPECT_NE(broken_invariant(settled, over), "");
  Decision born_settled = backwards;
  born_settled.record->state = PaymentState::kSettled;
  EXPECT_NE(broken_invariant(no_payment(), born_settled), "");
  // The core's own decisions keep every rule, in every state.
  for (auto state : kAllStates) {
    for (auto kind : {ppp::OperationKind::kCancel, ppp::OperationKind::kSettle, ppp::OperationKind::kRefund}) {
      Payment p = payment_in(state);
      Decision d = start(p, operation(kind, kind == ppp::OperationKind::kCancel ? 0 : 100));
      EXPECT_EQ(broken_invariant(p, d), "") << to_string(state);
    }
  }
}

// The in-process stub's trigger: only the payment's owner, and the trail says who asked.
TEST(PaymentCoreTest, AnOwnerActionIsTheOwnersAndRecordsWhoAsked) {
  Decision mine = owner_action(payment_in(PaymentState::kUndefined), kMerchant, "stub trigger: approve", config());
  EXPECT_FALSE(mine.answer);
  ASSERT_EQ(mine.noted.size(), 1u);
  EXPECT_EQ(to_string(mine.noted[0].kind), "acquirer_action_requested");
  EXPECT_EQ(mine.noted[0].merchant, kMerchant);
  EXPECT_EQ(mine.noted[0].detail, "stub trigger: approve");
  Decision theirs = owner_action(payment_in(PaymentState::kUndefined), kOther, "stub trigger: approve", config());
  ASSERT_TRUE(theirs.answer);
  EXPECT_EQ(theirs.answer->outcome, Outcome::kNotFound);
  EXPECT_EQ(body(*theirs.answer), body(*owner_action(no_payment(), kOther, "x", config()).answer));
  EXPECT_EQ(to_string(theirs.noted.at(0).kind), "access_refused");
  EXPECT_EQ(theirs.noted.at(0).merchant, kOther);
}

// An operation resumed after a crash at each step: before the acquirer answered (same key
// again, no second intent), after it answered (the stored answer), and a requestId reused.
TEST(PaymentCoreTest, OperationsResumeAfterACrashAtEachStep) {
  Payment p = payment_in(PaymentState::kApproved);
  auto req = operation(ppp::OperationKind::kSettle, 400);
  Decision first = start(p, req);
  StoredOperation stored{first.operation->key, first.operation->record, 1};

  Decision resumed = start(p, req, std::optional<StoredOperation>(stored));
  EXPECT_EQ(resumed.next, Next::kOperate);
  EXPECT_FALSE(resumed.commits());
  EXPECT_EQ(resumed.operation->record.acquirer_key, first.operation->record.acquirer_key);
  EXPECT_EQ(resumed.operation->etag, 1u);
  auto recovered = resume_operation("pay-1", "req-1", stored);
  ASSERT_TRUE(recovered);
  EXPECT_EQ(recovered->record.acquirer_key, "pay-1/req-1");

  domain::OperationOutcome ok{true, "settle-1", 400, "", ""};
  PendingOperation pending = *first.operation;
  pending.etag = 1;
  Decision done = operation_done(p, pending, ok, config(), kNow);
  EXPECT_EQ(done.answer->outcome, Outcome::kDone);
  EXPECT_EQ(state_name(done), "settled");
  EXPECT_EQ(done.record->amounts.settled, 400);
  EXPECT_EQ(write_to(done, Space::kOperations)->expected_etag, std::optional<uint64_t>(1));
  EXPECT_EQ(write_to(done, Space::kPayments)->expected_etag, std::optional<uint64_t>(kEtag));

  auto stored_done = decode_operation(*write_to(done, Space::kOperations)->value);
  ASSERT_TRUE(stored_done);
  StoredOperation after{stored.key, *stored_done, 2};
  Payment settled{"pay-1", done.record, kEtag + 1};
  Decision replay = start(settled, req, std::optional<StoredOperation>(after));
  EXPECT_EQ(body(*replay.answer), body(*done.answer));  // G2
  EXPECT_FALSE(replay.commits());
  EXPECT_FALSE(resume_operation("pay-1", "req-1", after));  // nothing in flight any more

  auto other = operation(ppp::OperationKind::kSettle, 300);
  Decision reused = start(settled, other, std::optional<StoredOperation>(after));
  EXPECT_EQ(body(*reused.answer), body(operation_request_conflict(other)));

  auto unknown = operation_done(p, pending, tl::unexpected(Error{ErrorCode::kUnavailable, "timeout"}), config(), kNow);
  EXPECT_FALSE(unknown.commits());  // nothing recorded as done: the retry resumes it
  EXPECT_EQ(unknown.answer->outcome, Outcome::kFailed);

  domain::OperationOutcome refused{false, "", 0, "too-late", "refused"};
  Decision no = operation_done(p, pending, refused, config(), kNow);
  EXPECT_EQ(no.answer->outcome, Outcome::kFailed);
  EXPECT_EQ(write_to(no, Space::kPayments), nullptr);  // the payment does not change
  ASSERT_NE(write_to(no, Space::kOperations), nullptr);
}

// A refund the acquirer accepted but has not completed: "not yet" (500, the refund's shape),
// nothing recorded as done, the recovery key kept; the retry asks again under the same key
// and, once the acquirer says it is done, records and answers the 200.
TEST(PaymentCoreTest, APendingRefundAnswersNotYetUntilItIsDone) {
  Payment p = payment_in(PaymentState::kSettled);
  auto req = operation(ppp::OperationKind::kRefund, 100);
  Decision first = start(p, req);
  ASSERT_EQ(first.next, Next::kOperate);
  PendingOperation pending = *first.operation;
  pending.etag = 1;
  domain::OperationOutcome accepted{false, "refund-1", 100, "", "held by the network"};
  accepted.pending = true;
  Decision not_yet = operation_done(p, pending, accepted, config(), kNow);
  EXPECT_EQ(not_yet.answer->outcome, Outcome::kFailed);
  EXPECT_EQ(not_yet.answer->refused->refusal, Refusal::kRefundPending);
  auto doc = JsonValue::parse(body(*not_yet.answer));
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->string_or("code"), "refund-pending");
  EXPECT_TRUE(doc->find("refundId")->is_null());
  EXPECT_EQ(write_to(not_yet, Space::kOperations), nullptr);  // still in flight: resumed by the retry
  EXPECT_EQ(write_to(not_yet, Space::kRecovery), nullptr);    // and by recovery
  EXPECT_EQ(write_to(not_yet, Space::kPayments), nullptr);    // no refund counted yet

  StoredOperation stored{pending.key, pending.record, 1};
  Decision retry = start(p, req, std::optional<StoredOperation>(stored));
  EXPECT_EQ(retry.next, Next::kOperate);
  EXPECT_EQ(retry.operation->record.acquirer_key, pending.record.acquirer_key);  // the same key
  domain::OperationOutcome completed{true, "refund-1", 100, "", "ok"};
  Decision done = operation_done(p, *retry.operation, completed, config(), kNow);
  EXPECT_EQ(done.answer->outcome, Outcome::kDone);
  EXPECT_EQ(done.record->amounts.refunded, 100);
}

// Manual operations answer 501 in the operation's shape and are stored like any answer; the
// payment does not change. Configured as manual: no acquirer call at all, and only once the
// state machine has accepted the operation (a refusal stays a refusal).
TEST(PaymentCoreTest, ManualOperationsAnswer501AndChangeNothing) {
  Payment p = payment_in(PaymentState::kApproved);
  auto cancel = operation(ppp::OperationKind::kCancel, 0);
  Decision first = start(p, cancel);
  domain::OperationOutcome cannot{false, "", 0, "manual", "no voids by API"};
  cannot.manual = true;
  Decision manual = operation_done(p, *first.operation, cannot, config(), kNow);
  EXPECT_EQ(manual.answer->outcome, Outcome::kManual);
  EXPECT_EQ(JsonValue::parse(body(*manual.answer))->string_or("code"), "cancel-manually");
  EXPECT_EQ(write_to(manual, Space::kPayments), nullptr);
  auto stored = decode_operation(*write_to(manual, Space::kOperations)->value);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->outcome, Outcome::kManual);

  Payment settled = payment_in(PaymentState::kSettled);
  auto refund = operation(ppp::OperationKind::kRefund, 100);
  refund.manual = true;
  Decision configured = start(settled, refund);
  EXPECT_EQ(configured.next, Next::kEnd);
  EXPECT_EQ(configured.answer->outcome, Outcome::kManual);
  EXPECT_EQ(JsonValue::parse(body(*configured.answer))->string_or("code"), "refund-manually");
  EXPECT_EQ(write_to(configured, Space::kPayments), nullptr);
  ASSERT_NE(write_to(configured, Space::kOperations), nullptr);

  // A method refunded by hand (the manifest's manualOperations): the same, for any merchant.
  CoreConfig by_method = config();
  by_method.methods["Visa"].manual_refund = true;
  auto plain = operation(ppp::OperationKind::kRefund, 100);
  auto fp = op_fingerprint(plain);
  Decision method_manual = start_operation(settled, OperationArrival{plain, kMerchant, fp},
                                           std::optional<StoredOperation>(), by_method, kNow);
  EXPECT_EQ(method_manual.answer->outcome, Outcome::kManual);
  EXPECT_EQ(start(settled, plain).next, Next::kOperate);  // other configurations: the acquirer

  auto too_much = operation(ppp::OperationKind::kRefund, 100'000);
  too_much.manual = true;
  EXPECT_EQ(start(settled, too_much).answer->outcome, Outcome::kFailed);  // refused first
}

// Random sequences of settlements and refunds, each carried through the core as the actor
// would: the totals never break settled <= authorized and refunded <= settled, a refused
// operation changes nothing, and the totals are the sum of what was accepted.
TEST(PaymentCoreTest, AmountInvariantsHoldOverRandomOperations) {
  std::mt19937 random(12345);
  for (int round = 0; round < 200; ++round) {
    Payment p = payment_in(PaymentState::kApproved);
    if (round % 2 == 1) {
      p.record->amounts.max_value = 1'200;  // the acquirer allows 20% more (maxValue)
    }
    Cents accepted_settled = 0;
    Cents accepted_refunded = 0;
    for (int step = 0; step < 12; ++step) {
      auto kind = random() % 2 == 0 ? ppp::OperationKind::kSettle : ppp::OperationKind::kRefund;
      Cents value = static_cast<Cents>(random() % 600) + 1;
      auto req = operation(kind, value, "req-" + std::to_string(step));
      Decision d = start(p, req);
      if (d.next != Next::kOperate) {
        EXPECT_FALSE(d.commits());
        continue;
      }
      PendingOperation pending = *d.operation;
      pending.etag = 1;
      Decision done = operation_done(p, pending, domain::OperationOutcome{true, "op", value, "", ""}, config(), kNow);
      ASSERT_TRUE(done.record);
      (kind == ppp::OperationKind::kSettle ? accepted_settled : accepted_refunded) += value;
      p = Payment{"pay-1", done.record, p.etag + 1};
      const Amounts& a = p.record->amounts;
      ASSERT_LE(a.settled, round % 2 == 1 ? 1'200 : a.authorized);
      ASSERT_LE(a.refunded, a.settled);
      ASSERT_EQ(a.settled, accepted_settled);
      ASSERT_EQ(a.refunded, accepted_refunded);
    }
  }
}

// An approval with a maxValue above the amount: recorded, answered as maxValue, and the limit
// of what settlements may add up to; a maxValue at or below the amount changes nothing.
TEST(PaymentCoreTest, MaxValueLetsSettlementsExceedTheAmountUpToIt) {
  Payment p = payment_in(PaymentState::kProcessing);
  auto approval = outcome(domain::AuthorizationStatus::kApproved, 2);
  approval.max_value = 1'150;
  Decision d = authorized(p, approval, Listeners{}, config(), kNow);
  ASSERT_TRUE(d.record);
  EXPECT_EQ(d.record->amounts.max_value, 1'150);
  EXPECT_NE(d.record->response.find(R"("maxValue":11.5})"), std::string::npos) << d.record->response;
  Payment approved{"pay-1", d.record, kEtag + 1};
  EXPECT_EQ(start(approved, operation(ppp::OperationKind::kSettle, 1'150)).next, Next::kOperate);
  EXPECT_EQ(start(approved, operation(ppp::OperationKind::kSettle, 1'151)).answer->outcome, Outcome::kFailed);

  approval.max_value = 900;  // not more than the amount: no maxValue
  Decision lower = authorized(p, approval, Listeners{}, config(), kNow);
  EXPECT_EQ(lower.record->amounts.max_value, 0);
  EXPECT_EQ(lower.record->response.find("maxValue"), std::string::npos);
  auto denial = outcome(domain::AuthorizationStatus::kDenied, 2);
  denial.max_value = 1'150;
  EXPECT_EQ(authorized(p, denial, Listeners{}, config(), kNow).record->amounts.max_value, 0);
}

// -- webhooks and refreshes ---------------------------------------------------------------------

AcquirerEvent event(domain::AuthorizationStatus status, int64_t revision = 5) {
  AcquirerEvent e;
  e.event_id = "evt-1";
  e.body_hash = "hash-1";
  e.payment_id = "pay-1";
  e.authorization = outcome(status, revision);
  return e;
}

// A verified, first-seen webhook reporting approval: only an undefined payment moves; every
// other state records the event in the inbox as ignored, in one batch with its audit entry.
TEST(PaymentCoreTest, WebhooksInEveryState) {
  for (auto state : kAllStates) {
    SCOPED_TRACE(std::string(to_string(state)));
    Payment p = payment_in(state);
    Decision d = receive_event(p, event(domain::AuthorizationStatus::kApproved),
                               std::optional<storage::Versioned>(), config(), kNow);
    ASSERT_NE(write_to(d, Space::kInbox), nullptr);  // never applied twice
    EXPECT_EQ(write_to(d, Space::kInbox)->expected_etag, std::optional<uint64_t>(0));
    EXPECT_EQ(body(*d.answer), R"({"received":true})");
    if (state == PaymentState::kUndefined) {
      EXPECT_EQ(state_name(d), "approved");
      EXPECT_EQ(to_string(d.audit.at(0).kind), "webhook_applied");
      EXPECT_TRUE(d.callback);
      EXPECT_EQ(d.record->authorization_id, "auth-9");
    } else {
      EXPECT_EQ(state_name(d), "-");
      EXPECT_EQ(write_to(d, Space::kPayments), nullptr);
      // An approval of a payment the gateway heard would not be made is a failure to act on.
      bool paid_late = state == PaymentState::kCancelled || state == PaymentState::kDenied;
      EXPECT_EQ(to_string(d.audit.at(0).kind), paid_late ? "acquirer_failure_reported" : "webhook_ignored");
    }
  }
  EXPECT_EQ(receive_event(no_payment(), event(domain::AuthorizationStatus::kApproved),
                          std::optional<storage::Versioned>(), config(), kNow)
                .answer->outcome,
            Outcome::kNotFound);
}

TEST(PaymentCoreTest, StalePendingDuplicateAndConflictingWebhooks) {
  Payment p = payment_in(PaymentState::kUndefined);
  p.record->acquirer_revision = 5;
  auto none = std::optional<storage::Versioned>();
  EXPECT_EQ(state_name(receive_event(p, event(domain::AuthorizationStatus::kApproved, 5), none, config(), kNow)), "-");
  EXPECT_EQ(state_name(receive_event(p, event(domain::AuthorizationStatus::kPending, 6), none, config(), kNow)), "-");
  EXPECT_EQ(state_name(receive_event(p, event(domain::AuthorizationStatus::kDenied, 6), none, config(), kNow)),
            "denied");

  storage::Versioned same{"hash-1", 1};
  Decision duplicate = receive_event(p, event(domain::AuthorizationStatus::kApproved), same, config(), kNow);
  EXPECT_FALSE(duplicate.commits());
  EXPECT_EQ(body(*duplicate.answer), R"({"received":true,"duplicate":true})");
  storage::Versioned different{"hash-2", 1};
  Decision conflict = receive_event(p, event(domain::AuthorizationStatus::kApproved), different, config(), kNow);
  EXPECT_FALSE(conflict.commits());
  EXPECT_EQ(conflict.answer->outcome, Outcome::kConflict);
}

// A notification that came through a merchant's own path (Adyen) reaches only a payment that
// merchant created through that acquirer entry: another merchant's payment, or one of its own
// made through another entry, is answered as unknown, writes nothing (its inbox id included,
// so nothing is shadowed) and notes who tried.
TEST(PaymentCoreTest, ANotificationReachesOnlyPaymentsCreatedThroughItsPath) {
  Payment p = payment_in(PaymentState::kUndefined);
  p.record->acquirer_route = "@cards";
  auto none = std::optional<storage::Versioned>();
  struct Case {
    std::string sender, route;
    bool reaches;
  } cases[] = {{kMerchant, "@cards", true},
               {kOther, "@cards", false},
               {kMerchant, "@other-cards", false},
               {"", "", true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sender + " " + c.route);
    AcquirerEvent e = event(domain::AuthorizationStatus::kDenied);
    e.sender = c.sender;
    e.sender_route = c.route;
    Decision d = receive_event(p, e, none, config(), kNow);
    if (c.reaches) {
      EXPECT_EQ(state_name(d), "denied");
      continue;
    }
    EXPECT_FALSE(d.commits());
    EXPECT_EQ(d.answer->outcome, Outcome::kNotFound);
    ASSERT_EQ(d.noted.size(), 1u);
    EXPECT_EQ(to_string(d.noted[0].kind), "access_refused");
    EXPECT_EQ(d.noted[0].merchant, c.sender);
    // The inbox holding this id already changes nothing either: the path is checked first.
    storage::Versioned seen{"hash-1", 1};
    EXPECT_EQ(receive_event(p, e, seen, config(), kNow).answer->outcome, Outcome::kNotFound);
  }
}

TEST(PaymentCoreTest, RefreshesInEveryState) {
  for (auto state : kAllStates) {
    SCOPED_TRACE(std::string(to_string(state)));
    Payment p = payment_in(state);
    EXPECT_EQ(body(*answer_refresh_now(p, kOther, Asker::kMerchant, config())->answer),
              body(unknown_payment("pay-1")));
    EXPECT_FALSE(answer_refresh_now(p, kMerchant, Asker::kMerchant, config()));
    Decision d = start_refresh(p);
    if (state == PaymentState::kUndefined) {
      EXPECT_EQ(d.next, Next::kAskStatus);
      Decision found = refreshed(p, outcome(domain::AuthorizationStatus::kApproved, 9), config(), kNow);
      EXPECT_EQ(state_name(found), "approved");
      Decision unknown = refreshed(p, std::optional<domain::Authorization>(), config(), kNow);
      EXPECT_FALSE(unknown.commits());
      EXPECT_EQ(body(*unknown.answer), p.record->response);
    } else {
      EXPECT_EQ(d.next, Next::kEnd);
      EXPECT_EQ(body(*d.answer), p.record->response);
    }
  }
  EXPECT_EQ(answer_refresh_now(no_payment(), kMerchant, Asker::kMerchant, config())->answer->outcome,
            Outcome::kNotFound);
}

// Who asks decides what is noted: a merchant asking for another's payment is recorded in that
// payment's trail as the one who tried; an unauthenticated hint through a merchant's path is
// not (anyone may post to a path, so the path's merchant did not necessarily ask); the
// connector's own look reaches any payment.
TEST(PaymentCoreTest, ARefreshNotesOnlyAnAuthenticatedMerchantAsItsActor) {
  Payment p = payment_in(PaymentState::kUndefined);
  auto by_merchant = answer_refresh_now(p, kOther, Asker::kMerchant, config());
  ASSERT_TRUE(by_merchant && by_merchant->noted.size() == 1);
  EXPECT_EQ(by_merchant->noted[0].merchant, kOther);
  auto by_hint = answer_refresh_now(p, kOther, Asker::kHint, config());
  ASSERT_TRUE(by_hint);
  EXPECT_TRUE(by_hint->noted.empty());
  EXPECT_EQ(by_hint->answer->outcome, Outcome::kNotFound);
  EXPECT_FALSE(answer_refresh_now(p, kMerchant, Asker::kHint, config()));
  EXPECT_FALSE(answer_refresh_now(p, "", Asker::kConnector, config()));
  EXPECT_EQ(answer_refresh_now(no_payment(), "", Asker::kConnector, config())->answer->outcome,
            Outcome::kNotFound);
}

// Payments stored before owners were recorded belong to the legacy owner.
TEST(PaymentCoreTest, LegacyPaymentsBelongToTheLegacyOwner) {
  Payment p = payment_in(PaymentState::kApproved);
  p.record->owner.clear();
  auto request = card_request();
  auto fp = fingerprint(request);
  EXPECT_EQ(answer_create_now(p, CreateArrival{request, kMerchant, fp}, config())->answer->outcome, Outcome::kDone);
  EXPECT_EQ(answer_create_now(p, CreateArrival{request, kOther, fp}, config())->answer->outcome, Outcome::kRefused);
}

// The same inputs give the same decision, byte for byte: nothing hidden feeds the core.
TEST(PaymentCoreTest, DecisionsDependOnlyOnTheirInputs) {
  auto request = card_request();
  auto fp = fingerprint(request);
  auto a = start_create(no_payment(), CreateArrival{request, kMerchant, fp}, {}, config(), kNow);
  auto b = start_create(no_payment(), CreateArrival{request, kMerchant, fp}, {}, config(), kNow);
  ASSERT_EQ(a.writes.size(), b.writes.size());
  for (size_t i = 0; i < a.writes.size(); ++i) {
    EXPECT_EQ(a.writes[i].key, b.writes[i].key);
    EXPECT_EQ(a.writes[i].value, b.writes[i].value);
  }
}

// -- leases: instances sharing the store -------------------------------------------------------

constexpr int64_t kLease = 30'000;

CoreConfig instance(const std::string& name) {
  CoreConfig c = config();
  c.instance = name;
  c.lease_ms = kLease;
  return c;
}

Payment leased(PaymentState state, const std::string& owner, int64_t until) {
  Payment p = payment_in(state);
  p.record->lease_owner = owner;
  p.record->lease_until = until;
  return p;
}

TEST(PaymentCoreTest, TheIntentCarriesTheLeaseOfTheInstanceThatCallsTheAcquirer) {
  auto request = card_request();
  auto fp = fingerprint(request);
  Decision shared = start_create(no_payment(), CreateArrival{request, kMerchant, fp}, {}, instance("a"), kNow);
  ASSERT_TRUE(shared.record);
  EXPECT_EQ(shared.record->lease_owner, "a");
  EXPECT_EQ(shared.record->lease_until, kNow + kLease);
  EXPECT_NE(write_to(shared, Space::kPayments)->value->find(R"("leaseOwner":"a")"), std::string::npos);
  // One instance keeps no lease: not a byte more per record.
  Decision single = start_create(no_payment(), CreateArrival{request, kMerchant, fp}, {}, config(), kNow);
  EXPECT_TRUE(single.record->lease_owner.empty());
  EXPECT_EQ(write_to(single, Space::kPayments)->value->find("lease"), std::string::npos);
}

TEST(PaymentCoreTest, AnUnresolvedPaymentIsFollowedWhileLeasedElsewhereAndTakenOverAfter) {
  auto request = card_request();
  auto fp = fingerprint(request);
  CreateArrival arrival{request, kMerchant, fp};
  // Another instance's live lease: nobody else asks the acquirer; this request follows it.
  Decision live = start_create(leased(PaymentState::kProcessing, "b", kNow + 1), arrival, {}, instance("a"), kNow);
  EXPECT_EQ(live.next, Next::kFollow);
  EXPECT_TRUE(live.writes.empty());
  // Expired: taken over with a compare-and-swap of the record, then the status call.
  Decision expired = start_create(leased(PaymentState::kProcessing, "b", kNow), arrival, {}, instance("a"), kNow);
  EXPECT_EQ(expired.next, Next::kAskStatus);
  ASSERT_EQ(expired.writes.size(), 1u);
  EXPECT_EQ(expired.writes[0].expected_etag, kEtag);
  EXPECT_EQ(expired.record->lease_owner, "a");
  EXPECT_EQ(expired.record->lease_until, kNow + kLease);
  // Its own lease with time left: no write; one instance: leases are ignored.
  EXPECT_TRUE(start_create(leased(PaymentState::kProcessing, "a", kNow + kLease), arrival, {}, instance("a"), kNow)
                  .writes.empty());
  Decision single = start_create(leased(PaymentState::kProcessing, "b", kNow + 1), arrival, {}, config(), kNow);
  EXPECT_EQ(single.next, Next::kAskStatus);
  EXPECT_TRUE(single.writes.empty());
  // The outcome ends the lease.
  Decision done = authorized(leased(PaymentState::kProcessing, "a", kNow + kLease),
                             outcome(domain::AuthorizationStatus::kApproved), {}, instance("a"), kNow);
  EXPECT_TRUE(done.record->lease_owner.empty());
  EXPECT_EQ(done.record->lease_until, 0);
}

TEST(PaymentCoreTest, TakeLeaseRenewsOnlyWhenLessThanHalfIsLeft) {
  EXPECT_FALSE(take_lease(leased(PaymentState::kProcessing, "a", kNow + kLease / 2), instance("a"), kNow));
  EXPECT_TRUE(take_lease(leased(PaymentState::kProcessing, "a", kNow + kLease / 2 - 1), instance("a"), kNow));
  EXPECT_FALSE(take_lease(leased(PaymentState::kProcessing, "b", kNow - 1), config(), kNow));
  EXPECT_TRUE(leased_elsewhere(*leased(PaymentState::kApproved, "b", kNow + 1).record, instance("a"), kNow));
  EXPECT_FALSE(leased_elsewhere(*leased(PaymentState::kApproved, "b", kNow).record, instance("a"), kNow));
  EXPECT_FALSE(leased_elsewhere(*leased(PaymentState::kApproved, "a", kNow + 1).record, instance("a"), kNow));
}

TEST(PaymentCoreTest, OperationsRunUnderThePaymentsLease) {
  auto settle = operation(ppp::OperationKind::kSettle, 100);
  auto fp = op_fingerprint(settle);
  OperationArrival arrival{settle, kMerchant, fp};
  std::optional<StoredOperation> none;
  // Another instance operates on the payment: this one waits its turn, even for another requestId.
  Decision busy = start_operation(leased(PaymentState::kApproved, "b", kNow + 1), arrival, none, instance("a"), kNow);
  EXPECT_EQ(busy.next, Next::kFollow);
  EXPECT_TRUE(busy.writes.empty());
  // A stored answer is given whoever holds the lease.
  StoredOperation done{"pay-1/req-1", OperationRecord{}, 3};
  done.record.fingerprint = fp;
  done.record.phase = OperationPhase::kDone;
  done.record.outcome = Outcome::kDone;
  done.record.response = "stored";
  Decision replay = start_operation(leased(PaymentState::kApproved, "b", kNow + 1), arrival, done, instance("a"), kNow);
  EXPECT_EQ(body(*replay.answer), "stored");
  // Free: the intent and the lease in one batch (the payment's compare-and-swap serialises
  // operations across instances as the actor does within one).
  Decision start = start_operation(payment_in(PaymentState::kApproved), arrival, none, instance("a"), kNow);
  EXPECT_EQ(start.next, Next::kOperate);
  const storage::Write* lease = write_to(start, Space::kPayments);
  ASSERT_NE(lease, nullptr);
  EXPECT_EQ(lease->expected_etag, kEtag);
  EXPECT_EQ(start.record->lease_owner, "a");
  // No payment: unknown, whatever the instance.
  EXPECT_EQ(start_operation(no_payment(), arrival, none, instance("a"), kNow).answer->outcome, Outcome::kFailed);
  // Its result ends the lease, refused or not.
  Payment held = leased(PaymentState::kApproved, "a", kNow + kLease);
  domain::OperationOutcome refused;
  refused.succeeded = false;
  refused.code = "refused";
  Decision after = operation_done(held, *start.operation, refused, config(), kNow);
  ASSERT_TRUE(after.record);
  EXPECT_TRUE(after.record->lease_owner.empty());
  EXPECT_EQ(after.record->state, PaymentState::kApproved);
}

// Instance "a" called the acquirer to settle; its outcome's commit lost a race because
// instance "b" took the operation over and recorded the same outcome first. "a" decides again
// on the payment and the operation as stored now: the outcome is the one "b" recorded, never
// applied a second time (the payment core's invariant check used to stop it: settled twice).
TEST(PaymentCoreTest, AnOutcomeAnotherInstanceRecordedFirstIsAnsweredNotAppliedAgain) {
  auto settle = operation(ppp::OperationKind::kSettle, 1000);
  Decision started = start_operation(payment_in(PaymentState::kApproved), OperationArrival{settle, kMerchant, op_fingerprint(settle)},
                                     std::optional<StoredOperation>(), instance("a"), kNow);
  ASSERT_TRUE(started.operation);
  domain::OperationOutcome succeeded;
  succeeded.succeeded = true;
  succeeded.id = "settle-1";
  succeeded.amount = 1000;
  Decision by_b = operation_done(payment_in(PaymentState::kApproved), *started.operation, succeeded, config(), kNow);
  ASSERT_TRUE(by_b.record);
  Payment as_stored{"pay-1", *by_b.record, kEtag + 1};
  StoredOperation recorded{started.operation->key, decode_operation(*write_to(by_b, Space::kOperations)->value).value(), 2};
  ASSERT_EQ(recorded.record.phase, OperationPhase::kDone);

  Decision again = operation_done_again(as_stored, *started.operation, recorded, succeeded, config(), kNow);
  EXPECT_TRUE(broken_invariant(as_stored, again).empty());
  EXPECT_FALSE(again.commits());
  ASSERT_TRUE(again.answer);
  EXPECT_EQ(body(*again.answer), body(*by_b.answer));
  EXPECT_EQ(again.answer->outcome, Outcome::kDone);
  // Applied again instead, the settlement would count twice.
  Decision twice = operation_done(as_stored, *started.operation, succeeded, config(), kNow);
  EXPECT_NE(broken_invariant(as_stored, twice), "");
  // Not recorded by anyone else yet (the race was on the audit trail's head): applied once.
  std::optional<StoredOperation> pending = StoredOperation{started.operation->key, started.operation->record, 1};
  Decision first = operation_done_again(payment_in(PaymentState::kApproved), *started.operation, pending, succeeded,
                                        config(), kNow);
  ASSERT_TRUE(first.record);
  EXPECT_EQ(first.record->amounts.settled, 1000);
  EXPECT_TRUE(broken_invariant(payment_in(PaymentState::kApproved), first).empty());
}

TEST(PaymentCoreTest, ACancelOfAnUnknownOutcomeAsksTheAcquirerFirst) {
  auto cancel = operation(ppp::OperationKind::kCancel, 0);
  Payment p = payment_in(PaymentState::kProcessing);
  // Not known, or never seen (an authorization sent before may still arrive): 500 in the
  // Cancel shape, nothing written, for the gateway to retry.
  for (const auto& status : {Result<std::optional<domain::Authorization>>(tl::unexpected(Error{ErrorCode::kUnavailable, "down"})),
                             Result<std::optional<domain::Authorization>>(std::nullopt)}) {
    Decision d = cancel_status(p, cancel, status, config(), kNow);
    EXPECT_FALSE(d.commits());
    EXPECT_EQ(d.answer->outcome, Outcome::kFailed);
    auto doc = JsonValue::parse(body(*d.answer));
    ASSERT_TRUE(doc);
    EXPECT_TRUE(doc->find("cancellationId")->is_null());
    EXPECT_EQ(doc->string_or("code"), "outcome-unknown");
  }
  // Known: recorded first (the cancel then runs again on it), no answer yet.
  Decision known = cancel_status(p, cancel, std::optional(outcome(domain::AuthorizationStatus::kApproved)), config(),
                                 kNow);
  EXPECT_EQ(state_name(known), "approved");
  EXPECT_FALSE(known.answer);
  EXPECT_NE(write_to(known, Space::kPayments), nullptr);
}

TEST(PaymentCoreTest, APaymentCancelledBeforeItWasAuthorizedAnswersDeniedFromThenOn) {
  auto cancel = operation(ppp::OperationKind::kCancel, 0);
  for (auto state : {PaymentState::kUndefined, PaymentState::kApproved}) {
    Payment p = payment_in(state);
    Decision started = start(p, cancel);
    domain::OperationOutcome voided{true, "void-9", 1000, "", "voided"};
    Decision done = operation_done(p, *started.operation, voided, config(), kNow);
    ASSERT_TRUE(done.record);
    EXPECT_EQ(done.record->state, PaymentState::kCancelled);
    EXPECT_EQ(done.record->cancellation_id, "void-9");
    auto create = JsonValue::parse(done.record->response);
    if (state == PaymentState::kUndefined) {
      ASSERT_TRUE(create);
      EXPECT_EQ(create->string_or("status"), "denied");  // the gateway stops asking
    } else {
      EXPECT_EQ(done.record->response, p.record->response);  // it was approved: that answer stays
    }
    // A later cancel under another requestId: the first void's id, nothing at the acquirer.
    Payment cancelled{"pay-1", done.record, kEtag + 1};
    Decision again = start(cancelled, operation(ppp::OperationKind::kCancel, 0, "req-2"));
    EXPECT_EQ(again.next, Next::kEnd);
    auto doc = JsonValue::parse(body(*again.answer));
    ASSERT_TRUE(doc);
    EXPECT_EQ(doc->string_or("cancellationId"), "void-9");
  }
}

}  // namespace
}  // namespace idempay::domain
