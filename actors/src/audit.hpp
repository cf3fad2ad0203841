#pragma once
// The audit trail: per payment, a hash chain of entries in the `audit` keyspace under
// "<paymentId>/<seq, 10 digits>", plus a head "<paymentId>/~head" naming the last entry.
#include <cstdint>
#include <string>
#include <vector>

#include "idempay/protocol/error.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::actors {

struct AuditEntry {
  uint64_t seq = 0;
  int64_t time = 0;  ///< Unix ms
  std::string kind;  ///< event_received, event_processing_started, event_processed, ...
  std::string ref;   ///< paymentId, requestId, event id or delivery id the entry is about
  std::string fingerprint;
  std::string before;  ///< payment state before, empty if unchanged
  std::string after;   ///< payment state after, empty if unchanged
  std::string detail;
  std::string merchant;  ///< the merchant that acted; empty for the acquirer or the connector itself
  std::string prev;  ///< hash of the previous entry of the same payment ("" for the first)
  std::string hash;  ///< SHA-256 over this entry's other fields, prev included
};

std::string audit_key(const std::string& payment_id, uint64_t seq);
std::string audit_head_key(const std::string& payment_id);
std::string audit_prefix(const std::string& payment_id);

std::string encode(const AuditEntry& e);
Result<AuditEntry> decode_audit(std::string_view json);
std::string compute_hash(const AuditEntry& e);  ///< the hash `e` must carry
/// Sets `e.hash` and returns the stored form, `encode(e)`, serialising the fields only once.
std::string seal(AuditEntry& e);

/// The chain position a payment's next entry continues from.
struct AuditHead {
  uint64_t seq = 0;
  std::string hash;
};
std::string encode(const AuditHead& h);
Result<AuditHead> decode_head(std::string_view json);

/// Appends entries to one payment's chain in memory and yields the writes that store them.
class AuditChain {
public:
  void reset(AuditHead head) { head_ = std::move(head); }
  const AuditHead& head() const { return head_; }

  /// Adds an entry and returns it; `writes` receives the entry and the new head.
  AuditEntry append(const std::string& payment_id, AuditEntry entry, storage::Batch& writes);

private:
  AuditHead head_;
};

}  // namespace idempay::actors
