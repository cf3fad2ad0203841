#include <gtest/gtest.h>

#include "idempay/domain/audit.hpp"

namespace idempay::domain {
namespace {

AuditEntry sample() {
  AuditEntry e;
  e.seq = 7;
  e.time = 1'700'000'000'123;
  e.kind = "event_processed";
  e.ref = "pay-\"quoted\"\\1";
  e.fingerprint = "f1";
  e.before = "processing";
  e.after = "approved";
  e.detail = "line\nbreak";
  e.prev = "abc";
  return e;
}

// seal() is the fast path of append(); what it stores must be exactly what encode() and
// compute_hash() define, or `audit verify` would report every chain as broken.
TEST(AuditTest, SealStoresTheEncodedFormWithItsHash) {
  AuditEntry e = sample();
  std::string stored = seal(e);
  EXPECT_EQ(e.hash, compute_hash(e));
  EXPECT_EQ(stored, encode(e));
  auto back = decode_audit(stored).value();
  EXPECT_EQ(back.hash, e.hash);
  EXPECT_EQ(back.ref, e.ref);
  EXPECT_EQ(compute_hash(back), e.hash);
}

TEST(AuditTest, ChainLinksEachEntryToThePrevious) {
  AuditChain chain;
  storage::Batch writes;
  AuditEntry first = chain.append("p1", sample(), writes);
  AuditEntry second = chain.append("p1", sample(), writes);
  EXPECT_EQ(first.seq, 1u);
  EXPECT_EQ(first.prev, "");
  EXPECT_EQ(second.seq, 2u);
  EXPECT_EQ(second.prev, first.hash);
  EXPECT_EQ(chain.head().hash, second.hash);
  ASSERT_EQ(writes.size(), 3u);  // two entries and one head: the first head was replaced
  EXPECT_EQ(writes[0].key, audit_key("p1", 1));
  EXPECT_EQ(*writes[0].value, encode(first));
  EXPECT_EQ(writes[2].key, audit_head_key("p1"));
}

TEST(AuditTest, ArrivalTallyCountsPerKindFingerprintAndMerchantWithinBoundedRows) {
  ArrivalTally tally;
  AuditEntry dup;
  dup.kind = "event_duplicate_reused";
  dup.fingerprint = "v2:aa";
  dup.merchant = "shop";
  for (int i = 0; i < 500; ++i) {
    tally.add(dup, 1000 + i);
  }
  AuditEntry refused = dup;
  refused.kind = "event_refused";
  for (int i = 0; i < 100; ++i) {  // an attacker varying its bodies
    refused.fingerprint = "v2:" + std::to_string(i);
    tally.add(refused, 2000 + i);
  }
  EXPECT_EQ(tally.total(), 600u);
  ASSERT_EQ(tally.rows().size(), ArrivalTally::kMaxRows);
  EXPECT_EQ(tally.rows()[0].count, 500u);
  EXPECT_EQ(tally.rows()[0].first, 1000);
  EXPECT_EQ(tally.rows()[0].last, 1499);
  EXPECT_EQ(tally.rows().back().kind, "other");
  auto back = ArrivalTally::decode(tally.encode()).value();
  EXPECT_EQ(back.total(), 600u);
  EXPECT_EQ(back.rows().size(), tally.rows().size());
  EXPECT_TRUE(is_repeat("event_duplicate_reused"));
  EXPECT_FALSE(is_repeat("event_processed"));
}

}  // namespace
}  // namespace idempay::domain
