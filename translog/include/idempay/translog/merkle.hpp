#pragma once
// The Merkle tree of a transparency log, as RFC 9162 section 2.1 defines it (the same tree as
// RFC 6962's): leaf hashes SHA-256(0x00 || leaf), interior nodes SHA-256(0x01 || left ||
// right), the tree of n leaves split at the largest power of two below n. Inclusion and
// consistency proofs are made from the hashes of complete subtrees — the only nodes a log
// stores — and checked by the RFC's verification algorithms, which need nothing but hashes.
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "idempay/base/crypto.hpp"
#include "idempay/base/error.hpp"

namespace idempay::translog {

using Hash = crypto::Digest;

Hash leaf_hash(std::string_view leaf);
Hash node_hash(const Hash& left, const Hash& right);
/// The hash of the empty tree: SHA-256 of nothing.
Hash empty_root();

/// The hash of the complete subtree of `size` leaves (a power of two) starting at leaf `begin`
/// (a multiple of `size`): what the log stores. An error ends the proof being made.
using StoredSubtree = std::function<Result<Hash>(uint64_t begin, uint64_t size)>;

/// The root of the tree of the first `size` leaves.
Result<Hash> root(uint64_t size, const StoredSubtree& stored);
/// PATH(index, D[size]): kInvalidArgument unless index < size.
Result<std::vector<Hash>> inclusion_proof(uint64_t index, uint64_t size, const StoredSubtree& stored);
/// PROOF(old_size, D[size]): kInvalidArgument unless 0 < old_size <= size.
Result<std::vector<Hash>> consistency_proof(uint64_t old_size, uint64_t size, const StoredSubtree& stored);

/// RFC 9162 section 2.1.3.2.
bool verify_inclusion(uint64_t index, uint64_t size, const Hash& leaf, const std::vector<Hash>& proof,
                      const Hash& root);
/// RFC 9162 section 2.1.4.2 (sizes 0 < old_size <= size; equal sizes need equal roots and no proof).
bool verify_consistency(uint64_t old_size, uint64_t size, const Hash& old_root, const Hash& root,
                        const std::vector<Hash>& proof);

/// A complete subtree: `size` leaves from `begin`, and its hash.
struct Subtree {
  uint64_t begin = 0;
  uint64_t size = 0;
  Hash hash{};
};

/// The right edge of a tree of n leaves: one complete subtree per bit set in n, largest first.
/// Enough to append leaves and to compute the root without reading anything else.
class Frontier {
public:
  Frontier() = default;
  /// kInvalidArgument unless `subtrees` are the frontier of a tree (sizes the bits of its size).
  static Result<Frontier> from(std::vector<Subtree> subtrees);

  uint64_t size() const { return size_; }
  const std::vector<Subtree>& subtrees() const { return subtrees_; }
  Hash root() const;

  /// Appends a leaf (its hash); every complete subtree of two or more leaves it completes is
  /// added to `completed` (to be stored), smallest first.
  void append(const Hash& leaf, std::vector<Subtree>& completed);

private:
  std::vector<Subtree> subtrees_;
  uint64_t size_ = 0;
};

}  // namespace idempay::translog
