#pragma once
// The audit trail: per payment, a hash chain of entries in the `audit` keyspace. The entries a
// batch appends to one payment's chain are stored together, as a JSON array under
// "<paymentId>/<seq of the first, 10 digits>"; the chain's head is its last stored entry.
// (Stores of format 1 hold one entry per key, a JSON object, and a copy of the head under
// "<paymentId>/~head": both are still read.)
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::domain {

/// What an audit entry records: the trail's vocabulary, one name per kind (stored, shown and
/// counted by its name: to_string). docs/operations.md lists them.
enum class AuditKind : uint8_t {
  kEventReceived,
  kEventProcessingStarted,
  kEventProcessed,
  kEventDuplicateReused,
  kEventRefused,
  kEventFailed,
  kEventReconciled,
  kEventOrphaned,
  kOperationReceived,
  kOperationProcessingStarted,
  kOperationProcessed,
  kOperationPending,
  kOperationDuplicateReused,
  kOperationRefused,
  kWebhookApplied,
  kWebhookIgnored,
  kWebhookDuplicate,
  kWebhookConflict,
  kDeliveryWritten,
  kCallbackNotified,
  kTerminalSubmitted,
  kAccessRefused,
  kAcquirerActionRequested,
  kArrivalsCounted,
  kAcquirerReported,         ///< the acquirer reported on an operation (carried out)
  kAcquirerFailureReported,  ///< the acquirer reported an operation failed after it was accepted
  kAcquirerHint,  ///< an unauthenticated acquirer notification (API Pix) made the connector ask the acquirer
};

std::string_view to_string(AuditKind kind);
/// The kind of that name; nullopt for none (an entry this version cannot read).
std::optional<AuditKind> audit_kind_from(std::string_view name);

struct AuditEntry {
  uint64_t seq = 0;
  int64_t time = 0;  ///< Unix ms
  AuditKind kind = AuditKind::kEventReceived;
  std::string ref;   ///< paymentId, requestId, event id or delivery id the entry is about
  std::string fingerprint;
  std::string before;  ///< payment state before, empty if unchanged
  std::string after;   ///< payment state after, empty if unchanged
  std::string detail;
  std::string merchant;  ///< the merchant that acted; empty for the acquirer or the connector itself
  /// The entry's signature status: the key id (RFC 7638 thumbprint) of the instance that wrote
  /// it, which signs this state's receipts while the key is in force and co-signs the tree
  /// heads that log the chain. Empty: unsigned (written before entries named their key).
  std::string signer;
  std::string prev;  ///< hash of the previous entry of the same payment ("" for the first)
  std::string hash;  ///< SHA-256 over this entry's other fields, prev included
};

/// An entry to append: what happened (`kind`), to what (`ref`), and the payment's state
/// before and after it, if it changed.
AuditEntry audit_entry(AuditKind kind, std::string ref, std::string fingerprint = {}, std::string_view before = {},
                       std::string_view after = {}, std::string detail = {});

/// The key of the batch whose first entry is `seq` (format 1: of the entry `seq`).
std::string audit_key(const std::string& payment_id, uint64_t seq);
/// Every key of a payment's entries sorts at or after audit_prefix and before this one.
std::string audit_entries_end(const std::string& payment_id);
/// The transparency log's queue: each batch that moves a chain's head leaves one entry under
/// this key in Space::kLog (the head's hash, hex), which the log's sequencer appends as a
/// leaf and removes (receipts/). A batch's last head only: no other is ever stored, so no
/// other can be named by a receipt. "p/<time: Unix ms, 13 digits>/<paymentId>/<seq>": in the
/// order they were made, so that the sequencer reads on from where it was instead of over the
/// deletions of every entry it took before (an LSM store keeps those for a while).
std::string log_pending_key(const std::string& payment_id, uint64_t seq, int64_t time_ms);
/// "p/<time: Unix ms, 13 digits>": every queue key made at `time_ms` or later sorts after it.
std::string log_pending_from(int64_t time_ms);
inline constexpr std::string_view kLogPendingPrefix = "p/";
inline constexpr size_t kLogPendingTimeDigits = 13;
/// Format 1's copy of the head: no longer written; `idempay migrate` removes them.
std::string legacy_audit_head_key(const std::string& payment_id);

/// A queued head, as the queue entry's value holds it: the head's hash (hex), then, for a
/// batch that moved the payment in or out of the recovery index, one letter: `u` it left the
/// payment's acquirer outcome unknown (a new payment), `r` it resolved it. The sequencer
/// carries the letter over to the recovery index (Space::kRecovery) as it takes the entry, so
/// that a create writes no recovery key of its own: until then start-up recovery finds the
/// payment in the queue (recovery_letters_in_queue).
struct QueuedHead {
  std::string hash;
  char recovery = 0;  ///< 0, kLeftUnresolved or kResolved
};
inline constexpr char kLeftUnresolved = 'u';
inline constexpr char kResolved = 'r';
Result<QueuedHead> decode_queued_head(std::string_view value);
/// A queue key's paymentId and seq; kInvalidArgument if it is not one.
Result<std::pair<std::string, uint64_t>> parse_log_pending_key(std::string_view key);

/// Moves the payment's own recovery-index write out of `batch` into the letter of the batch's
/// queue entry for the log (QueuedHead), when the batch has one: one key fewer per batch, and
/// no delete at all for a payment resolved before the sequencer took its first entry. A batch
/// without a queue entry keeps the write. Operations' keys in the index are left as they are.
void fold_recovery_into_log_queue(const std::string& payment_id, storage::Batch& batch);

/// The letters queue entries carry, per payment: its first and its last (by seq).
class RecoveryLetters {
public:
  void add(const std::string& payment_id, uint64_t seq, char letter);
  /// Per payment, the letter of its newest entry that carries one.
  std::map<std::string, char> newest() const;
  /// The index's writes these letters make, once their entries are taken: a payment last left
  /// in flight is indexed; one resolved is removed, unless its first letter here was its
  /// entering (a new payment, never indexed: nothing to write at all).
  void carry_over(storage::Batch& batch) const;

private:
  struct Seen {
    uint64_t first_seq;
    char first;
    uint64_t last_seq;
    char last;
  };
  std::map<std::string, Seen> seen_;
};

/// What the log's queue still says of the recovery index: RecoveryLetters::newest over it.
/// Whoever reads the index reads this first: an entry the sequencer takes meanwhile is then
/// seen here or there, never in neither.
Result<std::map<std::string, char>> recovery_letters_in_queue(storage::Store& store);
std::string audit_prefix(const std::string& payment_id);
/// True for a key under audit_prefix(payment_id) that holds entries (not the tally, nor a
/// format 1 head).
bool is_entries_key(std::string_view key, std::string_view payment_id);

std::string encode(const AuditEntry& e);
Result<AuditEntry> decode_audit(std::string_view json);
/// The entries of one stored value: a batch (array) or, from a store of format 1, one entry.
Result<std::vector<AuditEntry>> decode_audit_batch(std::string_view json);
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
/// The head a stored value leaves: its last entry's position.
Result<AuditHead> head_of(std::string_view stored_entries);

// -- repeated arrivals, counted ----------------------------------------------------------------
//
// A payment's chain holds every arrival one by one until it has kIndividualEntries entries.
// From then on, arrivals that change nothing (duplicates served from the stored answer,
// refusals) are counted per kind, fingerprint and merchant, with the times of the first and
// the last, and the counts are sealed into the chain as one `arrivals_counted` entry: before
// the payment's next other entry, when its actor ends, or every kSealEvery arrivals. Counts
// not yet sealed are kept under "<paymentId>/~tally" (riding along, like duplicates' entries).
// A burst of ten thousand replays costs a handful of entries, not ten thousand.

inline constexpr uint64_t kIndividualEntries = 64;
inline constexpr uint64_t kSealEvery = 1000;

/// True for the kinds of arrival that are counted once a chain is long: arrivals that change
/// nothing (duplicates, refusals).
bool is_repeat(AuditKind kind);

struct ArrivalCount {
  std::string kind;  ///< an AuditKind's name, or "other" for the rows past kMaxRows
  std::string fingerprint;  ///< what arrived (request fingerprint, event body hash)
  std::string merchant;
  uint64_t count = 0;
  int64_t first = 0;  ///< Unix ms
  int64_t last = 0;
};

class ArrivalTally {
public:
  /// Distinct (kind, fingerprint, merchant) rows at most; later ones share a last row of
  /// kind "other", so that varied refusals cannot grow it without bound.
  static constexpr size_t kMaxRows = 16;

  void add(const AuditEntry& e, int64_t now);
  bool empty() const { return rows_.empty(); }
  uint64_t total() const { return total_; }
  const std::vector<ArrivalCount>& rows() const { return rows_; }

  std::string encode() const;
  static Result<ArrivalTally> decode(std::string_view json);

private:
  std::vector<ArrivalCount> rows_;
  uint64_t total_ = 0;
};

std::string audit_tally_key(const std::string& payment_id);

/// The key id an instance's entries name as their signer, swapped when its key is rotated.
/// Thread-safe: every payment actor reads it.
class AuditSigner {
public:
  void set(std::string kid) {
    std::lock_guard lock(mutex_);
    kid_ = std::move(kid);
  }
  std::string kid() const {
    std::lock_guard lock(mutex_);
    return kid_;
  }

private:
  mutable std::mutex mutex_;
  std::string kid_;
};

/// Appends entries to one payment's chain in memory and yields the writes that store them.
class AuditChain {
public:
  void reset(AuditHead head) { head_ = std::move(head); }
  const AuditHead& head() const { return head_; }

  /// When several instances share the store, two of them may append to one payment's chain:
  /// a guarded chain puts each batch's key only where none is. Two batches chained from the
  /// same head start at the same seq, so have the same key: the second fails whole instead of
  /// forking the chain.
  void guard(bool on) { guarded_ = on; }

  /// Entries appended from now on name the key `signer` holds at the time (none: unsigned).
  void sign_as(const AuditSigner* signer) { signer_ = signer; }

  /// Adds an entry and returns it; `writes` receives it, in the key of the entries `writes`
  /// already holds for this payment or in a new one. The entry is stamped with the time now
  /// unless it carries one (an arrival answered earlier, an entry chained again after a lost
  /// race).
  AuditEntry append(const std::string& payment_id, AuditEntry entry, storage::Batch& writes);

private:
  void queue_for_log(const std::string& payment_id, int64_t time_ms, storage::Batch& writes) const;

  AuditHead head_;
  bool guarded_ = false;
  const AuditSigner* signer_ = nullptr;
};

}  // namespace idempay::domain
