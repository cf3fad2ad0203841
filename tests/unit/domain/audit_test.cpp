#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "idempay/domain/audit.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/domain/keyspaces.hpp"

namespace idempay::domain {
namespace {

AuditEntry sample() {
  AuditEntry e;
  e.seq = 7;
  e.time = 1'700'000'000'123;
  e.kind = AuditKind::kEventProcessed;
  e.ref = "pay-\"quoted\"\\1";
  e.fingerprint = "f1";
  e.before = "processing";
  e.after = "approved";
  e.detail = "line\nbreak";
  e.prev = "abc";
  return e;
}

// The keys stored so far are "<paymentId>/" and the seq in at least ten zero-padded digits:
// a trail is read by scanning its prefix, so its keys must keep sorting in seq order.
TEST(AuditTest, EntryKeysAreTheSeqInTenZeroPaddedDigits) {
  EXPECT_EQ(audit_key("p1", 0), "p1/0000000000");
  EXPECT_EQ(audit_key("p1", 7), "p1/0000000007");
  EXPECT_EQ(audit_key("p1", 1234567890), "p1/1234567890");
  EXPECT_EQ(audit_key("p1", 12345678901), "p1/12345678901");
  EXPECT_EQ(audit_key("p/x", UINT64_MAX), "p/x/18446744073709551615");
  EXPECT_LT(audit_key("p1", 9), audit_key("p1", 10));
  EXPECT_LT(audit_key("p1", 999999999), audit_key("p1", 1000000000));
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

// An entry, a chain head and arrival counts exactly as the previous version stored them: they
// read back, the entry still verifies, and each is written again byte for byte.
TEST(AuditTest, RecordsStoredByThePreviousVersionVerifyAndWriteBackByteForByte) {
  constexpr std::string_view kEntry =
      R"({"seq":1,"time":1796133849356,"kind":"event_received","ref":"w1","fingerprint":)"
      R"("v2:4dede362379d7e57f552315ea4d6c14ad97a955548ecdf07c330b0d28a606752","before":"","after":"",)"
      R"("detail":"","merchant":"shop","prev":"",)"
      R"("hash":"eed6275a4d61b92bb5b3d0b7080846918e511123b1c26e19d22a2ccb1da43e5f"})";
  auto e = decode_audit(kEntry);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->seq, 1u);
  EXPECT_EQ(e->merchant, "shop");
  EXPECT_EQ(compute_hash(*e), e->hash);
  EXPECT_EQ(encode(*e), kEntry);

  AuditEntry unnamed = *e;  // written before merchants were named: no member at all
  unnamed.merchant.clear();
  EXPECT_EQ(encode(unnamed).find("merchant"), std::string::npos);

  constexpr std::string_view kHead = R"({"seq":2,"hash":"2ad3e0cdb76c8b9d"})";
  auto head = decode_head(kHead);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->seq, 2u);
  EXPECT_EQ(encode(*head), kHead);

  constexpr std::string_view kTally =
      R"([{"kind":"event_duplicate_reused","fingerprint":"v2:aa","merchant":"shop","count":3,"first":10,"last":12}])";
  auto tally = ArrivalTally::decode(kTally);
  ASSERT_TRUE(tally);
  EXPECT_EQ(tally->total(), 3u);
  EXPECT_EQ(tally->encode(), kTally);
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
  // One key holding both entries, under the first's seq, and the batch's head queued for the
  // log: the first entry's queue entry was replaced (no other batch, and no reader, sees it).
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].key, audit_key("p1", 1));
  EXPECT_EQ(*writes[0].value, "[" + encode(first) + "," + encode(second) + "]");
  EXPECT_EQ(writes[1].keyspace, Space::kLog);
  EXPECT_EQ(writes[1].key, log_pending_key("p1", 2, second.time));
  EXPECT_EQ(*writes[1].value, second.hash);
  // Read back: the entries in order, and the head they leave.
  auto read = decode_audit_batch(*writes[0].value).value();
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].hash, second.hash);
  EXPECT_EQ(head_of(*writes[0].value).value().seq, 2u);
  EXPECT_EQ(head_of(*writes[0].value).value().hash, second.hash);
  // A store of format 1 holds one entry per key, an object: read as a batch of one.
  auto legacy = decode_audit_batch(encode(first)).value();
  ASSERT_EQ(legacy.size(), 1u);
  EXPECT_EQ(legacy[0].hash, first.hash);
  EXPECT_FALSE(decode_audit_batch("[]"));
  EXPECT_FALSE(decode_audit_batch("[1]"));
  // A later batch (new writes) starts a key of its own.
  storage::Batch next;
  AuditEntry third = chain.append("p1", sample(), next);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].key, audit_key("p1", 3));
  EXPECT_EQ(third.prev, second.hash);
}

