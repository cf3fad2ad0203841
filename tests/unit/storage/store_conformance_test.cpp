// One suite, every Store implementation: the in-memory test store must behave like RocksDB.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <rocksdb/db.h>

#include "idempay/storage/store.hpp"
#include "idempay/tracing/context.hpp"
#include "postgres_test_support.hpp"
#include "temp_dir.hpp"

namespace idempay::storage {
namespace {

// The keyspaces these tests declare: a store knows none of its own.
struct Space {
  static constexpr Keyspace kPayments{0};
  static constexpr Keyspace kOperations{1};
  static constexpr Keyspace kOutbox{2};
  static constexpr Keyspace kAudit{3};
};
const KeyspaceNames kNames = {"payments", "operations", "outbox", "audit"};

struct MemoryFactory {
  static constexpr const char* kName = "Memory";
  static constexpr bool kHasMemoryTier = true;
  std::unique_ptr<Store> open() { return make_memory_store(kNames); }
};

struct RocksFactory {
  static constexpr const char* kName = "RocksDB";
  static constexpr bool kHasMemoryTier = true;
  testing::TempDir dir;
  std::unique_ptr<Store> open() { return open_rocks_store(RocksOptions{dir.path() + "/db", true}, kNames).value(); }
};

// A real PostgreSQL server, named by IDEMPAY_TEST_PG_URI (scripts/test.sh starts a throwaway
// cluster with scripts/pg-local.sh); each test gets a schema of its own, dropped afterwards.
struct PostgresFactory {
  static constexpr const char* kName = "PostgreSQL";
  static constexpr bool kHasMemoryTier = false;  // every read asks the server
  PostgresOptions options() const {
    PostgresOptions o;
    o.uri = uri;
    o.schema = schema;
    return o;
  }
  std::unique_ptr<Store> open() {
    if (uri.empty()) {
      return nullptr;
    }
    return open_postgres_store(options(), kNames).value();
  }
  ~PostgresFactory() {
    if (!uri.empty()) {
      testing::run_sql(uri, "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }
  std::string uri = testing::postgres_uri();
  std::string schema = testing::unique_schema();
};

template <class Factory>
class StoreConformanceTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!store) {
      GTEST_SKIP() << "IDEMPAY_TEST_PG_URI is not set: no PostgreSQL server to test against";
    }
  }
  Factory factory;
  std::unique_ptr<Store> store = factory.open();
};

using Factories = ::testing::Types<MemoryFactory, RocksFactory, PostgresFactory>;
// Each suite named by its store (StoreConformanceTest/RocksDB, ...), not by its index.
struct FactoryName {
  template <typename Factory>
  static std::string GetName(int) { return Factory::kName; }
};
TYPED_TEST_SUITE(StoreConformanceTest, Factories, FactoryName);

TYPED_TEST(StoreConformanceTest, AbsentKeyReadsAsNullopt) {
  auto got = this->store->get(Space::kPayments, "missing");
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->has_value());
}

TYPED_TEST(StoreConformanceTest, PutIfAbsentThenGetWithEtag) {
  auto put = this->store->commit_and_wait({{Space::kPayments, "p1", "v1", 0}});
  ASSERT_TRUE(put);
  EXPECT_EQ(put->front(), 1u);
  auto got = this->store->get(Space::kPayments, "p1").value();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->value, "v1");
  EXPECT_EQ(got->etag, 1u);
}

TYPED_TEST(StoreConformanceTest, PutIfAbsentRefusesAnExistingKey) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "p1", "v1", 0}}));
  auto again = this->store->commit_and_wait({{Space::kPayments, "p1", "v2", 0}});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kConflict);
  EXPECT_EQ(this->store->get(Space::kPayments, "p1").value()->value, "v1");
}

TYPED_TEST(StoreConformanceTest, CompareAndSwapNeedsTheCurrentEtag) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "p1", "v1", 0}}));
  auto stale = this->store->commit_and_wait({{Space::kPayments, "p1", "v2", 7}});
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ErrorCode::kConflict);
  auto ok = this->store->commit_and_wait({{Space::kPayments, "p1", "v2", 1}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->front(), 2u);
  auto got = this->store->get(Space::kPayments, "p1").value();
  EXPECT_EQ(got->value, "v2");
  EXPECT_EQ(got->etag, 2u);
}

TYPED_TEST(StoreConformanceTest, BatchIsAllOrNothing) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "p1", "v1", 0}}));
  auto failed = this->store->commit_and_wait({{Space::kOperations, "op1", "x", 0},
                                              {Space::kPayments, "p1", "v2", 99}});
  ASSERT_FALSE(failed);
  EXPECT_FALSE(this->store->get(Space::kOperations, "op1").value().has_value());
  auto ok = this->store->commit_and_wait({{Space::kOperations, "op1", "x", 0},
                                          {Space::kPayments, "p1", "v2", 1}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(this->store->get(Space::kOperations, "op1").value()->value, "x");
  EXPECT_EQ(this->store->get(Space::kPayments, "p1").value()->value, "v2");
}

TYPED_TEST(StoreConformanceTest, UnconditionalWritesAndDeletes) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "a", "1", std::nullopt}}));
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "a", "2", std::nullopt}}));
  EXPECT_EQ(this->store->get(Space::kAudit, "a").value()->etag, 2u);
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "a", std::nullopt, 2}}));
  EXPECT_FALSE(this->store->get(Space::kAudit, "a").value().has_value());
}

