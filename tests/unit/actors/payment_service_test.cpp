// The payment engine without sockets: real CAF scheduler, in-memory store, in-process stub.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/inspection.hpp"
#include "idempay/acquirers/stub.hpp"
#include "idempay/actors/payment_service.hpp"
#include "idempay/answers/answers.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/domain/records.hpp"
#include "forwarding_store.hpp"

namespace idempay::actors {
namespace {

const answers::PppAnswers kAnswers;

// The service's options with the PPP library's encoder, which the engine stores answers with.
// The key id the audit entries name, as the connector's: an RFC 7638 thumbprint's 43 characters
// (RFC 8037's example key's), so that the write budget counts what the connector writes.
const domain::AuditSigner* instance_signer() {
  static domain::AuditSigner signer;
  static std::once_flag once;
  std::call_once(once, [] { signer.set("kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"); });
  return &signer;
}

ServiceOptions with_answers() {
  ServiceOptions options;
  options.answers = &kAnswers;
  options.signer = instance_signer();
  return options;
}

// An answer as it leaves the process: a refusal's bytes written as the gateway reads them.
Reply sent(Reply reply) {
  reply.body = answers::body_of(reply);
  return reply;
}

using namespace idempay::domain;

ppp::CreatePaymentRequest create_request(std::string id, std::string card = "4444333322221111",
                                         Cents value = 10000) {
  ppp::CreatePaymentRequest r;
  r.payment_id = std::move(id);
  r.transaction_id = "T";
  r.reference = "R";
  r.order_id = "O";
  r.payment_method = "Visa";
  r.currency = "BRL";
  r.callback_url = "https://gw.example/cb";
  r.value = value;
  r.card.number = std::move(card);
  r.card_summary = summarize_card(r.card, "", 0);
  return r;
}

ppp::OperationRequest op(ppp::OperationKind kind, std::string payment, std::string request, Cents value) {
  ppp::OperationRequest r;
  r.kind = kind;
  r.payment_id = std::move(payment);
  r.request_id = std::move(request);
  r.value = value;
  return r;
}

// Records callback attempts and answers each with the next scripted status (200 when none).
class RecordingTransport final : public CallbackTransport {
public:
  void send(CallbackAttempt attempt, std::function<void(CallbackResult)> done) override {
    CallbackResult r;
    {
      std::lock_guard lock(mutex_);
      attempts_.push_back(attempt);
      r.status = script_.empty() ? 200 : script_.front();
      if (!script_.empty()) {
        script_.erase(script_.begin());
      }
    }
    done(r);
  }
  void script(std::vector<unsigned> statuses) {
    std::lock_guard lock(mutex_);
    script_ = std::move(statuses);
  }
  std::vector<CallbackAttempt> attempts() {
    std::lock_guard lock(mutex_);
    return attempts_;
  }

private:
  std::mutex mutex_;
  std::vector<unsigned> script_;
  std::vector<CallbackAttempt> attempts_;
};

class PaymentServiceTest : public ::testing::Test {
protected:
  void SetUp() override {
    ServiceOptions options = with_answers();
    options.idle_timeout = std::chrono::milliseconds(50);
    options.callbacks.retry_base = std::chrono::milliseconds(5);
    service = std::make_unique<PaymentService>(*store, stub, transport, options);
    ASSERT_TRUE(service->start());
  }
  void TearDown() override {
    service->shutdown();
    service.reset();
  }

  Reply create(ppp::CreatePaymentRequest r) {
    std::promise<Reply> p;
    service->create_payment(std::move(r), "shop", [&p](Reply reply) { p.set_value(sent(std::move(reply))); });
    return p.get_future().get();
  }

  Reply operate(ppp::OperationRequest r) {
    std::promise<Reply> p;
    service->operate(std::move(r), "shop", [&p](Reply reply) { p.set_value(sent(std::move(reply))); });
    return p.get_future().get();
  }

  int64_t ledger(const char* section, const std::string& key, const char* field) {
    auto doc = JsonValue::parse(stub.ledger_json()).value();
    const JsonValue* entry = doc.find(section)->find(key);
    return entry == nullptr ? 0 : entry->int_or(field);
  }