// A batch's own change to the recovery index rides in its queue entry for the log: the
// index's key leaves the batch, the queue entry gains its letter. A batch without a queue
// entry, and an operation's key, keep their writes.
TEST(AuditTest, APaymentsRecoveryKeyRidesInItsQueueEntry) {
  AuditChain chain;
  storage::Batch intent;
  AuditEntry started = chain.append("p1", sample(), intent);
  intent.push_back({Space::kPayments, "p1", "{}", 0});
  intent.push_back({Space::kRecovery, recovery_key("p1"), std::string(), std::nullopt, true});
  intent.push_back({Space::kRecovery, recovery_key("p1", "req-1"), std::string(), std::nullopt, true});
  fold_recovery_into_log_queue("p1", intent);
  ASSERT_EQ(intent.size(), 4u);
  EXPECT_EQ(*intent[1].value, started.hash + "u");
  EXPECT_EQ(intent[3].key, recovery_key("p1", "req-1"));
  auto queued = decode_queued_head(*intent[1].value).value();
  EXPECT_EQ(queued.hash, started.hash);
  EXPECT_EQ(queued.recovery, kLeftUnresolved);
  auto at = parse_log_pending_key(intent[1].key).value();
  EXPECT_EQ(at.first, "p1");
  EXPECT_EQ(at.second, 1u);

  storage::Batch outcome;
  chain.append("p1", sample(), outcome);
  outcome.push_back({Space::kRecovery, recovery_key("p1"), std::nullopt, std::nullopt, true});
  fold_recovery_into_log_queue("p1", outcome);
  ASSERT_EQ(outcome.size(), 2u);
  EXPECT_EQ(decode_queued_head(*outcome[1].value).value().recovery, kResolved);

  storage::Batch no_entries{{Space::kRecovery, recovery_key("p1"), std::nullopt, std::nullopt, true}};
  fold_recovery_into_log_queue("p1", no_entries);
  EXPECT_EQ(no_entries.size(), 1u);

  EXPECT_FALSE(decode_queued_head(started.hash + "x"));
  EXPECT_FALSE(decode_queued_head("abc"));
  EXPECT_FALSE(parse_log_pending_key("p/123/p1/1"));
  EXPECT_FALSE(parse_log_pending_key(log_pending_from(5) + "/p1/x1"));
}

// Each entry's signature status: the key in force when it was appended, inside the hashed form
// (changing the named key breaks the entry's hash), the next key after a rotation; a chain
// without a signer writes no member at all, as entries did before keys were named.
TEST(AuditTest, EntriesNameTheKeyInForceInsideTheirHash) {
  AuditSigner signer;
  signer.set("kid-one");
  AuditChain chain;
  chain.sign_as(&signer);
  storage::Batch writes;
  AuditEntry first = chain.append("p1", sample(), writes);
  signer.set("kid-two");
  AuditEntry second = chain.append("p1", sample(), writes);
  EXPECT_EQ(first.signer, "kid-one");
  EXPECT_EQ(second.signer, "kid-two");
  EXPECT_EQ(decode_audit_batch(*writes[0].value).value().at(0).signer, "kid-one");
  EXPECT_EQ(decode_audit_batch(*writes[0].value).value().at(1).signer, "kid-two");
  EXPECT_EQ(compute_hash(first), first.hash);
  AuditEntry forged = first;
  forged.signer = "kid-two";
  EXPECT_NE(compute_hash(forged), first.hash);

  AuditChain unsigned_chain;
  AuditEntry plain = unsigned_chain.append("p2", sample(), writes);
  EXPECT_EQ(plain.signer, "");
  EXPECT_EQ(encode(plain).find("signer"), std::string::npos);
}