TYPED_TEST(StoreConformanceTest, BlindWritesRestartTheEtagAndNeverConflict) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "b", "1", std::nullopt}}));
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "b", "2", std::nullopt}}));
  auto blind = this->store->commit_and_wait({{Space::kAudit, "b", "3", std::nullopt, true}});
  ASSERT_TRUE(blind);
  EXPECT_EQ(blind->front(), 1u);
  auto got = this->store->get(Space::kAudit, "b").value();
  EXPECT_EQ(got->value, "3");
  EXPECT_EQ(got->etag, 1u);
  // Later writes in the same batch see the blind write's etag.
  auto same_batch = this->store->commit_and_wait(
      {{Space::kAudit, "c", "x", std::nullopt, true}, {Space::kAudit, "c", "y", 1}});
  ASSERT_TRUE(same_batch);
  EXPECT_EQ(same_batch->back(), 2u);
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "b", std::nullopt, std::nullopt, true}}));
  EXPECT_FALSE(this->store->get(Space::kAudit, "b").value().has_value());
  // A condition, when given, is still checked.
  EXPECT_FALSE(this->store->commit_and_wait({{Space::kAudit, "c", "z", 7, true}}));
}

TYPED_TEST(StoreConformanceTest, KeyspacesAreSeparate) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "k", "payment", 0}}));
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kOperations, "k", "operation", 0}}));
  EXPECT_EQ(this->store->get(Space::kPayments, "k").value()->value, "payment");
  EXPECT_EQ(this->store->get(Space::kOperations, "k").value()->value, "operation");
}

TYPED_TEST(StoreConformanceTest, PrefixScanInKeyOrderWithLimit) {
  for (const char* k : {"b/2", "a/1", "b/1", "b/3", "c/1"}) {
    ASSERT_TRUE(this->store->commit_and_wait({{Space::kOutbox, k, k, 0}}));
  }
  auto all = this->store->scan(Space::kOutbox, "b/", 10).value();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].first, "b/1");
  EXPECT_EQ(all[2].first, "b/3");
  EXPECT_EQ(all[1].second.value, "b/2");
  EXPECT_EQ(this->store->scan(Space::kOutbox, "b/", 2).value().size(), 2u);
  EXPECT_TRUE(this->store->scan(Space::kOutbox, "z", 10).value().empty());
  // An empty prefix, even a view with no data at all, is every key.
  EXPECT_EQ(this->store->scan(Space::kOutbox, std::string_view(), 10).value().size(), 5u);
  EXPECT_EQ(this->store->scan_after(Space::kOutbox, std::string_view(), 10).value().size(), 5u);
  EXPECT_FALSE(this->store->get(Space::kOutbox, std::string_view()).value().has_value());
}

// A whole keyspace, page by page, in key order: every key once, the last page short.
TYPED_TEST(StoreConformanceTest, PagesAfterAKeyWalkTheWholeKeyspace) {
  Batch batch;
  for (int i = 0; i < 25; ++i) {
    batch.push_back({Space::kOutbox, "k" + std::to_string(100 + i), "v" + std::to_string(i), 0});
  }
  batch.push_back({Space::kAudit, "other", "x", 0});
  ASSERT_TRUE(this->store->commit_and_wait(std::move(batch)));
  std::vector<std::string> seen;
  std::string after;
  for (;;) {
    auto page = this->store->scan_after(Space::kOutbox, after, 10).value();
    if (page.empty()) {
      break;
    }
    EXPECT_LE(page.size(), 10u);
    for (const auto& [key, v] : page) {
      EXPECT_EQ(v.etag, 1u);
      seen.push_back(key);
    }
    after = page.back().first;
  }
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.front(), "k100");
  EXPECT_EQ(this->store->scan_after(Space::kOutbox, "k110", 2).value().front().first, "k111");  // strictly after
}

// Many threads race to create the same key and then to swap it from the same etag: exactly
// one of each race wins, whatever the interleaving and however commits are grouped.
TYPED_TEST(StoreConformanceTest, ConcurrentConditionalWritesHaveOneWinner) {
  constexpr int kThreads = 16;
  std::atomic<int> created{0};
  std::atomic<int> swapped{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      if (this->store->commit_and_wait({{Space::kPayments, "hot", "c" + std::to_string(i), 0}})) {
        ++created;
      }
    });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      if (this->store->commit_and_wait({{Space::kPayments, "hot", "s" + std::to_string(i), 1}})) {
        ++swapped;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(swapped.load(), 1);
  EXPECT_EQ(this->store->get(Space::kPayments, "hot").value()->etag, 2u);
}

// Commits issued without waiting all complete, each exactly once, with its own result.
TYPED_TEST(StoreConformanceTest, ManyAsynchronousCommitsAllComplete) {
  constexpr int kCommits = 500;
  std::vector<std::promise<CommitResult>> done(kCommits);
  for (int i = 0; i < kCommits; ++i) {
    this->store->commit({{Space::kPayments, "k" + std::to_string(i), "v", 0}},
                        [&done, i](CommitResult r) { done[i].set_value(std::move(r)); });
  }
  for (int i = 0; i < kCommits; ++i) {
    auto r = done[i].get_future().get();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->front(), 1u);
  }
  EXPECT_EQ(this->store->scan(Space::kPayments, "k", kCommits + 1).value().size(), size_t{kCommits});
}

