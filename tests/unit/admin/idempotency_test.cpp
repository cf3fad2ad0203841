// The Idempotency-Key guard against a store that answers, and one that fails.
#include "idempay/admin/idempotency.hpp"
#include "forwarding_store.hpp"

#include <future>
#include <thread>

#include <gtest/gtest.h>

namespace idempay::admin {
namespace {

// A store whose reads or commits fail on demand (a full disk, a lost database).
class FailingStore final : public testing::ForwardingStore {
public:
  bool fail_reads = false;
  bool fail_commits = false;

  Result<std::optional<storage::Versioned>> get(storage::Keyspace ks, std::string_view key) override {
    if (fail_reads) {
      return make_error(ErrorCode::kUnavailable, "disk gone");
    }
    return ForwardingStore::get(ks, key);
  }
  void commit(storage::Batch batch, storage::CommitCallback done) override {
    if (fail_commits) {
      return done(make_error(ErrorCode::kUnavailable, "disk full"));
    }
    ForwardingStore::commit(std::move(batch), std::move(done));
  }
};

constexpr storage::Keyspace kKeys = domain::Space::kIdempotency;

struct Answer {
  http::Response response;
  bool replayed() const {
    for (const auto& h : response.headers) {
      if (h.name == "idempotent-replayed") {
        return true;
      }
    }
    return false;
  }
};

class GuardTest : public ::testing::Test {
protected:
  FailingStore store;
  int runs = 0;

