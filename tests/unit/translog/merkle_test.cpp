// The log's Merkle tree against known answers: the eight-leaf tree of RFC 6962's reference
// tests (the leaves, the root of every prefix, inclusion and consistency proofs), as
// transparency-dev/merkle (Apache-2.0) publishes them in proof/verify_test.go; then every
// proof of every tree up to 64 leaves made from stored subtrees, checked by the RFC's
// verification algorithms, and refused once anything in it changes. (A proof does not bind the
// tree's size by itself: the size is bound with the root in a signed tree head.)
#include <gtest/gtest.h>

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

const std::vector<std::string> kLeaves = {
    unhex(""),         unhex("00"),       unhex("10"),
    unhex("2021"),     unhex("3031"),     unhex("40414243"),
    unhex("5051525354555657"), unhex("606162636465666768696a6b6c6d6e6f")};

const std::vector<std::string_view> kRoots = {
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"};

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

std::vector<Hash> hashed(const std::vector<std::string>& leaves) {
  std::vector<Hash> out;
  for (const auto& l : leaves) {
    out.push_back(leaf_hash(l));
  }
  return out;
}

TEST(MerkleTest, RootsOfTheReferenceTree) {
  auto leaves = hashed(kLeaves);
  Frontier frontier;
  std::vector<Subtree> completed;
  for (size_t n = 1; n <= kLeaves.size(); ++n) {
    frontier.append(leaves[n - 1], completed);
    EXPECT_EQ(frontier.root(), hex(kRoots[n - 1])) << n;
    EXPECT_EQ(root(n, store_of(leaves)).value(), hex(kRoots[n - 1])) << n;
  }
  EXPECT_EQ(crypto::to_hex(empty_root()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  for (const auto& s : completed) {
    EXPECT_EQ(s.hash, naive(leaves, s.begin, s.size)) << s.begin << "+" << s.size;
  }
  EXPECT_EQ(completed.size(), 4u + 2 + 1);  // an 8-leaf tree's interior nodes
}

TEST(MerkleTest, TheReferenceInclusionProofs) {
  auto leaves = hashed(kLeaves);
  struct Case {
    uint64_t leaf, size;  // leaf numbered from 1, as the reference has it
    std::vector<std::string_view> proof;
  };
  const std::vector<Case> cases = {
      {1, 1, {}},
      {1, 8, {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
              "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
              "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
      {6, 8, {"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
              "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
              "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
      {3, 3, {"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"}},
      {2, 5, {"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
              "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
              "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
  };
  for (const auto& c : cases) {
    std::vector<Hash> want;
    for (auto h : c.proof) {
      want.push_back(hex(h));
    }
    std::vector<Hash> prefix(leaves.begin(), leaves.begin() + c.size);
    EXPECT_EQ(inclusion_proof(c.leaf - 1, c.size, store_of(prefix)).value(), want) << c.leaf << "/" << c.size;
    EXPECT_TRUE(verify_inclusion(c.leaf - 1, c.size, leaves[c.leaf - 1], want, hex(kRoots[c.size - 1])));
  }
}

TEST(MerkleTest, TheReferenceConsistencyProofs) {
  auto leaves = hashed(kLeaves);
  struct Case {
    uint64_t size1, size2;
    std::vector<std::string_view> proof;
  };
  const std::vector<Case> cases = {
      {1, 1, {}},
      {1, 8, {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
              "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
              "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
      {6, 8, {"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
              "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
              "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
      {2, 5, {"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
              "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
      {6, 7, {"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
              "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
              "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
  };
  for (const auto& c : cases) {
    std::vector<Hash> want;
    for (auto h : c.proof) {
      want.push_back(hex(h));
    }
    std::vector<Hash> prefix(leaves.begin(), leaves.begin() + c.size2);
    EXPECT_EQ(consistency_proof(c.size1, c.size2, store_of(prefix)).value(), want) << c.size1 << "->" << c.size2;
    EXPECT_TRUE(verify_consistency(c.size1, c.size2, hex(kRoots[c.size1 - 1]), hex(kRoots[c.size2 - 1]), want));
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
