#pragma once
// The transparency log over every payment (RFC 9162's tree): each head a batch leaves on a
// payment's audit chain is queued in that batch (domain/audit.hpp) and appended here as a leaf
// by a sequencer; tree heads are then checked and co-signed by every instance sharing the store.
//
// In Space::kLog:
//   p/<time>/<paymentId>/<seq>  the queue: a head's hash, until appended
//   h                       the tree's right edge (Frontier) and size, compare-and-swapped
//   n/<level>/<index>       complete subtrees' hashes: at level 0 the leaf hash and the leaf,
//                           then from level 6 (kStoredSubtreeLeaves) up
//   x/<leaf hash hex>       a leaf's index, for inclusion proofs asked by hash
//   t/<size, 16 hex>        a tree head: size, root, time and the instances' signatures;
//                           those over an hour old thinned to the first of each hour
//   s                       the size of the newest tree head
// A round's leaves and nodes go in one atomic batch conditioned on `h`: a batch that commits
// moved the edge from the state it was computed on, so no leaf or node is ever written twice
// and several sequencers never fork the tree.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/receipts/key_ring.hpp"
#include "idempay/storage/store.hpp"
#include "idempay/translog/merkle.hpp"

namespace idempay::receipts {

inline constexpr std::string_view kTreeHeadType = "idempay-tree-head+jws";

/// A leaf's bytes: 0x01, the paymentId's length (2 bytes, big-endian) and bytes, the chain's
/// sequence number (8 bytes, big-endian) and head hash (32 bytes). kInvalidArgument for a
/// head that is not 64 hex digits or a paymentId over 65535 bytes.
Result<std::string> log_leaf(const std::string& payment_id, uint64_t seq, const std::string& head_hex);

/// Where the complete subtree of `size` leaves from `begin` is kept ("n/<level>/<index>"), and
/// leaf `index` (size 1), in Space::kLog.
std::string log_node_key(uint64_t begin, uint64_t size);

/// Interior nodes are stored for complete subtrees of at least this many leaves; a smaller one
/// is hashed from its leaves when a proof or a root needs it (one read of at most 32 leaves).
/// Each stored node is a write on the store's committer: below this size they would be nearly
/// one per leaf.
inline constexpr uint64_t kStoredSubtreeLeaves = 64;

/// A tree head and the compact JWSs of the instances that checked and signed it (each over the
/// same payload: {"log":"idempay","size":N,"root":hex,"timestamp":ms}).
struct TreeHead {
  uint64_t size = 0;
  translog::Hash root{};
  int64_t timestamp = 0;  ///< Unix ms, when it was made
  std::vector<std::string> signatures;

  std::string payload() const;
};
std::string encode(const TreeHead& head);
Result<TreeHead> decode_tree_head(std::string_view json);

/// Reads the log (any thread that may block: the store's readers, tools).
class LogReader {
public:
  explicit LogReader(storage::Store& store) : store_(store) {}

  /// The newest tree head; nullopt while there is none.
  Result<std::optional<TreeHead>> newest() const;
  /// The tree head of that size; kNotFound if none was made.
  Result<TreeHead> at(uint64_t size) const;
  /// The index of the leaf of that hash; kNotFound if not (yet) appended.
  Result<uint64_t> index_of(const translog::Hash& leaf) const;
  Result<std::vector<translog::Hash>> inclusion_proof(uint64_t index, uint64_t size) const;
  Result<std::vector<translog::Hash>> consistency_proof(uint64_t old_size, uint64_t size) const;
  Result<translog::Hash> root(uint64_t size) const;
  /// Leaf `index`'s bytes, as appended.
  Result<std::string> leaf(uint64_t index) const;
  /// The number of leaves appended.
  Result<uint64_t> size() const;

private:
  translog::StoredSubtree subtrees() const;
  Result<translog::Hash> hash_of_leaves(uint64_t begin, uint64_t size) const;
  storage::Store& store_;
};

struct LogOptions {
  /// Between rounds when the queue is empty. Default: 1 s
  std::chrono::milliseconds interval{1000};
  /// Where this instance keeps the newest tree head it signed: its own view of the log, outside
  /// the shared store, so that a store rewritten behind its back is caught.
  std::string witness_file;
  /// Signatures a tree head needs to count as published. Default: 1
  size_t quorum = 1;
};

/// What the instance's last check of the log found.
struct LogHealth {
  bool consistent = true;
  std::string problem;  ///< why not, naming the sizes and roots
  uint64_t signed_size = 0;  ///< the newest tree head this instance signed
};

/// Appends queued heads, makes tree heads, checks and co-signs them: one thread of its own,
/// which blocks on the store (never an I/O thread or an actor's).
class TransparencyLog {
public:
  TransparencyLog(storage::Store& store, std::shared_ptr<const KeyRing> keys, LogOptions options);
  ~TransparencyLog();
  TransparencyLog(const TransparencyLog&) = delete;
  TransparencyLog& operator=(const TransparencyLog&) = delete;

  /// Reads the witness file; kInvalidArgument if it cannot be read.
  Status start();
  void stop();
  /// Runs one round now (appends, makes a tree head, checks and signs it) and returns when done.
  Status round();

  LogHealth health() const;
  size_t quorum() const { return options_.quorum; }

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  LogOptions options_;
};

}  // namespace idempay::receipts