// Commits issued together share a group: a batch whose condition fails is refused alone, the
// others land with the etags they would have had one by one, each chained on the one before.
TYPED_TEST(StoreConformanceTest, AFailedConditionInAGroupRefusesOnlyItsBatch) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "held", "1", 0}}));
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "counted", "1", std::nullopt}}));  // etag 1, no condition
  constexpr int kRounds = 20;
  std::vector<std::promise<CommitResult>> done(kRounds * 4);
  auto keep = [&done](int i) { return [&done, i](CommitResult r) { done[i].set_value(std::move(r)); }; };
  for (int i = 0; i < kRounds; ++i) {
    std::string n = std::to_string(i);
    this->store->commit({{Space::kPayments, "new" + n, "v", 0}, {Space::kAudit, "a" + n, "x", std::nullopt, true}},
                        keep(i * 4));
    this->store->commit({{Space::kPayments, "held", "stale" + n, 0}, {Space::kAudit, "b" + n, "x", std::nullopt, true}},
                        keep(i * 4 + 1));  // put-if-absent on a key that exists: refused
    this->store->commit({{Space::kPayments, "held", "next" + n, uint64_t(i + 1)}}, keep(i * 4 + 2));
    this->store->commit({{Space::kPayments, "counted", "again" + n, std::nullopt}}, keep(i * 4 + 3));
  }
  for (int i = 0; i < kRounds; ++i) {
    auto created = done[i * 4].get_future().get();
    ASSERT_TRUE(created) << i;
    EXPECT_EQ(*created, (std::vector<uint64_t>{1, 1}));
    auto refused = done[i * 4 + 1].get_future().get();
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
    auto swapped = done[i * 4 + 2].get_future().get();
    ASSERT_TRUE(swapped) << i;
    EXPECT_EQ(swapped->front(), uint64_t(i + 2));
    auto counted = done[i * 4 + 3].get_future().get();
    ASSERT_TRUE(counted) << i;
    EXPECT_EQ(counted->front(), uint64_t(i + 2));
  }
  EXPECT_EQ(this->store->get(Space::kPayments, "held").value()->value, "next" + std::to_string(kRounds - 1));
  EXPECT_EQ(this->store->get(Space::kPayments, "counted").value()->etag, uint64_t(kRounds + 1));
  EXPECT_EQ(this->store->scan(Space::kAudit, "a", 100).value().size(), size_t{kRounds});
  EXPECT_TRUE(this->store->scan(Space::kAudit, "b", 100).value().empty());  // refused with their batches
}

// Every condition of these groups names the etag it expects, and some of them do not hold in
// the store (PostgreSQL's committer first tries such a group trusting them, and has its
// statements check them): each batch still gets its own answer.
TYPED_TEST(StoreConformanceTest, ConditionsTheStoreRefusesFailOnlyTheirBatches) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "taken", "1", 0}}));
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "moved", "1", 0}}));
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "moved", "2", 1}}));  // etag 2
  constexpr int kRounds = 20;
  std::vector<std::promise<CommitResult>> done(kRounds * 4);
  auto keep = [&done](int i) { return [&done, i](CommitResult r) { done[i].set_value(std::move(r)); }; };
  for (int i = 0; i < kRounds; ++i) {
    std::string n = std::to_string(i);
    this->store->commit({{Space::kPayments, "fresh" + n, "v", 0}, {Space::kAudit, "a" + n, "x", std::nullopt, true}},
                        keep(i * 4));
    this->store->commit({{Space::kPayments, "taken", "again" + n, 0}, {Space::kAudit, "b" + n, "x", std::nullopt, true}},
                        keep(i * 4 + 1));  // put-if-absent on a key that exists
    this->store->commit({{Space::kPayments, "moved", "stale" + n, 1}, {Space::kAudit, "c" + n, "x", 0}},
                        keep(i * 4 + 2));  // compare-and-swap against an old etag
    this->store->commit({{Space::kPayments, "moved", std::nullopt, 1}}, keep(i * 4 + 3));  // delete, likewise
  }
  for (int i = 0; i < kRounds; ++i) {
    auto fresh = done[i * 4].get_future().get();
    ASSERT_TRUE(fresh) << i << ": " << fresh.error().message;
    EXPECT_EQ(*fresh, (std::vector<uint64_t>{1, 1}));
    for (int refused = 1; refused < 4; ++refused) {
      auto r = done[i * 4 + refused].get_future().get();
      ASSERT_FALSE(r) << i << " " << refused;
      EXPECT_EQ(r.error().code, ErrorCode::kConflict) << r.error().message;
    }
  }
  // Each alone in its group, so that its own statement is all that can refuse it.
  for (const Batch& stale : {Batch{{Space::kPayments, "taken", "alone", 0}}, Batch{{Space::kPayments, "moved", "alone", 1}},
                             Batch{{Space::kPayments, "moved", std::nullopt, 1}}}) {
    auto r = this->store->commit_and_wait(stale);
    ASSERT_FALSE(r) << stale.front().key;
    EXPECT_EQ(r.error().code, ErrorCode::kConflict) << r.error().message;
  }
  EXPECT_EQ(this->store->get(Space::kPayments, "taken").value()->value, "1");
  auto moved = this->store->get(Space::kPayments, "moved").value();
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->value, "2");
  EXPECT_EQ(moved->etag, 2u);
  EXPECT_EQ(this->store->scan(Space::kPayments, "fresh", 100).value().size(), size_t{kRounds});
  EXPECT_EQ(this->store->scan(Space::kAudit, "a", 100).value().size(), size_t{kRounds});
  EXPECT_TRUE(this->store->scan(Space::kAudit, "b", 100).value().empty());  // refused with their batches
  EXPECT_TRUE(this->store->scan(Space::kAudit, "c", 100).value().empty());
}

