#include "idempay/translog/merkle.hpp"

#include <cstring>

namespace idempay::translog {

namespace {

// The largest power of two smaller than n (n >= 2).
uint64_t split_point(uint64_t n) {
  uint64_t k = 1;
  while (k << 1 < n) {
    k <<= 1;
  }
  return k;
}

bool is_power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

Hash hash_with_prefix(uint8_t prefix, std::string_view a, std::string_view b = {}) {
  std::string input;
  input.reserve(1 + a.size() + b.size());
  input += static_cast<char>(prefix);
  input.append(a);
  input.append(b);
  return crypto::sha256(input);
}

std::string_view bytes(const Hash& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

// MTH(D[begin, begin + size)), reading complete subtrees from the store (every power-of-two
// range this recursion meets is aligned: see the header).
Result<Hash> range_hash(uint64_t begin, uint64_t size, const StoredSubtree& stored) {
  if (is_power_of_two(size)) {
    return stored(begin, size);
  }
  uint64_t k = split_point(size);
  auto left = range_hash(begin, k, stored);
  if (!left) {
    return left;
  }
  auto right = range_hash(begin + k, size - k, stored);
  if (!right) {
    return right;
  }
  return node_hash(*left, *right);
}

// PATH(m, D[begin, begin + size)), appended to `out` (RFC 9162 2.1.3.1).
Status path(uint64_t m, uint64_t begin, uint64_t size, const StoredSubtree& stored, std::vector<Hash>& out) {
  if (size <= 1) {
    return {};
  }
  uint64_t k = split_point(size);
  bool left = m < k;
  if (auto s = left ? path(m, begin, k, stored, out) : path(m - k, begin + k, size - k, stored, out); !s) {
    return s;
  }
  auto sibling = left ? range_hash(begin + k, size - k, stored) : range_hash(begin, k, stored);
  if (!sibling) {
    return tl::unexpected(sibling.error());
  }
  out.push_back(*sibling);
  return {};
}

// SUBPROOF(m, D[begin, begin + size), b), appended to `out` (RFC 9162 2.1.4.1).
Status subproof(uint64_t m, uint64_t begin, uint64_t size, bool b, const StoredSubtree& stored,
                std::vector<Hash>& out) {
  if (m == size) {
    if (!b) {
      auto whole = range_hash(begin, size, stored);
      if (!whole) {
        return tl::unexpected(whole.error());
      }
      out.push_back(*whole);
    }
    return {};
  }
  uint64_t k = split_point(size);
  bool left = m <= k;
  if (auto s = left ? subproof(m, begin, k, b, stored, out) : subproof(m - k, begin + k, size - k, false, stored, out);
      !s) {
    return s;
  }
  auto other = left ? range_hash(begin + k, size - k, stored) : range_hash(begin, k, stored);
  if (!other) {
    return tl::unexpected(other.error());
  }
  out.push_back(*other);
  return {};
}

// Right-shifts fn and sn together until fn's lowest bit is set or fn is 0.
void shift_while_even(uint64_t& fn, uint64_t& sn) {
  while (fn != 0 && (fn & 1) == 0) {
    fn >>= 1;
    sn >>= 1;
  }
}

}  // namespace

Hash leaf_hash(std::string_view leaf) { return hash_with_prefix(0x00, leaf); }

Hash node_hash(const Hash& left, const Hash& right) { return hash_with_prefix(0x01, bytes(left), bytes(right)); }

Hash empty_root() { return crypto::sha256(""); }

Result<Hash> root(uint64_t size, const StoredSubtree& stored) {
  return size == 0 ? Result<Hash>(empty_root()) : range_hash(0, size, stored);
}

Result<std::vector<Hash>> inclusion_proof(uint64_t index, uint64_t size, const StoredSubtree& stored) {
  if (index >= size) {
    return make_error(ErrorCode::kInvalidArgument, "no such leaf in a tree of that size");
  }
  std::vector<Hash> out;
  if (auto s = path(index, 0, size, stored, out); !s) {
    return tl::unexpected(s.error());
  }
  return out;
}

Result<std::vector<Hash>> consistency_proof(uint64_t old_size, uint64_t size, const StoredSubtree& stored) {
  if (old_size == 0 || old_size > size) {
    return make_error(ErrorCode::kInvalidArgument, "a consistency proof needs 0 < old size <= size");
  }
  std::vector<Hash> out;
  if (auto s = subproof(old_size, 0, size, true, stored, out); !s) {
    return tl::unexpected(s.error());
  }
  return out;
}

bool verify_inclusion(uint64_t index, uint64_t size, const Hash& leaf, const std::vector<Hash>& proof,
                      const Hash& root_hash) {
  if (index >= size) {
    return false;
  }
  uint64_t fn = index, sn = size - 1;
  Hash r = leaf;
  for (const Hash& p : proof) {
    if (sn == 0) {
      return false;
    }
    if ((fn & 1) == 1 || fn == sn) {
      r = node_hash(p, r);
      if ((fn & 1) == 0) {
        shift_while_even(fn, sn);
      }
    } else {
      r = node_hash(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn == 0 && r == root_hash;
}

bool verify_consistency(uint64_t old_size, uint64_t size, const Hash& old_root, const Hash& root_hash,
                        const std::vector<Hash>& proof) {
  if (old_size > size) {
    return false;
  }
  if (old_size == size) {
    return proof.empty() && old_root == root_hash;
  }
  if (old_size == 0) {
    return proof.empty();  // the empty tree is a prefix of every tree
  }
  if (proof.empty()) {
    return false;
  }
  std::vector<Hash> path_hashes;
  if (is_power_of_two(old_size)) {
    path_hashes.push_back(old_root);
  }
  path_hashes.insert(path_hashes.end(), proof.begin(), proof.end());
  uint64_t fn = old_size - 1, sn = size - 1;
  while ((fn & 1) == 1) {
    fn >>= 1;
    sn >>= 1;
  }
  Hash fr = path_hashes.front(), sr = path_hashes.front();
  for (size_t i = 1; i < path_hashes.size(); ++i) {
    const Hash& c = path_hashes[i];
    if (sn == 0) {
      return false;
    }
    if ((fn & 1) == 1 || fn == sn) {
      fr = node_hash(c, fr);
      sr = node_hash(c, sr);
      if ((fn & 1) == 0) {
        shift_while_even(fn, sn);
      }
    } else {
      sr = node_hash(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return fr == old_root && sr == root_hash && sn == 0;
}

Result<Frontier> Frontier::from(std::vector<Subtree> subtrees) {
  Frontier f;
  uint64_t previous = 0;
  for (const auto& s : subtrees) {
    if (!is_power_of_two(s.size) || s.begin != f.size_ || (previous != 0 && s.size >= previous)) {
      return make_error(ErrorCode::kInvalidArgument, "not the right edge of a Merkle tree");
    }
    previous = s.size;
    f.size_ += s.size;
  }
  f.subtrees_ = std::move(subtrees);
  return f;
}

Hash Frontier::root() const {
  if (subtrees_.empty()) {
    return empty_root();
  }
  Hash r = subtrees_.back().hash;
  for (size_t i = subtrees_.size() - 1; i-- > 0;) {
    r = node_hash(subtrees_[i].hash, r);
  }
  return r;
}

void Frontier::append(const Hash& leaf, std::vector<Subtree>& completed) {
  subtrees_.push_back({size_, 1, leaf});
  ++size_;
  while (subtrees_.size() >= 2 && subtrees_[subtrees_.size() - 2].size == subtrees_.back().size) {
    Subtree right = subtrees_.back();
    subtrees_.pop_back();
    Subtree& left = subtrees_.back();
    left.hash = node_hash(left.hash, right.hash);
    left.size *= 2;
    completed.push_back(left);
  }
}

}  // namespace idempay::translog
