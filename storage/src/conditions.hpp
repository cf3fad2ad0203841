#pragma once
// The compare-and-swap rule, one implementation for every store: each write's condition is
// checked against the store as the writes staged before it leave it (earlier batches of the
// same group, and this batch's own earlier writes), and a batch passes whole or not at all.
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "idempay/storage/store.hpp"

namespace idempay::storage {

/// kInvalidArgument unless every write of `batch` names one of the store's `count` keyspaces.
inline Status known_keyspaces(const Batch& batch, size_t count) {
  for (const Write& w : batch) {
    if (w.keyspace.index >= count) {
      return make_error(ErrorCode::kInvalidArgument, "no keyspace " + std::to_string(w.keyspace.index));
    }
  }
  return {};
}

/// A write's (keyspace, key); the key is the write's own bytes, which outlive the group.
using StagedKey = std::pair<size_t, std::string_view>;

struct StagedKeyHash {
  size_t operator()(const StagedKey& k) const noexcept {
    return std::hash<std::string_view>()(k.second) ^ (k.first * 0x9e3779b97f4a7c15ULL);
  }
};

/// Etags as the batches staged so far leave them, by (keyspace, key). Its keys point into
/// the batches: it must not outlive them.
using StagedEtags = std::unordered_map<StagedKey, uint64_t, StagedKeyHash>;

/// The new etag of each write of `batch` (0 for deletes), or kConflict; `staged` takes this
/// batch's etags only if it passes. `stored(write)` reads a key's etag from the store
/// (0 if absent); it is not asked for blind writes, whose etag starts again at 1.
/// `previous`, if given, receives the etag each write found (0: absent, or blind and unknown).
template <class StoredEtag>
CommitResult check_conditions(const Batch& batch, StagedEtags& staged, StoredEtag&& stored,
                              std::vector<uint64_t>* previous = nullptr) {
  std::vector<uint64_t> etags;
  etags.reserve(batch.size());
  // This batch's own writes, merged into `staged` only if the whole batch passes: the cost
  // is per write, never per batch already in the group.
  StagedEtags local;
  local.reserve(batch.size());
  for (const Write& w : batch) {
    StagedKey id{w.keyspace.index, w.key};
    uint64_t current = 0;
    if (auto it = local.find(id); it != local.end()) {
      current = it->second;
    } else if (auto st = staged.find(id); st != staged.end()) {
      current = st->second;
    } else if (!w.blind || w.expected_etag) {
      Result<uint64_t> read = stored(w);
      if (!read) {
        return tl::unexpected(read.error());
      }
      current = *read;
    }
    if (w.expected_etag && *w.expected_etag != current) {
      return make_error(ErrorCode::kConflict, "etag mismatch on " + w.key);
    }
    // Etags keep counting across deletes so that a deleted-then-recreated key never reuses
    // an etag a stale writer may still hold.
    local[id] = current + 1;
    etags.push_back(w.value ? current + 1 : 0);
    if (previous != nullptr) {
      previous->push_back(current);
    }
  }
  for (auto& [id, etag] : local) {
    staged[id] = etag;
  }
  return etags;
}

}  // namespace idempay::storage