// A key written by several batches of one group (and twice by one batch): each write finds
// the one before it, as if the batches had been committed one by one.
TYPED_TEST(StoreConformanceTest, AKeyWrittenAgainInTheSameGroupFindsTheWriteBeforeIt) {
  constexpr int kRounds = 20;
  constexpr int kPerRound = 5;
  std::vector<std::promise<CommitResult>> done(kRounds * kPerRound);
  auto keep = [&done](int i) { return [&done, i](CommitResult r) { done[i].set_value(std::move(r)); }; };
  for (int i = 0; i < kRounds; ++i) {
    std::string n = std::to_string(i);
    this->store->commit({{Space::kPayments, "p" + n, "1", 0}}, keep(i * kPerRound));
    this->store->commit({{Space::kPayments, "p" + n, "2", 1}}, keep(i * kPerRound + 1));
    this->store->commit({{Space::kAudit, "head", "first" + n, std::nullopt, true}}, keep(i * kPerRound + 2));
    this->store->commit({{Space::kPayments, "gone" + n, "x", 0},  // put, then delete, in one batch
                         {Space::kPayments, "gone" + n, std::nullopt, 1}},
                        keep(i * kPerRound + 3));
    this->store->commit({{Space::kAudit, "head", "again" + n, std::nullopt, true}}, keep(i * kPerRound + 4));
  }
  // (A blind write's etag is nobody's condition: only that it landed is checked.)
  const std::vector<std::vector<uint64_t>> etags{{1}, {2}, {}, {1, 0}, {}};
  for (int i = 0; i < kRounds * kPerRound; ++i) {
    auto r = done[i].get_future().get();
    ASSERT_TRUE(r) << i << ": " << r.error().message;
    if (!etags[i % kPerRound].empty()) {
      EXPECT_EQ(*r, etags[i % kPerRound]) << i;
    }
  }
  for (int i = 0; i < kRounds; ++i) {
    auto p = this->store->get(Space::kPayments, "p" + std::to_string(i)).value();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->value, "2");
    EXPECT_EQ(p->etag, 2u);
    EXPECT_FALSE(this->store->get(Space::kPayments, "gone" + std::to_string(i)).value());
  }
  EXPECT_EQ(this->store->get(Space::kAudit, "head").value()->value, "again" + std::to_string(kRounds - 1));
}

TYPED_TEST(StoreConformanceTest, RidingAlongCommitsKeepConditionsAndOrder) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "a", "1", 0}}));
  std::promise<CommitResult> done;
  this->store->commit_riding_along({{Space::kAudit, "a", "2", 1}},
                                   [&done](CommitResult r) { done.set_value(std::move(r)); });
  ASSERT_TRUE(done.get_future().get());
  EXPECT_EQ(this->store->get(Space::kAudit, "a").value()->value, "2");
  std::promise<CommitResult> stale;
  this->store->commit_riding_along({{Space::kAudit, "a", "3", 1}},
                                   [&stale](CommitResult r) { stale.set_value(std::move(r)); });
  EXPECT_EQ(stale.get_future().get().error().code, ErrorCode::kConflict);
}

TEST(RocksStoreTest, RidingAlongWritesBecomeDurableWithTheNextSyncedOne) {
  testing::TempDir dir;
  RocksOptions options{dir.path() + "/db", true};
  {
    auto store = open_rocks_store(options, kNames).value();
    std::promise<CommitResult> done;
    store->commit_riding_along({{Space::kAudit, "dup", "entry", 0}},
                               [&done](CommitResult r) { done.set_value(std::move(r)); });
    ASSERT_TRUE(done.get_future().get());
    ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "p", "v", 0}}));
  }
  auto store = open_rocks_store(options, kNames).value();
  EXPECT_EQ(store->get(Space::kAudit, "dup").value()->value, "entry");
}

TEST(RocksStoreTest, CommittedDataSurvivesReopen) {
  testing::TempDir dir;
  RocksOptions options{dir.path() + "/db", true};
  {
    auto store = open_rocks_store(options, kNames).value();
    ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "p1", "v1", 0}}));
    ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "p1", "v2", 1}}));
  }
  auto store = open_rocks_store(options, kNames).value();
  auto got = store->get(Space::kPayments, "p1").value();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->value, "v2");
  EXPECT_EQ(got->etag, 2u);
}

// A keyspace declared as read only for existing keys keeps no filter on its last level: its
// reads still tell a key that exists from one that does not, from memory and from the files.
TEST(RocksStoreTest, KeyspacesReadOnlyForExistingKeysStillAnswerMisses) {
  testing::TempDir dir;
  RocksOptions options{dir.path() + "/db", true};
  options.read_only_existing_keys = {"audit"};
  {
    auto store = open_rocks_store(options, kNames).value();
    Batch batch;
    for (int i = 0; i < 2000; i += 2) {
      batch.push_back({Space::kAudit, "k" + std::to_string(i), std::string(200, 'v'), 0});
    }
    ASSERT_TRUE(store->commit_and_wait(std::move(batch)));
  }
  auto store = open_rocks_store(options, kNames).value();  // the log replayed into a table file
  for (int i = 0; i < 2000; ++i) {
    auto got = store->get(Space::kAudit, "k" + std::to_string(i)).value();
    EXPECT_EQ(got.has_value(), i % 2 == 0) << i;
  }
  EXPECT_FALSE(store->get(Space::kPayments, "k0").value());
}

