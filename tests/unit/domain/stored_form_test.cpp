// The stored form's format: a store of format 1 read as it is and migrated to 2, a migration cut
// short finished by the next, a newer format refused.
#include <gtest/gtest.h>

#include "idempay/domain/audit.hpp"
#include "idempay/domain/inspection.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/payment_reads.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/domain/stored_form.hpp"

namespace idempay::domain {
namespace {

// A payment's chain as format 1 stored it: one key per entry and a copy of the head.
void write_format_1_chain(storage::Store& store, const std::string& id, int entries) {
  AuditChain chain;
  storage::Batch batch;
  std::string last;
  for (int i = 0; i < entries; ++i) {
    storage::Batch one;
    AuditEntry e = chain.append(id, audit_entry(AuditKind::kEventReceived, id), one);
    batch.push_back({Space::kAudit, audit_key(id, e.seq), encode(e), std::nullopt, true});
  }
  batch.push_back({Space::kAudit, legacy_audit_head_key(id), encode(chain.head()), std::nullopt, true});
  batch.push_back({Space::kPayments, id, encode(PaymentRecord{}), 0});
  ASSERT_TRUE(store.commit_and_wait(std::move(batch)));
}

TEST(StoredFormTest, AFormat1StoreIsReadAsItIsThenMigratedOnce) {
  auto store = storage::make_memory_store(keyspace_names());
  for (int p = 0; p < 700; ++p) {  // more heads than one page of the migration
    write_format_1_chain(*store, "pay-" + std::to_string(p), 3);
  }
  EXPECT_EQ(stored_format(*store).value(), 1);
  EXPECT_FALSE(require_current_format(*store));

  // Read as it is: the head is the last entry, not the copy.
  auto snapshot = read_payment(disk_lookup(*store), "pay-7");
  ASSERT_TRUE(snapshot && *snapshot);
  auto copy = decode_head(store->get(Space::kAudit, legacy_audit_head_key("pay-7")).value()->value).value();
  EXPECT_EQ((*snapshot)->head.seq, 3u);
  EXPECT_EQ((*snapshot)->head.hash, copy.hash);

  auto migrated = migrate_stored_form(*store);
  ASSERT_TRUE(migrated) << migrated.error().message;
  EXPECT_EQ(migrated->from, 1);
  EXPECT_EQ(migrated->removed, 700u);
  EXPECT_EQ(stored_format(*store).value(), kStoredFormat);
  EXPECT_TRUE(require_current_format(*store));
  EXPECT_FALSE(store->get(Space::kAudit, legacy_audit_head_key("pay-7")).value());
  EXPECT_EQ(store->scan(Space::kAudit, "pay-7/", 100).value().size(), 3u) << "the entries stay";

  auto again = migrate_stored_form(*store);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->from, kStoredFormat);
  EXPECT_EQ(again->removed, 0u);
}

// Killed after some pages: the heads left are ignored by this release and removed next time;
// the format is recorded only by the run that finished.
TEST(StoredFormTest, AMigrationCutShortIsFinishedByTheNext) {
  auto store = storage::make_memory_store(keyspace_names());
  for (int p = 0; p < 3; ++p) {
    write_format_1_chain(*store, "pay-" + std::to_string(p), 2);
  }
  ASSERT_TRUE(store->commit_and_wait({{Space::kAudit, legacy_audit_head_key("pay-0"), std::nullopt, std::nullopt}}));
  EXPECT_EQ(stored_format(*store).value(), 1);
  auto finished = migrate_stored_form(*store);
  ASSERT_TRUE(finished);
  EXPECT_EQ(finished->removed, 2u);
  EXPECT_EQ(stored_format(*store).value(), kStoredFormat);
}

// Format 2's chain as a batch writes it verifies; the same entries under a key that is not
// their first entry's, or with the first batch removed, are named.
TEST(StoredFormTest, AuditVerifyChecksEachBatchSitsUnderItsFirstEntrysKey) {
  auto store = storage::make_memory_store(keyspace_names());
  AuditChain chain;
  storage::Batch intent, outcome;
  chain.append("pay-1", audit_entry(AuditKind::kEventReceived, "pay-1"), intent);
  chain.append("pay-1", audit_entry(AuditKind::kEventProcessingStarted, "pay-1", {}, "", "processing"), intent);
  chain.append("pay-1", audit_entry(AuditKind::kEventProcessed, "pay-1", {}, "processing", "approved"), outcome);
  PaymentRecord approved;
  approved.state = PaymentState::kApproved;
  intent.push_back({Space::kPayments, "pay-1", encode(approved), 0});
  ASSERT_TRUE(store->commit_and_wait(intent));
  ASSERT_TRUE(store->commit_and_wait(outcome));
  auto problems = [&] {
    std::string all;
    auto found = verify_store(*store, std::string("pay-1")).value();
    for (const auto& p : found) {
      all += p.problem + "; ";
    }
    return all;
  };
  EXPECT_EQ(problems(), "");
  std::string second = store->get(Space::kAudit, audit_key("pay-1", 3)).value()->value;
  ASSERT_TRUE(store->commit_and_wait({{Space::kAudit, audit_key("pay-1", 3), std::nullopt, std::nullopt},
                                      {Space::kAudit, audit_key("pay-1", 4), second, std::nullopt}}));
  EXPECT_NE(problems().find("not their first entry's"), std::string::npos) << problems();
  ASSERT_TRUE(store->commit_and_wait({{Space::kAudit, audit_key("pay-1", 1), std::nullopt, std::nullopt}}));
  EXPECT_NE(problems().find("missing"), std::string::npos) << problems();
}

TEST(StoredFormTest, ANewerFormatIsRefusedNotMisread) {
  auto store = storage::make_memory_store(keyspace_names());
  ASSERT_TRUE(store->commit_and_wait({{Space::kMeta, std::string(kFormatKey), "3", 0}}));
  auto refused = migrate_stored_form(*store);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kIllegalState);
  EXPECT_NE(refused.error().message.find("newer release"), std::string::npos);
  EXPECT_FALSE(require_current_format(*store));
  ASSERT_TRUE(store->commit_and_wait({{Space::kMeta, std::string(kFormatKey), "two", std::nullopt}}));
  EXPECT_FALSE(stored_format(*store));
}

// A new store is recorded at this release's format when first migrated (serve does it at start).
TEST(StoredFormTest, ANewStoreIsRecordedAtTheCurrentFormat) {
  auto store = storage::make_memory_store(keyspace_names());
  auto recorded = migrate_stored_form(*store);
  ASSERT_TRUE(recorded);
  EXPECT_EQ(recorded->from, 0) << "a new store, not one of format 1";
  EXPECT_EQ(stored_format(*store).value(), kStoredFormat);
}

}  // namespace
}  // namespace idempay::domain
