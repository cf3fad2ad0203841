// The log's Merkle tree against known answers: the eight-leaf tree of RFC 6962's reference
// tests (the leaves, the root of every prefix, inclusion and consistency proofs:
// tests/data/rfc6962-merkle-vectors.json, with its provenance); then every
// proof of every tree up to 64 leaves made from stored subtrees, checked by the RFC's
// verification algorithms, and refused once anything in it changes. (A proof does not bind the
// tree's size by itself: the size is bound with the root in a signed tree head.)
#include <gtest/gtest.h>

#include "idempay/base/private_files.hpp"
#include "idempay/translog/merkle.hpp"

namespace idempay::translog {
namespace {

Hash hex(std::string_view h) {
  Hash out{};
  EXPECT_TRUE(crypto::digest_from_hex(h, out)) << h;
  return out;
}

std::string unhex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i < h.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::vector<Hash> hexes(const JsonValue& list) {
  std::vector<Hash> out;
  for (const auto& h : list.items()) {
    out.push_back(hex(h.text()));
  }
  return out;
}

// tests/data/rfc6962-merkle-vectors.json (its provenance is in it): the same file the
// integration tests' own RFC 9162 implementation is checked against.
const JsonValue& vectors() {
  static const JsonValue v = read_json_file(std::string(IDEMPAY_TESTDATA_DIR) + "/rfc6962-merkle-vectors.json").value();
  return v;
}

std::vector<Hash> reference_leaves() {
  std::vector<Hash> out;
  for (const auto& l : vectors().find("leaves")->items()) {
    out.push_back(leaf_hash(unhex(l.text())));
  }
  return out;
}

// MTH computed from the leaves themselves, the RFC's definition read literally: the tests'
// stand-in for the stored subtrees (and what the stored ones must equal).
Hash naive(const std::vector<Hash>& leaves, uint64_t begin, uint64_t size) {
  if (size == 1) {
    return leaves[begin];
  }
  uint64_t k = 1;
  while (k * 2 < size) {
    k *= 2;
  }
  return node_hash(naive(leaves, begin, k), naive(leaves, begin + k, size - k));
}

// Stored subtrees of `leaves`, refusing any range a log would not store.
StoredSubtree store_of(const std::vector<Hash>& leaves) {
  return [&leaves](uint64_t begin, uint64_t size) -> Result<Hash> {
    if (size == 0 || (size & (size - 1)) != 0 || begin % size != 0 || begin + size > leaves.size()) {
      ADD_FAILURE() << "asked for a subtree no log stores: " << begin << "+" << size;
      return make_error(ErrorCode::kInternal, "not stored");
    }
    return naive(leaves, begin, size);
  };
}

TEST(MerkleTest, RootsOfTheReferenceTree) {
  auto leaves = reference_leaves();
  auto roots = hexes(*vectors().find("roots"));
  ASSERT_EQ(roots.size(), leaves.size());
  Frontier frontier;
  std::vector<Subtree> completed;
  for (size_t n = 1; n <= leaves.size(); ++n) {
    frontier.append(leaves[n - 1], completed);
    EXPECT_EQ(frontier.root(), roots[n - 1]) << n;
    EXPECT_EQ(root(n, store_of(leaves)).value(), roots[n - 1]) << n;
  }
  EXPECT_EQ(crypto::to_hex(empty_root()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  for (const auto& s : completed) {
    EXPECT_EQ(s.hash, naive(leaves, s.begin, s.size)) << s.begin << "+" << s.size;
  }
  EXPECT_EQ(completed.size(), 4u + 2 + 1);  // an 8-leaf tree's interior nodes
}

TEST(MerkleTest, TheReferenceInclusionProofs) {
  auto leaves = reference_leaves();
  auto roots = hexes(*vectors().find("roots"));
  for (const auto& c : vectors().find("inclusion")->items()) {
    auto leaf = static_cast<uint64_t>(c.int_or("leaf")), size = static_cast<uint64_t>(c.int_or("size"));
    auto want = hexes(*c.find("proof"));
    std::vector<Hash> prefix(leaves.begin(), leaves.begin() + size);
    EXPECT_EQ(inclusion_proof(leaf - 1, size, store_of(prefix)).value(), want) << leaf << "/" << size;
    EXPECT_TRUE(verify_inclusion(leaf - 1, size, leaves[leaf - 1], want, roots[size - 1]));
  }
}

TEST(MerkleTest, TheReferenceConsistencyProofs) {
  auto leaves = reference_leaves();
  auto roots = hexes(*vectors().find("roots"));
  for (const auto& c : vectors().find("consistency")->items()) {
    auto first = static_cast<uint64_t>(c.int_or("first")), second = static_cast<uint64_t>(c.int_or("second"));
    auto want = hexes(*c.find("proof"));
    std::vector<Hash> prefix(leaves.begin(), leaves.begin() + second);
    EXPECT_EQ(consistency_proof(first, second, store_of(prefix)).value(), want) << first << "->" << second;
    EXPECT_TRUE(verify_consistency(first, second, roots[first - 1], roots[second - 1], want));
  }
}

TEST(MerkleTest, EveryProofUpToSixtyFourLeavesVerifiesAndNoChangedOneDoes) {
  std::vector<Hash> leaves;
  std::vector<Hash> roots;  // roots[n]: the tree of n leaves
  Frontier frontier;
  std::vector<Subtree> completed;
  roots.push_back(frontier.root());
  for (int i = 0; i < 64; ++i) {
    leaves.push_back(leaf_hash("leaf " + std::to_string(i)));
    frontier.append(leaves.back(), completed);
    roots.push_back(frontier.root());
    ASSERT_EQ(roots.back(), naive(leaves, 0, leaves.size()));
  }
  auto stored = store_of(leaves);
  for (uint64_t size = 1; size <= 64; ++size) {
    for (uint64_t index = 0; index < size; ++index) {
      auto proof = inclusion_proof(index, size, stored).value();
      ASSERT_TRUE(verify_inclusion(index, size, leaves[index], proof, roots[size])) << index << "/" << size;
      EXPECT_FALSE(verify_inclusion(index, size, leaves[(index + 1) % 64], proof, roots[size]));
      if (size > 1) {  // the same leaf claimed at another place
        EXPECT_FALSE(verify_inclusion((index + 1) % size, size, leaves[index], proof, roots[size]));
      }
      if (!proof.empty()) {
        auto changed = proof;
        changed.back()[0] ^= 1;
        EXPECT_FALSE(verify_inclusion(index, size, leaves[index], changed, roots[size]));
        changed.pop_back();
        EXPECT_FALSE(verify_inclusion(index, size, leaves[index], changed, roots[size]));
      }
    }
    for (uint64_t old_size = 1; old_size <= size; ++old_size) {
      auto proof = consistency_proof(old_size, size, stored).value();
      ASSERT_TRUE(verify_consistency(old_size, size, roots[old_size], roots[size], proof)) << old_size << "->" << size;
      if (old_size < size) {
        EXPECT_FALSE(verify_consistency(old_size, size, roots[old_size - 1], roots[size], proof));
        EXPECT_FALSE(verify_consistency(old_size, size, roots[old_size], roots[size - 1], proof));
        auto changed = proof;
        changed.front()[31] ^= 0x10;
        EXPECT_FALSE(verify_consistency(old_size, size, roots[old_size], roots[size], changed));
        changed = proof;
        changed.push_back(roots[size]);
        EXPECT_FALSE(verify_consistency(old_size, size, roots[old_size], roots[size], changed));
      }
    }
  }
}

TEST(MerkleTest, AFrontierIsRebuiltOnlyFromARightEdge) {
  Frontier f;
  std::vector<Subtree> completed;
  for (int i = 0; i < 11; ++i) {
    f.append(leaf_hash(std::to_string(i)), completed);
  }
  auto again = Frontier::from(f.subtrees()).value();
  EXPECT_EQ(again.size(), 11u);
  EXPECT_EQ(again.root(), f.root());
  EXPECT_FALSE(Frontier::from({{0, 2, {}}, {2, 2, {}}}));  // two of one size
  EXPECT_FALSE(Frontier::from({{0, 3, {}}}));             // not a power of two
  EXPECT_FALSE(Frontier::from({{0, 4, {}}, {5, 1, {}}}));  // a gap
  EXPECT_FALSE(inclusion_proof(3, 3, store_of({})));
  EXPECT_FALSE(consistency_proof(0, 3, store_of({})));
  EXPECT_FALSE(consistency_proof(4, 3, store_of({})));
}

}  // namespace
}  // namespace idempay::translog