TEST(RocksStoreTest, SecondOpenOfALockedDirectoryFailsCleanly) {
  testing::TempDir dir;
  RocksOptions options{dir.path() + "/db", true};
  auto first = open_rocks_store(options, kNames);
  ASSERT_TRUE(first);
  auto second = open_rocks_store(options, kNames);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
}

// The store's directory opened with RocksDB alone (the store closed), to read and write the
// bytes a store keeps, as another version of idempay would find or leave them.
class RawRocks {
public:
  explicit RawRocks(const std::string& path) {
    std::vector<rocksdb::ColumnFamilyDescriptor> families{{rocksdb::kDefaultColumnFamilyName, {}}};
    for (const auto& name : kNames) {
      families.push_back({name, {}});
    }
    opened_ = rocksdb::DB::Open(rocksdb::DBOptions(), path, families, &handles_, &db_).ok();
  }
  ~RawRocks() {
    for (auto* h : handles_) {
      db_->DestroyColumnFamilyHandle(h);
    }
    delete db_;
  }
  bool opened() const { return opened_; }
  bool put(Keyspace ks, const std::string& key, const std::string& bytes) {
    return db_->Put(rocksdb::WriteOptions(), handles_[1 + ks.index], key, bytes).ok();
  }
  std::string get(Keyspace ks, const std::string& key) {
    std::string bytes;
    EXPECT_TRUE(db_->Get(rocksdb::ReadOptions(), handles_[1 + ks.index], key, &bytes).ok());
    return bytes;
  }

private:
  rocksdb::DB* db_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  bool opened_ = false;
};

// What is on the disk stays as every earlier version wrote it — the etag in eight
// little-endian bytes, then the value — so that a data directory survives an upgrade and a
// rollback: written by the store, read raw; written raw, read by the store.
TEST(RocksStoreTest, StoredBytesAreTheEtagInEightLittleEndianBytesThenTheValue) {
  testing::TempDir dir;
  RocksOptions options{dir.path() + "/db", true};
  {
    auto store = open_rocks_store(options, kNames).value();
    ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "p1", "v1", 0}}));
    ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "p1", "{\"state\":\"approved\"}", 1}}));
  }
  {
    RawRocks raw(options.path);
    ASSERT_TRUE(raw.opened());
    EXPECT_EQ(raw.get(Space::kPayments, "p1"), std::string("\x02\0\0\0\0\0\0\0", 8) + "{\"state\":\"approved\"}");
    ASSERT_TRUE(raw.put(Space::kAudit, "old", std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8) + "entry"));
  }
  auto store = open_rocks_store(options, kNames).value();
  auto got = store->get(Space::kAudit, "old").value();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->etag, 0x0102030405060708u);
  EXPECT_EQ(got->value, "entry");
  EXPECT_TRUE(store->commit_and_wait({{Space::kAudit, "old", "next", 0x0102030405060708u}}));
}

// A value shorter than the etag it must start with is corruption: reading it as "absent"
// (etag 0) would let a put-if-absent overwrite it.
TEST(RocksStoreTest, AValueShorterThanItsEtagIsReportedAsCorruption) {
  testing::TempDir dir;
  RocksOptions options{dir.path() + "/db", true};
  open_rocks_store(options, kNames).value().reset();  // creates the column families
  {
    RawRocks raw(options.path);
    ASSERT_TRUE(raw.opened());
    ASSERT_TRUE(raw.put(Space::kPayments, "short", "abc"));
  }
  auto store = open_rocks_store(options, kNames).value();
  auto got = store->get(Space::kPayments, "short");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, ErrorCode::kInternal);
  EXPECT_FALSE(store->scan(Space::kPayments, "", 10));
  auto overwrite = store->commit_and_wait({{Space::kPayments, "short", "new", 0}});
  EXPECT_FALSE(overwrite) << "put-if-absent must not take a corrupt value for an absent one";
}

// Asynchronous reads run on the store's own threads, never the caller's, and see every commit
// completed before they were submitted.
TYPED_TEST(StoreConformanceTest, AsynchronousReadsRunOffTheCallerAndSeeCompletedCommits) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "p", "v1", 0}}));
  constexpr int kReads = 200;
  std::vector<std::promise<std::pair<std::thread::id, uint64_t>>> done(kReads);
  for (int i = 0; i < kReads; ++i) {
    this->store->read_async([&done, i](Store& s) {
      auto got = s.get(Space::kPayments, "p");
      done[i].set_value({std::this_thread::get_id(), got && *got ? (*got)->etag : 0});
    });
  }
  for (int i = 0; i < kReads; ++i) {
    auto [thread, etag] = done[i].get_future().get();
    EXPECT_NE(thread, std::this_thread::get_id()) << i;
    EXPECT_EQ(etag, 1u) << i;
  }
}

// Reads still queued when the store closes run before it closes: nobody waits forever.
TYPED_TEST(StoreConformanceTest, QueuedReadsRunBeforeTheStoreCloses) {
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) {
    this->store->read_async([&ran](Store& s) {
      (void)s.get(Space::kPayments, "absent");
      ++ran;
    });
  }
  this->store.reset();
  EXPECT_EQ(ran.load(), 1000);
}

