#include "idempay/receipts/log_audit.hpp"

#include <algorithm>
#include <map>

#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/domain/audit.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/receipts/key_ring.hpp"
#include "idempay/receipts/log.hpp"
#include "idempay/signing/jose.hpp"

namespace idempay::receipts {

using domain::Space;
using translog::Hash;

namespace {

constexpr size_t kPage = 1000;

struct ParsedLeaf {
  std::string payment_id;
  uint64_t seq = 0;
  std::string head_hex;
};

std::optional<ParsedLeaf> parse_leaf(std::string_view leaf) {
  if (leaf.size() < 3 || leaf[0] != '\x01') {
    return std::nullopt;
  }
  size_t id_size = static_cast<uint8_t>(leaf[1]) << 8 | static_cast<uint8_t>(leaf[2]);
  if (leaf.size() != 3 + id_size + 8 + 32) {
    return std::nullopt;
  }
  ParsedLeaf out;
  out.payment_id = std::string(leaf.substr(3, id_size));
  for (size_t i = 0; i < 8; ++i) {
    out.seq = out.seq << 8 | static_cast<uint8_t>(leaf[3 + id_size + i]);
  }
  out.head_hex = crypto::to_hex(reinterpret_cast<const uint8_t*>(leaf.data() + 3 + id_size + 8), 32);
  return out;
}

Hash first_hash(std::string_view value) {
  Hash h{};
  std::copy(value.begin(), value.begin() + std::min(value.size(), h.size()), h.begin());
  return h;
}

class Replay {
public:
  Replay(storage::Store& store, std::vector<LogProblem>& problems) : store_(store), problems_(problems) {}

  // The tree heads, by size: checked when the replay reaches their size.
  Status read_tree_heads() {
    std::string after = "t/";
    for (;;) {
      auto rows = store_.scan_after(Space::kLog, after, kPage);
      if (!rows) {
        return tl::unexpected(rows.error());
      }
      for (const auto& [key, stored] : *rows) {
        if (key.compare(0, 2, "t/") != 0) {
          return {};
        }
        auto head = decode_tree_head(stored.value);
        if (!head) {
          problem("tree head " + key.substr(2), "unreadable");
          continue;
        }
        heads_[head->size] = std::move(*head);
      }
      if (rows->size() < kPage) {
        return {};
      }
      after = rows->back().first;
    }
  }

  // The log's size when the check starts: a running instance may append while it reads, so
  // only the leaves up to it are replayed, and later tree heads are weighed against the size
  // the log has by then.
  Status read_edge() {
    auto size = LogReader(store_).size();
    if (!size) {
      return tl::unexpected(size.error());
    }
    edge_size_ = *size;
    return {};
  }

  // Every leaf, in order, each checked and appended to a tree rebuilt here.
  Status replay_leaves() {
    std::string after = "n/00/";
    for (;;) {
      auto rows = store_.scan_after(Space::kLog, after, kPage);
      if (!rows) {
        return tl::unexpected(rows.error());
      }
      for (const auto& [key, stored] : *rows) {
        if (key.compare(0, 5, "n/00/") != 0 || tree_.size() == edge_size_) {
          return {};
        }
        if (auto s = check_leaf(key, stored.value); !s) {
          return s;
        }
      }
      if (rows->size() < kPage) {
        return {};
      }
      after = rows->back().first;
    }
  }

