#pragma once
// The transparency log's public routes (/log/v1/): tree heads and the proofs a verifier asks
// for. Read on a store reader thread; only hashes, sizes and signatures leave: a proof is
// asked by a leaf's hash, which only a receipt's holder can compute.
#include <cstdint>
#include <optional>
#include <string_view>

#include "idempay/http/server.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::admin {

/// GET /log/v1/tree-head: the newest published tree head (`size`: that one, published or not).
http::Response tree_head_answer(storage::Store& store, std::optional<uint64_t> size, size_t quorum);
/// GET /log/v1/proof/inclusion?leafHash=HEX&treeSize=N (treeSize: the newest published).
http::Response inclusion_answer(storage::Store& store, std::string_view leaf_hash, std::optional<uint64_t> tree_size);
/// GET /log/v1/proof/consistency?first=N&second=M.
http::Response consistency_answer(storage::Store& store, uint64_t first, uint64_t second);

}  // namespace idempay::admin