// Memory-only lookups answer like get while the data is in memory.
TYPED_TEST(StoreConformanceTest, MemoryOnlyLookupsAnswerLikeGet) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kPayments, "p", "v1", 0}}));
  if constexpr (!TypeParam::kHasMemoryTier) {
    EXPECT_FALSE(this->store->get_if_in_memory(Space::kPayments, "p"));  // "ask through read_async"
    return;
  }
  auto present = this->store->get_if_in_memory(Space::kPayments, "p");
  ASSERT_TRUE(present && *present && **present);
  EXPECT_EQ((**present)->value, "v1");
  auto absent = this->store->get_if_in_memory(Space::kPayments, "q");
  ASSERT_TRUE(absent && *absent);
  EXPECT_FALSE(**absent);
}

// The last key of a range: the greatest at or after `from` and before `below`, never one outside
// it, deleted keys skipped; what the newest batch of an audit trail is found by.
TYPED_TEST(StoreConformanceTest, LastInARangeIsItsGreatestKey) {
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "a/1", "x", 0},
                                            {Space::kAudit, "p/0000000001", "one", 0},
                                            {Space::kAudit, "p/0000000003", "three", 0},
                                            {Space::kAudit, "p/0000000007", "seven", 0},
                                            {Space::kAudit, "p/~tally", "t", 0},
                                            {Space::kAudit, "q/0000000001", "other", 0}}));
  auto last = [&](std::string_view from, std::string_view below) {
    auto got = this->store->last_in(Space::kAudit, from, below).value();
    return got ? got->first + "=" + got->second.value : std::string("none");
  };
  EXPECT_EQ(last("p/", "p/~"), "p/0000000007=seven");
  EXPECT_EQ(last("p/", "p/0000000007"), "p/0000000003=three");
  EXPECT_EQ(last("p/", "p/0000000003"), "p/0000000001=one");
  EXPECT_EQ(last("p/", "p/0000000001"), "none");
  EXPECT_EQ(last("r/", "r/~"), "none");
  EXPECT_EQ(last("b/", "b/~"), "none");  // a key before the range is not in it
  ASSERT_TRUE(this->store->commit_and_wait({{Space::kAudit, "p/0000000007", std::nullopt, std::nullopt}}));
  EXPECT_EQ(last("p/", "p/~"), "p/0000000003=three");
  if constexpr (TypeParam::kHasMemoryTier) {
    auto memory = this->store->last_in_if_in_memory(Space::kAudit, "p/", "p/~");
    ASSERT_TRUE(memory && *memory && **memory);
    EXPECT_EQ((**memory)->first, "p/0000000003");
  }
}

// Obsolete files are deleted at a bounded rate (freeing a large file's blocks at once held the
// WAL's sync on a file system with online discard), but they are deleted: the log a reopen
// replays into a table file, and a file a killed process left half deleted.
TEST(RocksStoreTest, ObsoleteLogsAndLeftoverTrashAreDeletedAfterReopen) {
  testing::TempDir dir;
  RocksOptions options{dir.path() + "/db", true};
  auto files = [&](std::string_view suffix) {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(options.path)) {
      auto name = entry.path().filename().string();
      if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        out.push_back(name);
      }
    }
    return out;
  };
  {
    auto store = open_rocks_store(options, kNames).value();
    Batch batch;
    for (int i = 0; i < 5000; ++i) {
      batch.push_back({Space::kPayments, "pay-" + std::to_string(i), std::string(300, 'v'), 0});
    }
    ASSERT_TRUE(store->commit_and_wait(std::move(batch)));
  }
  auto logs_before = files(".log");
  ASSERT_FALSE(logs_before.empty());
  std::ofstream(options.path + "/000999.sst.trash") << std::string(3 << 20, 'x');  // larger than a chunk
  auto store = open_rocks_store(options, kNames).value();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto old_log_left = [&] {
    auto now = files(".log");
    return std::any_of(logs_before.begin(), logs_before.end(),
                       [&](const std::string& l) { return std::find(now.begin(), now.end(), l) != now.end(); });
  };
  while ((old_log_left() || !files(".trash").empty()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(old_log_left());
  EXPECT_TRUE(files(".trash").empty());
  EXPECT_TRUE(store->get(Space::kPayments, "pay-4999").value().has_value());
}

// On disk, with nothing cached (a reopened store): a key that does not exist is answered from
// the resident Bloom filters without reading a block, which is what a new paymentId costs;
// a stored key's block needs the disk until a read has cached it.
TEST(RocksStoreTest, MemoryOnlyLookupsAnswerAbsentKeysFromTheFilters) {
  testing::TempDir dir;
  RocksOptions options{dir.path() + "/db", true};
  {
    auto store = open_rocks_store(options, kNames).value();
    Batch batch;
    for (int i = 0; i < 5000; ++i) {
      batch.push_back({Space::kPayments, "pay-" + std::to_string(i), std::string(300, 'v'), 0});
    }
    ASSERT_TRUE(store->commit_and_wait(std::move(batch)));
  }
  auto store = open_rocks_store(options, kNames).value();  // recovery writes the log to a table file
  int answered = 0;
  for (int i = 0; i < 1000; ++i) {
    auto r = store->get_if_in_memory(Space::kPayments, "new-" + std::to_string(i));
    if (r) {
      ASSERT_TRUE(*r);
      EXPECT_FALSE(**r);
      ++answered;
    }
  }
  EXPECT_GE(answered, 970);  // a Bloom filter's false positives (about 1%) need the block
  EXPECT_FALSE(store->get_if_in_memory(Space::kPayments, "pay-42").has_value());
  ASSERT_TRUE(store->get(Space::kPayments, "pay-42").value().has_value());
  auto cached = store->get_if_in_memory(Space::kPayments, "pay-42");
  ASSERT_TRUE(cached && *cached && **cached);
}

}  // namespace
}  // namespace idempay::storage