// On a shared store a payment's repeats gather in one batch while its chained commit is in
// flight: thousands in a burst. Each append must cost the same however many entries the batch
// holds (it once scanned the whole batch for the head, and a few seconds of repeats left the
// service busy for minutes). Compared within this run, so the machine's speed cancels out.
TEST(AuditTest, AnAppendCostsTheSameHoweverLongTheBatch) {
  AuditChain chain;
  chain.guard(true);
  storage::Batch writes;
  constexpr int kBlock = 500;
  auto append_block = [&] {
    auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < kBlock; ++i) {
      chain.append("p1", sample(), writes);
    }
    return std::chrono::steady_clock::now() - started;
  };
  auto early = std::min(append_block(), append_block());
  while (chain.head().seq < 20'000) {
    append_block();
  }
  auto late = std::min(append_block(), append_block());
  EXPECT_LT(late, early * 5) << "appends slow down as the batch grows";
  // One key for the whole batch, put only where none is, and one queue entry for the log: the
  // batch's last head.
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].key, audit_key("p1", 1));
  EXPECT_EQ(writes[0].expected_etag, std::optional<uint64_t>(0));
  EXPECT_EQ(decode_audit_batch(*writes[0].value).value().size(), chain.head().seq);
  std::string last = audit_key("p1", chain.head().seq);
  ASSERT_GT(writes.back().key.size(), last.size());
  EXPECT_EQ(writes.back().key.substr(writes.back().key.size() - last.size()), last);
  EXPECT_EQ(writes.back().keyspace, Space::kLog);
}

TEST(AuditTest, ArrivalTallyCountsPerKindFingerprintAndMerchantWithinBoundedRows) {
  ArrivalTally tally;
  AuditEntry dup;
  dup.kind = AuditKind::kEventDuplicateReused;
  dup.fingerprint = "v2:aa";
  dup.merchant = "shop";
  for (int i = 0; i < 500; ++i) {
    tally.add(dup, 1000 + i);
  }
  AuditEntry refused = dup;
  refused.kind = AuditKind::kEventRefused;
  for (int i = 0; i < 100; ++i) {  // an attacker varying its bodies
    refused.fingerprint = "v2:" + std::to_string(i);
    tally.add(refused, 2000 + i);
  }
  EXPECT_EQ(tally.total(), 600u);
  ASSERT_EQ(tally.rows().size(), ArrivalTally::kMaxRows);
  EXPECT_EQ(tally.rows()[0].count, 500u);
  EXPECT_EQ(tally.rows()[0].first, 1000);
  EXPECT_EQ(tally.rows()[0].last, 1499);
  // One answered on a request thread a moment before, recorded after the actor's own.
  tally.add(dup, 1200);
  EXPECT_EQ(tally.rows()[0].last, 1499) << "last never moves back";
  tally.add(dup, 900);
  EXPECT_EQ(tally.rows()[0].first, 900);
  EXPECT_EQ(tally.total(), 602u);
  EXPECT_EQ(tally.rows()[0].count, 502u);
  EXPECT_EQ(tally.rows().back().kind, "other");
  auto back = ArrivalTally::decode(tally.encode()).value();
  EXPECT_EQ(back.total(), 602u);
  EXPECT_EQ(back.rows().size(), tally.rows().size());
  EXPECT_TRUE(is_repeat(AuditKind::kEventDuplicateReused));
  EXPECT_FALSE(is_repeat(AuditKind::kEventProcessed));
  for (auto kind : {AuditKind::kEventReceived, AuditKind::kWebhookConflict, AuditKind::kArrivalsCounted}) {
    EXPECT_EQ(audit_kind_from(to_string(kind)), kind);  // each kind stored by its name, read back
  }
  EXPECT_FALSE(audit_kind_from("no_such_kind"));
}

}  // namespace
}  // namespace idempay::domain