  Answer call(IdempotencyGuard& guard, const std::string& key, const std::string& fingerprint,
              unsigned status = 200, std::string body = R"({"refunded":true})") {
    std::promise<http::Response> answered;
    http::Responder respond([&](http::Response r) { answered.set_value(std::move(r)); },
                            std::make_shared<const http::Response>(503, "dropped"));
    guard.run(key, fingerprint,
              [&, status, body](auto done) {
                ++runs;
                done(http::Response(status, body));
              },
              respond);
    return Answer{answered.get_future().get()};
  }
};

TEST_F(GuardTest, TheFirstAnswerIsReplayedByteForByteAndABodyChangeIsRefused) {
  IdempotencyGuard guard(store, {std::chrono::hours(24), std::chrono::seconds(60), kKeys});
  auto first = call(guard, "admin/k1", "fp-a");
  EXPECT_EQ(first.response.status, 200u);
  EXPECT_FALSE(first.replayed());
  auto again = call(guard, "admin/k1", "fp-a", 200, "something else");
  EXPECT_EQ(again.response.body, first.response.body);
  EXPECT_TRUE(again.replayed());
  EXPECT_EQ(call(guard, "admin/k1", "fp-b").response.status, 422u);
  EXPECT_EQ(runs, 1);
}

TEST_F(GuardTest, ARetryableFailureDoesNotKeepTheKeyButARefusalDoes) {
  IdempotencyGuard guard(store, {std::chrono::hours(24), std::chrono::seconds(60), kKeys});
  EXPECT_EQ(call(guard, "admin/k2", "fp", 503).response.status, 503u);
  EXPECT_EQ(call(guard, "admin/k2", "fp", 500).response.status, 500u);
  EXPECT_EQ(call(guard, "admin/k2", "fp", 200).response.status, 200u);  // the retry ran
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(call(guard, "admin/k3", "fp", 400).response.status, 400u);
  EXPECT_EQ(call(guard, "admin/k3", "fp", 200).response.status, 400u);  // a refusal is an answer
  EXPECT_EQ(call(guard, "admin/k4", "fp", 501).response.status, 501u);  // "do it by hand" too
  EXPECT_EQ(call(guard, "admin/k4", "fp", 200).response.status, 501u);
  EXPECT_EQ(runs, 5);
}

TEST_F(GuardTest, AStoreThatCannotBeReadOrWrittenLetsNothingThrough) {
  IdempotencyGuard guard(store, {std::chrono::hours(24), std::chrono::seconds(60), kKeys});
  store.fail_reads = true;
  EXPECT_EQ(call(guard, "admin/k5", "fp").response.status, 503u);
  store.fail_reads = false;
  store.fail_commits = true;
  EXPECT_EQ(call(guard, "admin/k5", "fp").response.status, 503u);
  EXPECT_EQ(runs, 0);
  store.fail_commits = false;
  EXPECT_EQ(call(guard, "admin/k5", "fp").response.status, 200u);
  EXPECT_EQ(runs, 1);
}

TEST_F(GuardTest, ExpiredKeysAreFreeAgainAndCollected) {
  IdempotencyGuard guard(store, {std::chrono::milliseconds(50), std::chrono::seconds(60), kKeys});
  call(guard, "admin/k6", "fp-a");
  call(guard, "admin/k7", "fp-a");
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  auto fresh = call(guard, "admin/k6", "fp-b");  // another body: no 422 once expired
  EXPECT_EQ(fresh.response.status, 200u);
  EXPECT_FALSE(fresh.replayed());
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  // Guarded requests collect by themselves now and then (here at once: the retention is short);
  // whatever they left, this collects.
  ASSERT_TRUE(guard.collect_expired());
  EXPECT_TRUE(store.scan(kKeys, "admin/", 10)->empty());
}

TEST_F(GuardTest, AGuardCollectsOnlyItsOwnRecords) {
  IdempotencyGuard keys(store, {std::chrono::hours(24), std::chrono::seconds(60), kKeys, "admin/"});
  IdempotencyGuard short_lived(store, {std::chrono::milliseconds(10), std::chrono::seconds(60), kKeys, "fp/"});
  call(keys, "admin/k9", "fp");
  call(short_lived, "fp/k9", "fp");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_TRUE(short_lived.collect_expired());
  EXPECT_EQ(store.scan(kKeys, "admin/", 10)->size(), 1u);  // a day's key outlives the short window's sweep
  EXPECT_TRUE(store.scan(kKeys, "fp/", 10)->empty());
  EXPECT_TRUE(call(keys, "admin/k9", "fp").replayed());
}

TEST_F(GuardTest, AnAttemptWhoseProcessDiedIsTakenOverAfterItsLease) {
  IdempotencyGuard guard(store, {std::chrono::hours(24), std::chrono::milliseconds(30), kKeys});
  // The first attempt never answers (its process died after writing "running").
  std::promise<void> started;
  guard.run("admin/k8", "fp", [&](auto) { started.set_value(); },
            http::Responder([](http::Response) {}, std::make_shared<const http::Response>(503, "")));
  started.get_future().get();
  EXPECT_EQ(call(guard, "admin/k8", "fp").response.status, 409u);  // still within its lease
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(call(guard, "admin/k8", "fp").response.status, 200u);
}

TEST(IdempotencyKey, IsOneTo255PrintableAsciiCharacters) {
  EXPECT_TRUE(valid_idempotency_key("a"));
  EXPECT_TRUE(valid_idempotency_key(std::string(255, 'k')));
  EXPECT_FALSE(valid_idempotency_key(""));
  EXPECT_FALSE(valid_idempotency_key(std::string(256, 'k')));
  EXPECT_FALSE(valid_idempotency_key("a\r\nb"));
  EXPECT_FALSE(valid_idempotency_key("caf\xc3\xa9"));
  EXPECT_FALSE(valid_idempotency_key(std::string("a\0b", 3)));
}

TEST(CanonicalJson, IgnoresMemberOrderAndWhitespace) {
  EXPECT_EQ(*canonical_json(R"({"b": 1, "a": {"d": [1, 2], "c": "x"}})"), R"({"a":{"c":"x","d":[1,2]},"b":1})");
  EXPECT_EQ(*canonical_json(R"({"a":1,"b":1})"), *canonical_json(R"({ "b":1 , "a":1 })"));
  EXPECT_FALSE(canonical_json("{").has_value());
}

// The same value is the same request, however the number is spelled.
TEST(CanonicalJson, GivesEachNumberOneSpelling) {
  for (const char* same : {R"({"value":1})", R"({"value":1.00})", R"({"value":1.0e0})", R"({"value":10e-1})",
                           R"({"value":0.1E1})"}) {
    EXPECT_EQ(*canonical_json(same), R"({"value":1})") << same;
  }
  EXPECT_EQ(*canonical_json(R"([0.50,-0,1e2,12.340,-1.5e-1,0.0001,1e25,1e-30])"),
            R"([0.5,0,100,12.34,-0.15,0.0001,1e25,1e-30])");
  EXPECT_NE(*canonical_json(R"({"value":1.01})"), *canonical_json(R"({"value":1.1})"));
  // Canonical stays canonical.
  std::string once = *canonical_json(R"({"b":[1.50,2e3],"a":-0.010})");
  EXPECT_EQ(*canonical_json(once), once);
  // Found by fuzz_operator_request: an exponent clamped, then moved by trailing zeros.
  for (const char* absurd : {"53335030e01028002555525555555544", "-0.5e-99999999999999", "10e999999999"}) {
    std::string first = *canonical_json(absurd);
    EXPECT_EQ(*canonical_json(first), first) << absurd;
  }
}

TEST(RecordKey, ScopesByOperatorMethodAndRoute) {
  auto k = idempotency_record_key("admin/", "alice", "POST", "/admin/v1/payments/p/refunds", "k");
  EXPECT_NE(k, idempotency_record_key("admin/", "bob", "POST", "/admin/v1/payments/p/refunds", "k"));
  EXPECT_NE(k, idempotency_record_key("admin/", "alice", "POST", "/admin/v1/payments/q/refunds", "k"));
  EXPECT_NE(idempotency_record_key("admin/", "ab", "c", "/", "k"), idempotency_record_key("admin/", "a", "bc", "/", "k"));
}

}  // namespace
}  // namespace idempay::admin