namespace idempay::storage {
namespace {

// What only a server-backed store must also do: keep what it committed for the next process,
// keep keys of any bytes, refuse a second serving instance, and refuse a schema newer than
// it knows.
class PostgresStoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (factory.uri.empty()) {
      GTEST_SKIP() << "IDEMPAY_TEST_PG_URI is not set: no PostgreSQL server to test against";
    }
  }
  PostgresFactory factory;
};

TEST_F(PostgresStoreTest, CommittedDataSurvivesReopenAndKeysMayHoldAnyByte) {
  const std::string odd_key = std::string("a\0'\"\\;\xff", 8) + "--";
  {
    auto store = factory.open();
    ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, odd_key, std::string("v\0\xfe", 3), 0},
                                        {Space::kPayments, "\xff\xff", "top", 0}}));
  }
  auto store = factory.open();
  auto got = store->get(Space::kPayments, odd_key).value();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->value, std::string("v\0\xfe", 3));
  EXPECT_EQ(got->etag, 1u);
  auto all = store->scan(Space::kPayments, "\xff", 10).value();
  ASSERT_EQ(all.size(), 1u);  // a prefix of 0xff bytes has no upper bound: still a prefix scan
  EXPECT_EQ(all[0].first, "\xff\xff");
}

TEST_F(PostgresStoreTest, TwoServingStoresShareOneDatabaseAndAReaderCannotWrite) {
  // Several instances serve from one database: each sees the other's commits, and of two
  // put-if-absent writes of one key exactly one wins, whichever store made it.
  auto first = factory.open();
  auto second = open_postgres_store(factory.options(), kNames);
  ASSERT_TRUE(second) << second.error().message;
  ASSERT_TRUE(first->commit_and_wait({{Space::kPayments, "p", "v1", 0}}));
  auto seen = (*second)->get(Space::kPayments, "p");
  ASSERT_TRUE(seen && *seen);
  EXPECT_EQ((*seen)->value, "v1");
  EXPECT_EQ((*second)->commit_and_wait({{Space::kPayments, "p", "v2", 0}}).error().code, ErrorCode::kConflict);
  ASSERT_TRUE((*second)->commit_and_wait({{Space::kPayments, "p", "v2", (*seen)->etag}}));
  EXPECT_EQ(first->commit_and_wait({{Space::kPayments, "p", "v3", (*seen)->etag}}).error().code, ErrorCode::kConflict);
  auto options = factory.options();
  options.read_only = true;
  auto reader = open_postgres_store(options, kNames);
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ((*reader)->commit_and_wait({{Space::kPayments, "q", "v", 0}}).error().code, ErrorCode::kUnavailable);
}

// A session of its own on the test server, as another instance would have.
class OutsideSession {
public:
  explicit OutsideSession(const std::string& uri) : conn_(PQconnectdb(uri.c_str())) {}
  ~OutsideSession() { PQfinish(conn_); }
  void run(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    auto status = PQresultStatus(r);
    std::string error = PQresultErrorMessage(r);
    PQclear(r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      throw std::runtime_error("sql failed: " + error);
    }
  }

private:
  PGconn* conn_;
};

TEST_F(PostgresStoreTest, AWriterOutsideThisProcessIsNeverOverwritten) {
  auto store = factory.open();
  ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "held", "v1", 0}}));
  const std::string table = factory.schema + ".kv_payments";
  OutsideSession outside(factory.uri);
  auto commit_outside_later = [&outside] {
    return std::thread([&outside] {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      outside.run("COMMIT");
    });
  };

  // A key another instance is inserting reads as absent until it commits; the put-if-absent
  // made meanwhile waits for it, fails, and the group's next attempt finds the key taken —
  // one key alone, and one of several inserted by one statement.
  for (const Batch& batch : {Batch{{Space::kPayments, "new", "mine", 0}},
                             Batch{{Space::kPayments, "also", "mine", 0}, {Space::kPayments, "new2", "mine", 0}}}) {
    const std::string& key = batch.back().key;
    outside.run("BEGIN; INSERT INTO " + table + " VALUES ('" + key + "'::bytea, 'theirs', 7)");
    auto committer = commit_outside_later();
    auto inserted = store->commit_and_wait(batch);
    committer.join();
    ASSERT_FALSE(inserted) << key;
    EXPECT_EQ(inserted.error().code, ErrorCode::kConflict) << inserted.error().message;
    auto theirs = store->get(Space::kPayments, key).value();
    ASSERT_TRUE(theirs);
    EXPECT_EQ(theirs->value, "theirs");
    EXPECT_EQ(theirs->etag, 7u);
  }
  EXPECT_FALSE(store->get(Space::kPayments, "also").value());  // the batch failed whole

  // A key another instance is changing is read once it has committed: a compare-and-swap
  // against the etag from before is refused.
  outside.run("BEGIN; UPDATE " + table + " SET value = 'theirs', etag = 2 WHERE key = 'held'::bytea");
  auto committer = commit_outside_later();
  auto swapped = store->commit_and_wait({{Space::kPayments, "held", "mine", 1}});
  committer.join();
  ASSERT_FALSE(swapped);
  EXPECT_EQ(swapped.error().code, ErrorCode::kConflict) << swapped.error().message;
  EXPECT_EQ(store->get(Space::kPayments, "held").value()->value, "theirs");
}

