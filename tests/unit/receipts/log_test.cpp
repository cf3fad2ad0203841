// The transparency log as stored: heads queued as a batch queues them, appended by a round of
// the sequencer, read back as roots and proofs that RFC 9162's verification accepts, whether
// their subtrees are stored or hashed from the leaves.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "idempay/base/crypto.hpp"
#include "idempay/domain/audit.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/receipts/log.hpp"

namespace idempay::receipts {
namespace {

using translog::Hash;

constexpr uint64_t kLeaves = 300;

class LogTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("idempay-log-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(dir_);
    auto key = signing::SigningKey::generate((dir_ / "key.pem").string());
    ASSERT_TRUE(key) << key.error().message;
    keys_ = std::make_shared<KeyRing>(std::move(*key));
    ASSERT_TRUE(publish(*store_, keys_->active()->public_key()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Queues kLeaves heads, one payment each, in the order of their times; returns the leaves'
  // hashes in that order.
  std::vector<Hash> queue_heads() {
    std::vector<Hash> leaves;
    storage::Batch batch;
    for (uint64_t i = 0; i < kLeaves; ++i) {
      std::string payment = "pay-" + std::to_string(i);
      std::string head = crypto::to_hex(crypto::sha256(payment));
      batch.push_back({domain::Space::kLog, domain::log_pending_key(payment, 1, 1'000'000 + static_cast<int64_t>(i)),
                       head, std::nullopt, true});
      leaves.push_back(translog::leaf_hash(log_leaf(payment, 1, head).value()));
    }
    EXPECT_TRUE(store_->commit_and_wait(std::move(batch)));
    return leaves;
  }

  LogOptions options() const {
    LogOptions o;
    o.interval = std::chrono::milliseconds(1);
    o.witness_file = (dir_ / "witness.json").string();
    return o;
  }

  std::filesystem::path dir_;
  std::unique_ptr<storage::Store> store_ = storage::make_memory_store(domain::keyspace_names());
  std::shared_ptr<KeyRing> keys_;
};

// The root of the first `size` leaves, from the leaves alone (the right edge merkle_test.cpp
// checks against RFC 6962's reference roots), not from anything the log stored.
Hash root_of(const std::vector<Hash>& leaves, uint64_t size) {
  translog::Frontier tree;
  std::vector<translog::Subtree> completed;
  for (uint64_t i = 0; i < size; ++i) {
    tree.append(leaves[i], completed);
  }
  return tree.root();
}

TEST_F(LogTest, ProofsFromStoredAndUnstoredSubtreesVerifyAgainstTheLeavesOwnRoots) {
  std::vector<Hash> leaves = queue_heads();
  TransparencyLog log(*store_, keys_, options());
  ASSERT_TRUE(log.round());
  LogReader reader(*store_);
  ASSERT_EQ(reader.size().value(), kLeaves);
  for (uint64_t i = 0; i < kLeaves; ++i) {
    ASSERT_EQ(reader.index_of(leaves[i]).value(), i);
  }
  for (uint64_t size : {1, 2, 3, 31, 63, 64, 65, 127, 128, 129, 200, 256, 299, 300}) {
    Hash root = root_of(leaves, size);
    ASSERT_EQ(reader.root(size).value(), root) << size;
    for (uint64_t index = 0; index < size; index += 7) {
      auto proof = reader.inclusion_proof(index, size);
      ASSERT_TRUE(proof) << proof.error().message;
      EXPECT_TRUE(translog::verify_inclusion(index, size, leaves[index], *proof, root)) << index << " of " << size;
    }
    for (uint64_t first : {1, 5, 63, 64, 100}) {
      if (first > size) {
        continue;
      }
      auto proof = reader.consistency_proof(first, size);
      ASSERT_TRUE(proof) << proof.error().message;
      EXPECT_TRUE(translog::verify_consistency(first, size, root_of(leaves, first), root, *proof))
          << first << " to " << size;
    }
  }
}

// Interior nodes are written for subtrees of 64 leaves and more only: below that they would be
// about one more write per leaf on the store's committer.
TEST_F(LogTest, OnlyLeavesAndSubtreesOfAtLeast64LeavesAreStored) {
  queue_heads();
  TransparencyLog log(*store_, keys_, options());
  ASSERT_TRUE(log.round());
  auto nodes = store_->scan_after(domain::Space::kLog, "n/", 10'000);
  ASSERT_TRUE(nodes);
  std::map<std::string, int> per_level;
  for (const auto& [key, value] : *nodes) {
    if (key.compare(0, 2, "n/") == 0) {
      ++per_level[key.substr(2, 2)];
    }
  }
  // 300 leaves; four subtrees of 64, two of 128, one of 256.
  EXPECT_EQ(per_level, (std::map<std::string, int>{{"00", 300}, {"06", 4}, {"07", 2}, {"08", 1}}));
  auto queued = store_->scan_after(domain::Space::kLog, "p/", 10);
  ASSERT_TRUE(queued);
  EXPECT_TRUE(queued->empty() || queued->front().first.compare(0, 2, "p/") != 0) << "the queue was not emptied";
}

// A payment's own changes to the recovery index ride in its queue entries (domain::QueuedHead)
// and reach the index as the sequencer takes them: a payment left in flight is indexed, one
// resolved is removed, one that entered and left within the round is never written at all.
TEST_F(LogTest, TheSequencerCarriesTheQueuesRecoveryLettersOverToTheIndex) {
  auto queue = [&](const std::string& payment, uint64_t seq, int64_t time, char letter) {
    std::string value = crypto::to_hex(crypto::sha256(payment + std::to_string(seq)));
    if (letter != 0) {
      value.push_back(letter);
    }
    return storage::Write{domain::Space::kLog, domain::log_pending_key(payment, seq, time), value, std::nullopt, true};
  };
  auto indexed = [&](const std::string& payment) {
    return store_->get(domain::Space::kRecovery, domain::recovery_key(payment)).value().has_value();
  };
  ASSERT_TRUE(store_->commit_and_wait({{domain::Space::kRecovery, domain::recovery_key("old"), "", std::nullopt, true}}));
  ASSERT_TRUE(store_->commit_and_wait({queue("in-flight", 2, 1'000, domain::kLeftUnresolved),
                                       queue("answered", 2, 1'001, domain::kLeftUnresolved),
                                       queue("answered", 3, 1'002, domain::kResolved),
                                       queue("old", 9, 1'003, domain::kResolved),
                                       queue("plain", 1, 1'004, 0)}));
  // Read before the round: recovery finds the payment still in flight in the queue alone.
  auto letters = domain::recovery_letters_in_queue(*store_).value();
  EXPECT_EQ(letters, (std::map<std::string, char>{{"answered", 'r'}, {"in-flight", 'u'}, {"old", 'r'}}));

  TransparencyLog log(*store_, keys_, options());
  ASSERT_TRUE(log.round());
  EXPECT_TRUE(indexed("in-flight"));
  EXPECT_FALSE(indexed("answered"));
  EXPECT_FALSE(indexed("old"));
  EXPECT_FALSE(indexed("plain"));
  EXPECT_TRUE(domain::recovery_letters_in_queue(*store_).value().empty());
  EXPECT_EQ(LogReader(*store_).size().value(), 5u);  // every entry a leaf, letter or not

  // Resolved in a later round: its key goes then.
  ASSERT_TRUE(store_->commit_and_wait({queue("in-flight", 3, 2'000, domain::kResolved)}));
  ASSERT_TRUE(log.round());
  EXPECT_FALSE(indexed("in-flight"));
}

std::string head_key(uint64_t size) {
  char key[24];
  std::snprintf(key, sizeof key, "t/%016llx", static_cast<unsigned long long>(size));
  return key;
}

// Tree heads are made every interval: those older than an hour are thinned to the first of each
// hour, the newest made and the newest published always kept, the last hour's all kept.
TEST_F(LogTest, TreeHeadsOlderThanAnHourAreThinnedToOneAnHour) {
  constexpr int64_t kMinute = 60'000;
  int64_t now = domain::now_unix_ms();
  constexpr uint64_t kHeads = 36;  // one every five minutes over the last three hours
  std::vector<int64_t> times;
  std::vector<bool> first_of_its_hour;
  for (uint64_t size = 1; size <= kHeads; ++size) {
    times.push_back(now - 178 * kMinute + static_cast<int64_t>(size - 1) * 5 * kMinute);  // none on the hour mark
    first_of_its_hour.push_back(size == 1 || times[size - 1] / (60 * kMinute) != times[size - 2] / (60 * kMinute));
  }
  // The newest published is an old head the thinning would otherwise remove.
  const uint64_t published = first_of_its_hour[1] ? 3 : 2;
  storage::Batch batch;
  for (uint64_t size = 1; size <= kHeads; ++size) {
    TreeHead head{size, Hash{}, times[size - 1], {}};
    batch.push_back({domain::Space::kLog, head_key(size), encode(head), std::nullopt, true});
  }
  batch.push_back({domain::Space::kLog, "s", std::to_string(kHeads), std::nullopt, true});
  batch.push_back({domain::Space::kLog, "q", std::to_string(published), std::nullopt, true});
  ASSERT_TRUE(store_->commit_and_wait(std::move(batch)));

  TransparencyLog log(*store_, keys_, options());
  ASSERT_TRUE(log.round());
  std::set<uint64_t> expected;
  for (uint64_t size = 1; size <= kHeads; ++size) {
    if (times[size - 1] >= now - 60 * kMinute || first_of_its_hour[size - 1] || size == published) {
      expected.insert(size);
    }
  }
  std::set<uint64_t> kept;
  for (uint64_t size = 1; size <= kHeads; ++size) {
    if (store_->get(domain::Space::kLog, head_key(size)).value()) {
      kept.insert(size);
    }
  }
  EXPECT_EQ(kept, expected);
  EXPECT_LE(kept.size(), 12u + 3u + 1u);  // the last hour's twelve, three hours' firsts, the published one
  ASSERT_TRUE(log.round());  // a second round finds nothing more to thin
  for (uint64_t size : expected) {
    EXPECT_TRUE(store_->get(domain::Space::kLog, head_key(size)).value()) << size;
  }
}

}  // namespace
}  // namespace idempay::receipts