  std::unique_ptr<storage::Store> store = storage::make_memory_store(keyspace_names());
  acquirer::StubAcquirer stub{acquirer::StubOptions{std::chrono::milliseconds(2), std::chrono::milliseconds(2000)}};
  RecordingTransport transport;
  std::unique_ptr<PaymentService> service;
};

TEST_F(PaymentServiceTest, OverlappingCreatesShareOneAuthorization) {
  constexpr int kRequests = 64;
  std::vector<std::promise<Reply>> replies(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    service->create_payment(create_request("hot"), "shop", [&replies, i](Reply r) { replies[i].set_value(sent(std::move(r))); });
  }
  std::string first = replies[0].get_future().get().body;
  EXPECT_NE(first.find("\"status\":\"approved\""), std::string::npos) << first;
  for (int i = 1; i < kRequests; ++i) {
    EXPECT_EQ(replies[i].get_future().get().body, first);
  }
  EXPECT_EQ(ledger("authorizations", "hot", "calls"), 1);
  EXPECT_EQ(ledger("authorizations", "hot", "charges"), 1);
}

TEST_F(PaymentServiceTest, ReplayAfterPassivationIsByteIdentical) {
  Reply first = create(create_request("p1"));
  ASSERT_EQ(first.outcome, Outcome::kDone);
  // Let the actor retire (idle timeout 50 ms), then ask again: state comes from the store.
  for (int i = 0; i < 100 && service->live_actors() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(service->live_actors(), 0u);
  Reply again = create(create_request("p1"));
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(ledger("authorizations", "p1", "calls"), 1);
}

TEST_F(PaymentServiceTest, DifferentPaymentUnderTheSameIdIsRefused) {
  ASSERT_EQ(create(create_request("p2")).outcome, Outcome::kDone);
  Reply conflict = create(create_request("p2", "4444333322221111", 20000));
  EXPECT_EQ(conflict.outcome, Outcome::kRefused);
  EXPECT_NE(conflict.body.find("payment-conflict"), std::string::npos);
  EXPECT_EQ(ledger("authorizations", "p2", "calls"), 1);
}

TEST_F(PaymentServiceTest, SettleAndRefundInPartsWithinTheTotals) {
  ASSERT_EQ(create(create_request("p3")).outcome, Outcome::kDone);
  EXPECT_EQ(operate(op(ppp::OperationKind::kSettle, "p3", "s1", 6000)).outcome, Outcome::kDone);
  EXPECT_EQ(operate(op(ppp::OperationKind::kSettle, "p3", "s2", 4000)).outcome, Outcome::kDone);
  EXPECT_EQ(operate(op(ppp::OperationKind::kSettle, "p3", "s3", 1)).outcome, Outcome::kFailed);
  EXPECT_EQ(operate(op(ppp::OperationKind::kRefund, "p3", "r1", 3000)).outcome, Outcome::kDone);
  EXPECT_EQ(operate(op(ppp::OperationKind::kRefund, "p3", "r2", 7000)).outcome, Outcome::kDone);
  Reply over = operate(op(ppp::OperationKind::kRefund, "p3", "r3", 1));
  EXPECT_EQ(over.outcome, Outcome::kFailed);
  EXPECT_EQ(ledger("refunds", "p3/r3", "calls"), 0);  // refused before the acquirer
  EXPECT_EQ(operate(op(ppp::OperationKind::kCancel, "p3", "c1", 0)).outcome, Outcome::kFailed);
}

TEST_F(PaymentServiceTest, OperationReplayIsByteIdenticalAndActsOnce) {
  ASSERT_EQ(create(create_request("p4")).outcome, Outcome::kDone);
  constexpr int kRequests = 32;
  std::vector<std::promise<Reply>> replies(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    service->operate(op(ppp::OperationKind::kSettle, "p4", "s-same", 5000), "shop",
                     [&replies, i](Reply r) { replies[i].set_value(sent(std::move(r))); });
  }
  Reply first = replies[0].get_future().get();
  EXPECT_EQ(first.outcome, Outcome::kDone);
  for (int i = 1; i < kRequests; ++i) {
    EXPECT_EQ(replies[i].get_future().get().body, first.body);
  }
  EXPECT_EQ(ledger("captures", "p4/s-same", "calls"), 1);
  Reply different = operate(op(ppp::OperationKind::kSettle, "p4", "s-same", 4000));
  EXPECT_EQ(different.outcome, Outcome::kFailed);
  EXPECT_NE(different.body.find("request-conflict"), std::string::npos);
}

TEST_F(PaymentServiceTest, DeniedAndCancelledPaymentsRefuseSettlement) {
  Reply denied = create(create_request("p5", "4444333322221112"));
  EXPECT_NE(denied.body.find("\"status\":\"denied\""), std::string::npos);
  EXPECT_EQ(operate(op(ppp::OperationKind::kSettle, "p5", "s", 100)).outcome, Outcome::kFailed);
  ASSERT_EQ(create(create_request("p6")).outcome, Outcome::kDone);
  EXPECT_EQ(operate(op(ppp::OperationKind::kCancel, "p6", "c", 0)).outcome, Outcome::kDone);
  EXPECT_EQ(operate(op(ppp::OperationKind::kSettle, "p6", "s6", 100)).outcome, Outcome::kFailed);
  EXPECT_EQ(operate(op(ppp::OperationKind::kSettle, "unknown", "s7", 100)).outcome, Outcome::kFailed);
}

TEST_F(PaymentServiceTest, PendingCardAnswersUndefined) {
  Reply pending = create(create_request("p7", "4222222222222224"));
  EXPECT_EQ(pending.outcome, Outcome::kDone);
  EXPECT_NE(pending.body.find("\"status\":\"undefined\""), std::string::npos);
  EXPECT_EQ(create(create_request("p7", "4222222222222224")).body, pending.body);
}

// The answer deadline is kept by the directory's sweep, not a timer per create: a Create
// Payment whose acquirer is slower than the deadline hears `undefined` about the deadline
// later, and the acquirer's answer, when it comes, is the payment's outcome (one charge).
TEST(PaymentServiceDeadlineTest, ASlowAcquirerIsAnsweredUndefinedAtTheDeadlineAndItsOutcomeKept) {
  auto store = storage::make_memory_store(keyspace_names());
  acquirer::StubAcquirer stub{acquirer::StubOptions{std::chrono::milliseconds(600), std::chrono::milliseconds(2000)}};
  RecordingTransport transport;
  ServiceOptions options = with_answers();
  options.idle_timeout = std::chrono::milliseconds(20);
  options.answer_deadline = std::chrono::milliseconds(100);
  PaymentService service(*store, stub, transport, options);
  ASSERT_TRUE(service.start());
  auto create = [&service](const std::string& id) {
    std::promise<Reply> p;
    service.create_payment(create_request(id), "shop", [&p](Reply r) { p.set_value(sent(std::move(r))); });
    return p.get_future().get();
  };

  auto started = std::chrono::steady_clock::now();
  Reply first = create("slow-1");
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_NE(first.body.find("\"status\":\"undefined\""), std::string::npos) << first.body;
  EXPECT_GE(waited, std::chrono::milliseconds(100));
  EXPECT_LT(waited, std::chrono::milliseconds(450));  // the acquirer answers at 600 ms

  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // the acquirer has answered
  Reply later = create("slow-1");
  EXPECT_NE(later.body.find("\"status\":\"approved\""), std::string::npos) << later.body;
  auto ledger = JsonValue::parse(stub.ledger_json()).value();
  EXPECT_EQ(ledger.find("authorizations")->find("slow-1")->int_or("calls"), 1);
  EXPECT_EQ(ledger.find("authorizations")->find("slow-1")->int_or("charges"), 1);
  service.shutdown();
}

// Passivation race: with a 1 ms idle timeout (retirement offered after 1-2 ms without a
// message) actors retire again and again while requests for the same payments keep
// arriving. If two actors ever served one payment, their etag-checked
// writes would collide (503) or the settled totals would disagree.
// Forwards to a memory store and records, in commit order, the head every batch leaves on an
// audit chain (its entries' last sequence number).
class HeadWatchingStore final : public testing::ForwardingStore {
public:
  std::vector<int64_t> heads() {
    std::lock_guard lock(mutex_);
    return heads_;
  }

private:
  void watch(const storage::Batch& batch, bool) override {
    std::lock_guard lock(mutex_);
    for (const auto& w : batch) {
      if (w.keyspace == Space::kAudit && w.value && w.key.find("/~") == std::string::npos) {
        heads_.push_back(static_cast<int64_t>(head_of(*w.value).value().seq));
      }
    }
  }
  std::mutex mutex_;
  std::vector<int64_t> heads_;
};

// A running service over `store`, with a stub that answers at once.
struct Running {
  explicit Running(storage::Store& store) : service(store, stub, transport, with_answers()) {
    EXPECT_TRUE(service.start());
  }
  Reply create(const std::string& id) {
    std::promise<Reply> p;
    service.create_payment(create_request(id), "shop", [&p](Reply r) { p.set_value(sent(std::move(r))); });
    return p.get_future().get();
  }
  acquirer::StubAcquirer stub{acquirer::StubOptions{std::chrono::milliseconds(0), std::chrono::milliseconds(2000)}};
  RecordingTransport transport;
  PaymentService service;
};

// Duplicates' audit entries are buffered by the actor until its mailbox is drained. A
// mutation handled meanwhile must not overtake them in the store: the chain head would move
// back, and after a crash there the next entries would overwrite stored ones. A shutdown
// right after must store every buffered entry.
TEST(PaymentServiceAuditTest, BufferedAuditEntriesKeepTheChainInOrder) {
  HeadWatchingStore store;
  Running running(store);
  auto& service = running.service;
  ASSERT_EQ(running.create("p6").outcome, Outcome::kDone);

  constexpr int kDuplicates = 40;
  std::vector<std::promise<Reply>> replies(kDuplicates + 2);
  auto reply_to = [&replies](int i) { return [&replies, i](Reply r) { replies[i].set_value(sent(std::move(r))); }; };
  for (int i = 0; i < kDuplicates; ++i) {
    service.create_payment(create_request("p6"), "shop", reply_to(i));
  }
  // Queued behind the duplicates: an operation that commits and answers at once (refused).
  service.operate(op(ppp::OperationKind::kRefund, "p6", "r-p6", 1), "shop", reply_to(kDuplicates));
  service.operate(op(ppp::OperationKind::kSettle, "p6", "s-p6", 10000), "shop", reply_to(kDuplicates + 1));
  for (int i = 0; i < kDuplicates; ++i) {
    ASSERT_EQ(replies[i].get_future().get().outcome, Outcome::kDone);
  }
  EXPECT_EQ(replies[kDuplicates].get_future().get().outcome, Outcome::kFailed);
  EXPECT_EQ(replies[kDuplicates + 1].get_future().get().outcome, Outcome::kDone);
  service.shutdown();

  auto heads = store.heads();
  EXPECT_GE(heads.size(), 3u);
  for (size_t i = 1; i < heads.size(); ++i) {
    EXPECT_GT(heads[i], heads[i - 1]) << "the chain head moved back at write " << i;
  }
  auto verified = verify_store(store, std::string("p6"));
  ASSERT_TRUE(verified);
  for (const auto& problem : *verified) {
    ADD_FAILURE() << problem.problem;
  }
  auto report = inspect_payment(store, "p6");
  ASSERT_TRUE(report);
  uint64_t duplicates = 0;
  for (const auto& line : report->audit) {
    duplicates += line.kind == "event_duplicate_reused";
  }
  for (const auto& counted : report->counted) {
    duplicates += counted.kind == "event_duplicate_reused" ? counted.count : 0;
  }
  EXPECT_EQ(duplicates, static_cast<uint64_t>(kDuplicates));
}

TEST(PaymentServicePassivationTest, RetiringActorsNeverLoseOrDuplicateWork) {
  auto store = storage::make_memory_store(keyspace_names());
  acquirer::StubAcquirer stub;
  ServiceOptions options = with_answers();
  options.idle_timeout = std::chrono::milliseconds(1);
  RecordingTransport transport;
  PaymentService service(*store, stub, transport, options);
  ASSERT_TRUE(service.start());
  constexpr int kPayments = 5;
  constexpr int kSettlesEach = 400;
  for (int p = 0; p < kPayments; ++p) {
    std::promise<Reply> done;
    service.create_payment(create_request("race-" + std::to_string(p), "4444333322221111", kSettlesEach), "shop",
                           [&done](Reply r) { done.set_value(sent(std::move(r))); });
    ASSERT_EQ(done.get_future().get().outcome, Outcome::kDone);
  }
  std::vector<std::promise<Reply>> replies(kPayments * kSettlesEach);
  int pauses_with_retired_actors = 0;
  for (int i = 0; i < kSettlesEach; ++i) {
    for (int p = 0; p < kPayments; ++p) {
      if (p == 0 && i % 8 == 0) {
        // Let actors go idle, for varying times so that routing meets retiring at every phase.
        std::this_thread::sleep_for(std::chrono::microseconds(3000 + 500 * (i % 9)));
        pauses_with_retired_actors += service.live_actors() < kPayments ? 1 : 0;
      }
      service.operate(op(ppp::OperationKind::kSettle, "race-" + std::to_string(p),
                         "race-" + std::to_string(p) + "-" + std::to_string(i), 1), "shop",
                      [&replies, i, p](Reply r) { replies[i * kPayments + p].set_value(sent(std::move(r))); });
    }
  }
  for (auto& r : replies) {
    EXPECT_EQ(r.get_future().get().outcome, Outcome::kDone);
  }
  EXPECT_GT(pauses_with_retired_actors, 0);  // the race was really run
  // Every cent was settled exactly once: one more settlement of 1 must be refused.
  for (int p = 0; p < kPayments; ++p) {
    std::promise<Reply> extra;
    service.operate(op(ppp::OperationKind::kSettle, "race-" + std::to_string(p), "extra-" + std::to_string(p), 1), "shop",
                    [&extra](Reply r) { extra.set_value(sent(std::move(r))); });
    EXPECT_EQ(extra.get_future().get().outcome, Outcome::kFailed);
  }
  service.shutdown();
}

// Forwards to a memory store and counts the reads made outside its reader threads: point
// lookups that may wait for the disk (but of the keys start() itself reads before any actor
// runs), and scans of the outbox. Every other memory-only lookup answers "needs the disk", so
// that both paths are taken. A lookup whose block is not
// cached waits for the disk, and the CAF worker that made it would hold every other payment.
class ReaderCheckingStore final : public testing::ForwardingStore {
public:
  Result<std::optional<storage::Versioned>> get(storage::Keyspace ks, std::string_view key) override {
    note(ks != Space::kMeta);
    return ForwardingStore::get(ks, key);
  }
  std::optional<Result<std::optional<storage::Versioned>>> get_if_in_memory(storage::Keyspace ks,
                                                                            std::string_view key) override {
    if (++memory_only_ % 2 == 0) {
      return std::nullopt;
    }
    return ForwardingStore::get_if_in_memory(ks, key);
  }
  void read_async(std::function<void(storage::Store&)> job) override {
    ForwardingStore::read_async([job](storage::Store& self) {
      in_job_ = true;
      job(self);
      in_job_ = false;
    });
  }
  Result<std::vector<std::pair<std::string, storage::Versioned>>> scan(storage::Keyspace ks, std::string_view prefix,
                                                                        size_t limit) override {
    note(ks == Space::kOutbox);
    return ForwardingStore::scan(ks, prefix, limit);
  }
  void started() { started_ = true; }
  int outside() const { return outside_; }
  int inside() const { return inside_; }

private:
  void note(bool checked) {
    if (started_ && checked) {
      ++(in_job_ ? inside_ : outside_);
    }
  }
  std::atomic<bool> started_{false};
  std::atomic<int> outside_{0};
  std::atomic<int> inside_{0};
  std::atomic<int> memory_only_{0};
  static thread_local bool in_job_;
};
thread_local bool ReaderCheckingStore::in_job_ = false;

TEST(PaymentServiceReadsTest, ActorsReadOnlyThroughTheStoreReaderThreads) {
  ReaderCheckingStore store;
  acquirer::StubAcquirer stub{acquirer::StubOptions{std::chrono::milliseconds(0), std::chrono::milliseconds(2000)}};
  RecordingTransport transport;
  ServiceOptions options = with_answers();
  options.idle_timeout = std::chrono::milliseconds(5);  // actors retire and reload in between
  PaymentService service(store, stub, transport, options);
  store.started();
  ASSERT_TRUE(service.start());
  auto call = [](auto start) {
    std::promise<Reply> p;
    start([&p](Reply r) { p.set_value(sent(std::move(r))); });
    return p.get_future().get();
  };
  for (int i = 0; i < 20; ++i) {
    std::string id = "r" + std::to_string(i);
    ASSERT_EQ(call([&](ReplyFn f) { service.create_payment(create_request(id), "shop", f); }).outcome, Outcome::kDone);
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 2 == 0 ? 20 : 0));
    ASSERT_EQ(call([&](ReplyFn f) { service.create_payment(create_request(id), "shop", f); }).outcome, Outcome::kDone);
    ASSERT_EQ(call([&](ReplyFn f) { service.operate(op(ppp::OperationKind::kSettle, id, "s-" + id, 10000), "shop", f); })
                  .outcome,
              Outcome::kDone);
    AcquirerEvent event;
    event.event_id = "evt-" + id;
    event.body_hash = "h";
    event.payment_id = id;
    event.authorization.status = domain::AuthorizationStatus::kApproved;
    event.revision = 1;
    EXPECT_EQ(call([&](ReplyFn f) { service.ingest_event(event, f); }).outcome, Outcome::kDone);
  }
  service.shutdown();
  EXPECT_GT(store.inside(), 0);
  EXPECT_EQ(store.outside(), 0) << "reads made on an actor's worker";
}

// Every read needs "the disk", and reads wait at a gate until the test opens it.
class GatedStore final : public testing::ForwardingStore {
public:
  std::optional<Result<std::optional<storage::Versioned>>> get_if_in_memory(storage::Keyspace,
                                                                            std::string_view) override {
    return std::nullopt;
  }
  void read_async(std::function<void(storage::Store&)> job) override {
    ForwardingStore::read_async([this, job](storage::Store& self) {
      gate_.wait();
      job(self);
    });
  }
  void open() { opened_.set_value(); }

private:
  std::promise<void> opened_;
  std::shared_future<void> gate_ = opened_.get_future().share();
};

// A payment actor waiting for its record is not idle: offered retirement again and again
// while the read is held up, it keeps the commands that arrived meanwhile and answers them.
TEST(PaymentServiceReadsTest, AnActorWaitingForItsRecordNeverRetires) {
  GatedStore store;
  acquirer::StubAcquirer stub{acquirer::StubOptions{std::chrono::milliseconds(0), std::chrono::milliseconds(2000)}};
  RecordingTransport transport;
  ServiceOptions options = with_answers();
  options.idle_timeout = std::chrono::milliseconds(1);
  PaymentService service(store, stub, transport, options);
  ASSERT_TRUE(service.start());
  std::promise<Reply> first, second;
  service.create_payment(create_request("gated"), "shop", [&first](Reply r) { first.set_value(sent(std::move(r))); });
  service.create_payment(create_request("gated"), "shop", [&second](Reply r) { second.set_value(sent(std::move(r))); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // dozens of idle offers
  store.open();
  Reply a = first.get_future().get();
  Reply b = second.get_future().get();
  EXPECT_EQ(a.outcome, Outcome::kDone);
  EXPECT_EQ(b.outcome, Outcome::kDone);
  EXPECT_EQ(a.body, b.body);
  service.shutdown();
}

// Lets commits through until cut off, then fails each one: the store lost right after a
// given commit, as a process killed there would leave it.
class CutOffStore final : public testing::ForwardingStore {
public:
  void commit(storage::Batch batch, storage::CommitCallback done) override {
    if (cut_) {
      return done(make_error(ErrorCode::kUnavailable, "cut off"));
    }
    bool intent = std::any_of(batch.begin(), batch.end(), [](const storage::Write& w) {
      return w.keyspace == Space::kPayments && w.expected_etag == std::optional<uint64_t>(0);
    });
    ForwardingStore::commit(std::move(batch), std::move(done));
    cut_ = cut_after_intent_ && intent;
  }
  void cut_after_intent(bool on) {
    cut_after_intent_ = on;
    cut_ = false;
  }

private:
  std::atomic<bool> cut_{false};
  std::atomic<bool> cut_after_intent_{false};
};

// A payment whose intent is stored and whose outcome is not names itself to start-up recovery
// only through its queue entry for the log, until the log's sequencer carries it over to the
// recovery index (no sequencer runs here). Recovery reads the queue too: the payment is
// reconciled at start, with no request from the gateway, and charged once.
TEST(PaymentServiceRecoveryTest, APaymentInFlightNamedOnlyByTheLogsQueueIsRecoveredAtStart) {
  CutOffStore store;
  acquirer::StubAcquirer stub{acquirer::StubOptions{std::chrono::milliseconds(0), std::chrono::milliseconds(2000)}};
  RecordingTransport transport;
  {
    store.cut_after_intent(true);
    PaymentService lost(store, stub, transport, with_answers());
    ASSERT_TRUE(lost.start());
    std::promise<Reply> p;
    lost.create_payment(create_request("queued-1"), "shop", [&p](Reply r) { p.set_value(sent(std::move(r))); });
    EXPECT_NE(p.get_future().get().outcome, Outcome::kDone);
    lost.shutdown();
  }
  auto stored = [&store] { return decode_payment(store.get(Space::kPayments, "queued-1").value()->value).value(); };
  ASSERT_EQ(stored().state, PaymentState::kProcessing);
  ASSERT_FALSE(store.get(Space::kRecovery, recovery_key("queued-1")).value()) << "the key rides in the queue";
  ASSERT_EQ(recovery_letters_in_queue(store).value().count("queued-1"), 1u);
  // audit verify reads the queue's letter as the index's own key: nothing is missing.
  auto verified = verify_store(store, std::string("queued-1"));
  ASSERT_TRUE(verified);
  for (const auto& problem : *verified) {
    ADD_FAILURE() << problem.problem;
  }

  store.cut_after_intent(false);
  PaymentService restarted(store, stub, transport, with_answers());
  ASSERT_TRUE(restarted.start());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (is_unresolved(stored().state) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  restarted.shutdown();
  EXPECT_EQ(stored().state, PaymentState::kApproved);
  auto ledger = JsonValue::parse(stub.ledger_json()).value();
  const JsonValue* charged = ledger.find("authorizations");
  ASSERT_NE(charged, nullptr);
  int charges = 0;
  for (const auto& [key, entry] : charged->members()) {
    charges += key.find("queued-1") != std::string::npos ? static_cast<int>(entry.int_or("charges")) : 0;
  }
  EXPECT_EQ(charges, 1);
}

// Counts what reaches the store: batches that wait for the disk, batches that ride along, and
// the keys and bytes (key and value) they write.
class WriteCountingStore final : public testing::ForwardingStore {
public:
  struct Totals {
    int synced = 0;
    int riding_along = 0;
    int keys = 0;
    size_t bytes = 0;
  };
  Totals totals() {
    std::lock_guard lock(mutex_);
    return totals_;
  }

private:
  void watch(const storage::Batch& batch, bool riding_along) override {
    std::lock_guard lock(mutex_);
    ++(riding_along ? totals_.riding_along : totals_.synced);
    for (const auto& w : batch) {
      ++totals_.keys;
      totals_.bytes += w.key.size() + (w.value ? w.value->size() : 0);
    }
  }
  std::mutex mutex_;
  Totals totals_;
};

// What one approved card payment costs the store, from the Create Payment to its answer. The
// README's write budget per create: it may shrink, never grow unnoticed.
TEST(PaymentServiceWritesTest, ACreatePaymentWritesTwoSyncedBatchesWithinItsBudget) {
  WriteCountingStore store;
  Running running(store);
  auto before = store.totals();  // the service's own keys (fingerprint and POS link keys)
  ASSERT_EQ(running.create("w1").outcome, Outcome::kDone);
  running.service.shutdown();
  auto after = store.totals();
  int synced = after.synced - before.synced;
  int keys = after.keys - before.keys;
  size_t bytes = after.bytes - before.bytes;
  std::printf("create: %d synced batches, %d riding along, %d keys, %zu bytes\n", synced,
              after.riding_along - before.riding_along, keys, bytes);
  EXPECT_EQ(synced, 2);  // the intent before the acquirer call, the outcome after it
  // Each synced batch: the payment's record, its audit entries (one key), its head queued for
  // the transparency log (carrying the payment in and out of the recovery index). 11 keys in
  // format 1: an entry per key, a copy of the chain's head per batch, the recovery key written
  // and removed.
  EXPECT_LE(keys, 6);
  // 3,129 before payment records left out their defaults; 2,448 before the log; 2,650 before each
  // audit entry named its signing key; 2,782 in format 1; 2,588 before the record kept its
  // trace (a traceparent, 72 bytes in each of the two record writes)
  EXPECT_LE(bytes, 2740u);
}

// A store that refuses every commit but the service's first two (its fingerprint and POS link
// keys): nothing may be reported as done. With `payment_reads_fail`, reading a payment fails too.
class FailingStore final : public storage::Store {
public:
  explicit FailingStore(bool payment_reads_fail = false) : payment_reads_fail_(payment_reads_fail) {}
  Result<std::optional<storage::Versioned>> get(storage::Keyspace space, std::string_view) override {
    if (payment_reads_fail_ && space == Space::kPayments) {
      return make_error(ErrorCode::kUnavailable, "disk unreadable");
    }
    return std::optional<storage::Versioned>();
  }
  std::optional<Result<std::optional<storage::Versioned>>> get_if_in_memory(storage::Keyspace ks,
                                                                            std::string_view key) override {
    return get(ks, key);
  }
  void read_async(std::function<void(storage::Store&)> job) override { job(*this); }
  void commit(storage::Batch, storage::CommitCallback done) override {
    if (++commits_ <= 2) {  // let the fingerprint and POS link keys through
      return done(std::vector<uint64_t>{1});
    }
    done(make_error(ErrorCode::kUnavailable, "disk on fire"));
  }
  Result<std::vector<std::pair<std::string, storage::Versioned>>> scan(storage::Keyspace, std::string_view,
                                                                         size_t) override {
    return std::vector<std::pair<std::string, storage::Versioned>>();
  }
  Result<std::vector<std::pair<std::string, storage::Versioned>>> scan_after(storage::Keyspace, std::string_view,
                                                                               size_t) override {
    return std::vector<std::pair<std::string, storage::Versioned>>();
  }
  Result<std::optional<storage::Entry>> last_in(storage::Keyspace, std::string_view, std::string_view) override {
    return std::optional<storage::Entry>();
  }
  std::optional<Result<std::optional<storage::Entry>>> last_in_if_in_memory(storage::Keyspace ks,
                                                                           std::string_view from,
                                                                           std::string_view below) override {
    return last_in(ks, from, below);
  }

private:
  const bool payment_reads_fail_;
  std::atomic<int> commits_{0};
};

TEST(PaymentServiceStorageFailureTest, StorageFailureIsARetryableErrorAndNoCharge) {
  FailingStore store;
  Running running(store);
  Reply r = running.create("f1");
  EXPECT_EQ(r.outcome, Outcome::kRetry);  // 503: the gateway retries
  EXPECT_NE(r.body.find("\"status\":\"error\""), std::string::npos);
  EXPECT_EQ(running.stub.ledger_json().find("f1"), std::string::npos);  // acquirer never called
  running.service.shutdown();
}

// A create waits for its payment's load and the load fails: the caller hears the store's
// retryable error ("nothing was done"), not the "engine stopped" that a command dropped
// unanswered gets.
TEST(PaymentServiceStorageFailureTest, AFailedLoadAnswersWithTheStoresRetryableError) {
  FailingStore store(true);
  Running running(store);
  Reply r = running.create("u1");
  EXPECT_EQ(r.outcome, Outcome::kRetry);
  EXPECT_NE(r.body.find("nothing was done"), std::string::npos) << r.body;
  EXPECT_EQ(running.stub.ledger_json().find("u1"), std::string::npos);
  running.service.shutdown();
}

// A payment and a settlement as the version before owners and scoped requestIds stored them:
// no owner, a version 1 fingerprint, the operation under its bare requestId. They keep
// replaying byte for byte for the legacy owner, and stay invisible to any other merchant.
TEST(PaymentServiceLegacyTest, RecordsStoredBeforeOwnersKeepReplaying) {
  auto store = storage::make_memory_store(keyspace_names());
  const std::string key(32, 'k');
  auto request = create_request("legacy-1");
  PaymentRecord payment;
  payment.state = PaymentState::kSettled;
  payment.amounts = Amounts{10000, 4000, 0};
  payment.currency = "BRL";
  payment.payment_method = "Visa";
  payment.fingerprint = crypto::to_hex(crypto::hmac_sha256(
      key, "payment/v1|10000|BRL|Visa|O|R|" + request.card_summary.bin + "|" + request.card_summary.last4));
  payment.tid = "T-legacy";
  payment.response = R"({"paymentId":"legacy-1","status":"approved","tid":"T-legacy"})";
  auto settle = op(ppp::OperationKind::kSettle, "legacy-1", "s-old", 4000);
  OperationRecord operation;
  operation.kind = ppp::OperationKind::kSettle;
  operation.phase = OperationPhase::kDone;
  operation.payment_id = "legacy-1";
  operation.fingerprint = ppp::operation_fingerprint(key, settle);
  operation.amount = 4000;
  operation.outcome = Outcome::kDone;
  operation.response = R"({"paymentId":"legacy-1","settleId":"old","value":40.00,"requestId":"s-old"})";
  ASSERT_TRUE(store->commit_and_wait({{Space::kMeta, "fingerprint-key", key, 0},
                                      {Space::kPayments, "legacy-1", encode(payment), 0},
                                      {Space::kOperations, "s-old", encode(operation), 0}}));
  acquirer::StubAcquirer stub;
  RecordingTransport transport;
  ServiceOptions options = with_answers();
  options.legacy_owner = "shop";
  PaymentService service(*store, stub, transport, options);
  ASSERT_TRUE(service.start());
  auto ask = [](auto call) {
    std::promise<Reply> p;
    call([&p](Reply r) { p.set_value(sent(std::move(r))); });
    return p.get_future().get();
  };
  Reply replayed = ask([&](ReplyFn f) { service.create_payment(request, "shop", f); });
  EXPECT_EQ(replayed.outcome, Outcome::kDone);
  EXPECT_EQ(replayed.body, payment.response);
  Reply settled = ask([&](ReplyFn f) { service.operate(settle, "shop", f); });
  EXPECT_EQ(settled.outcome, Outcome::kDone);
  EXPECT_EQ(settled.body, operation.response);
  EXPECT_EQ(ask([&](ReplyFn f) { service.operate(settle, "other", f); }).outcome, Outcome::kFailed);
  EXPECT_EQ(ask([&](ReplyFn f) { service.create_payment(request, "other", f); }).outcome, Outcome::kRefused);
  EXPECT_EQ(stub.ledger_json().find("legacy-1"), std::string::npos) << "replays never reach the acquirer";
  service.shutdown();
}

}  // namespace
}  // namespace idempay::actors