// Two instances inserting the same new keys must wait for each other, never deadlock: a
// deadlock holds both groups for PostgreSQL's deadlock_timeout, long enough for a lease to
// lapse. The store writes a statement's rows in key order, whatever order its batches gave,
// as every instance does. Here another instance holds "a" and then inserts "b" while the
// store inserts "b" and "a": in the batch's order the store would hold "b" and wait for "a"
// (a deadlock, which the other side, checking first, would lose); in key order it waits for
// "a" holding nothing the other needs.
TEST_F(PostgresStoreTest, InstancesInsertingTheSameNewKeysInOtherOrdersNeverDeadlock) {
  auto store = factory.open();
  const std::string table = factory.schema + ".kv_payments";
  OutsideSession outside(factory.uri);
  outside.run("SET deadlock_timeout = '100ms'");  // the other instance is the one that notices a deadlock
  outside.run("BEGIN; INSERT INTO " + table + " VALUES ('a'::bytea, 'theirs', 7)");
  std::string outside_error;
  std::thread other_instance([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the store is waiting for "a" by then
    try {
      outside.run("INSERT INTO " + table + " VALUES ('b'::bytea, 'theirs', 7)");
      outside.run("COMMIT");
    } catch (const std::exception& e) {
      outside_error = e.what();
      outside.run("ROLLBACK");
    }
  });
  auto inserted = store->commit_and_wait({{Space::kPayments, "b", "mine", 0}, {Space::kPayments, "a", "mine", 0}});
  other_instance.join();
  EXPECT_EQ(outside_error, "");
  ASSERT_FALSE(inserted);
  EXPECT_EQ(inserted.error().code, ErrorCode::kConflict) << inserted.error().message;
  EXPECT_EQ(store->get(Space::kPayments, "b").value()->value, "theirs");
}

TEST_F(PostgresStoreTest, APlanMadeWhileATableWasSmallNeverScansItWhole) {
  // A new database: statistics of a one-row table, and no autovacuum to renew them. The
  // session's statements are prepared (planned once) while the table is that small; then it
  // grows. A whole-table scan per commit group would cost more with every row.
  auto store = factory.open();
  const std::string table = factory.schema + ".kv_payments";
  ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "a", "v", 0}}));
  testing::run_sql(factory.uri, "ALTER TABLE " + table + " SET (autovacuum_enabled = false); ANALYZE " + table);
  uint64_t etag = 1;
  for (; etag <= 8; ++etag) {  // past the five runs after which a prepared statement's plan is kept
    ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "a", "v", etag}}));
  }
  testing::run_sql(factory.uri, "INSERT INTO " + table
                                    + " SELECT convert_to('k' || g, 'UTF8'), 'v', 1 FROM generate_series(1, 20000) g");
  ASSERT_TRUE(store->commit_and_wait({{Space::kPayments, "a", "v", etag}}));
  // The committer's session reports its counts when idle, within about ten seconds.
  auto stat = [&](const std::string& column) {
    return std::stoll(testing::run_sql(factory.uri, "SELECT " + column + " FROM pg_stat_user_tables WHERE relid = '"
                                                        + table + "'::regclass"));
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (stat("n_tup_upd") < 9 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(stat("n_tup_upd"), 9);
  EXPECT_EQ(stat("seq_tup_read"), 0);  // rows read by whole-table scans (opening the store reads none)
}

TEST_F(PostgresStoreTest, MigrationsAreRecordedAndANewerSchemaIsRefused) {
  ASSERT_TRUE(migrate_postgres_store(factory.options(), kNames));
  ASSERT_TRUE(migrate_postgres_store(factory.options(), kNames));  // again: nothing to do
  EXPECT_EQ(testing::run_sql(factory.uri, "SELECT max(version) FROM " + factory.schema + ".schema_version"), "2");
  EXPECT_EQ(testing::run_sql(factory.uri, "SELECT count(*) FROM " + factory.schema + ".commit_marks"), "0");
  testing::run_sql(factory.uri, "INSERT INTO " + factory.schema + ".schema_version VALUES (99)");
  auto opened = open_postgres_store(factory.options(), kNames);
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message.find("newer"), std::string::npos) << opened.error().message;
}

TEST_F(PostgresStoreTest, AnUnreachableServerIsARetryableError) {
  auto options = factory.options();
  options.uri = "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2";
  auto opened = open_postgres_store(options, kNames);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, ErrorCode::kUnavailable);
}

// A read handed to a reader thread goes on in its caller's trace: what it then sends a payment
// (an acquirer's notification found by reference, an operator's action) belongs to the request.
TYPED_TEST(StoreConformanceTest, AnAsyncReadRunsInItsCallersTrace) {
  auto trace = tracing::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").value();
  std::promise<std::string> seen;
  {
    tracing::Scope in_trace(trace);
    this->store->read_async([&seen](Store&) { seen.set_value(tracing::current().traceparent()); });
  }
  EXPECT_EQ(seen.get_future().get(), trace.traceparent());
}

}  // namespace
}  // namespace idempay::storage