  // What the replay ends with against the stored right edge and the tree heads beyond it.
  void check_end(const std::vector<signing::PublicKey>& anchor) {
    LogReader reader(store_);
    if (edge_size_ != tree_.size()) {
      problem("the right edge", "says " + std::to_string(edge_size_) + " leaves; the log holds " +
                                    std::to_string(tree_.size()));
    } else if (auto root = reader.root(edge_size_); !root || *root != tree_.root()) {
      problem("the right edge", "its root is not the leaves' root");
    }
    auto size_now = reader.size();  // tree heads made while this check ran may be larger
    for (const auto& [size_of, head] : heads_) {
      uint64_t log_size = size_now ? std::max(*size_now, edge_size_) : edge_size_;
      if (size_of > tree_.size() && size_of <= edge_size_) {
        problem("tree head " + std::to_string(size_of), "covers leaves the log no longer holds (it holds " +
                                                            std::to_string(tree_.size()) + "): the log was cut back");
      } else if (size_of > log_size) {
        problem("tree head " + std::to_string(size_of),
                "is beyond the log's " + std::to_string(log_size) + " leaves: the log was cut back");
      }
      check_signatures(head, anchor);
    }
  }

private:
  Status check_leaf(const std::string& key, const std::string& value) {
    uint64_t index = tree_.size();
    std::string place = "leaf " + std::to_string(index);
    if (key != log_node_key(index, 1)) {
      problem(place, "missing: the next stored leaf is " + key);
      gap_ = true;
      return {};
    }
    if (gap_) {
      return {};
    }
    Hash hash = translog::leaf_hash(std::string_view(value).substr(std::min<size_t>(32, value.size())));
    if (value.size() < 32 || first_hash(value) != hash) {
      problem(place, "its stored hash is not its bytes' hash");
    }
    auto leaf = parse_leaf(std::string_view(value).substr(std::min<size_t>(32, value.size())));
    if (!leaf) {
      problem(place, "not a leaf this idempay writes");
    } else if (auto s = check_chain(place, *leaf); !s) {
      return s;
    }
    auto indexed = store_.get(Space::kLog, "x/" + crypto::to_hex(hash));
    if (!indexed) {
      return tl::unexpected(indexed.error());
    }
    if (!*indexed || (*indexed)->value != std::to_string(index)) {
      problem(place, "its index entry does not name it");
    }
    std::vector<translog::Subtree> completed;
    tree_.append(hash, completed);
    for (const auto& s : completed) {
      if (s.size < kStoredSubtreeLeaves) {
        continue;  // hashed from the leaves when needed (stores of an earlier version keep them too)
      }
      auto stored = store_.get(Space::kLog, log_node_key(s.begin, s.size));
      if (!stored || !*stored || first_hash((*stored)->value) != s.hash) {
        problem("the node of leaves " + std::to_string(s.begin) + "+" + std::to_string(s.size),
                "is not its leaves' hash");
      }
    }
    if (auto head = heads_.find(tree_.size()); head != heads_.end() && head->second.root != tree_.root()) {
      problem("tree head " + std::to_string(tree_.size()), "its root is not the root of the log's first " +
                                                                 std::to_string(tree_.size()) + " leaves");
    }
    return {};
  }

  // The audit entry a leaf names must be there, with the hash the leaf holds.
  Status check_chain(const std::string& place, const ParsedLeaf& leaf) {
    // The batch holding entry `seq`: the last one that starts at or before it.
    auto batch = store_.last_in(Space::kAudit, domain::audit_prefix(leaf.payment_id),
                                domain::audit_key(leaf.payment_id, leaf.seq + 1));
    if (!batch) {
      return tl::unexpected(batch.error());
    }
    std::string what = place + " (payment " + leaf.payment_id + ", audit entry " + std::to_string(leaf.seq) + ")";
    auto entries = *batch ? domain::decode_audit_batch((*batch)->second.value)
                          : Result<std::vector<domain::AuditEntry>>(std::vector<domain::AuditEntry>());
    auto entry = entries ? std::find_if(entries->begin(), entries->end(),
                                        [&leaf](const domain::AuditEntry& e) { return e.seq == leaf.seq; })
                         : std::vector<domain::AuditEntry>::iterator();
    if (entries && entry == entries->end()) {
      problem(what, "names an audit entry the store does not hold: the payment's history was removed");
      return {};
    }
    if (!entries || entry->hash != leaf.head_hex) {
      problem(what, "the audit entry's hash is not the one the log holds: the history was rewritten");
    }
    return {};
  }

  void check_signatures(const TreeHead& head, const std::vector<signing::PublicKey>& anchor) {
    std::string place = "tree head " + std::to_string(head.size);
    for (const auto& token : head.signatures) {
      auto jws = signing::parse_compact(token);
      if (!jws) {
        problem(place, "a signature is not a JWS");
        continue;
      }
      auto key = std::find_if(anchor.begin(), anchor.end(), [&](const auto& k) { return k.kid == jws->kid; });
      if (key == anchor.end()) {
        problem(place, "signed by key " + jws->kid + ", which is not published");
      } else if (!signing::verify_compact(*jws, *key) || jws->typ != kTreeHeadType) {
        problem(place, "the signature of key " + jws->kid + " does not verify");
      } else if (jws->payload != head.payload()) {
        problem(place, "key " + jws->kid + " signed another tree head");
      }
    }
  }

  void problem(std::string place, std::string what) { problems_.push_back({std::move(place), std::move(what)}); }

  storage::Store& store_;
  std::vector<LogProblem>& problems_;
  std::map<uint64_t, TreeHead> heads_;
  translog::Frontier tree_;
  bool gap_ = false;
  uint64_t edge_size_ = 0;
};

}  // namespace

Result<std::vector<LogProblem>> verify_log(storage::Store& store) {
  std::vector<LogProblem> problems;
  auto anchor = published_keys(store);
  if (!anchor) {
    return tl::unexpected(anchor.error());
  }
  Replay replay(store, problems);
  if (auto s = replay.read_edge(); !s) {
    return tl::unexpected(s.error());
  }
  if (auto s = replay.read_tree_heads(); !s) {
    return tl::unexpected(s.error());
  }
  if (auto s = replay.replay_leaves(); !s) {
    return tl::unexpected(s.error());
  }
  replay.check_end(*anchor);
  return problems;
}

}  // namespace idempay::receipts
