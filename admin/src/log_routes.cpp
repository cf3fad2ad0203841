#include "log_routes.hpp"

#include "idempay/base/json_writer.hpp"
#include "idempay/http/problem.hpp"
#include "idempay/receipts/log.hpp"

namespace idempay::admin {

namespace {

http::Response failure(const Error& e) {
  switch (e.code) {
    case ErrorCode::kNotFound:
      return http::problem(404, "Not Found", e.message);
    case ErrorCode::kInvalidArgument:
      return http::problem(400, "Bad Request", e.message);
    default:
      return http::problem(503, "Service Unavailable", "the log cannot be read; retry");
  }
}

void write_hashes(JsonWriter& w, const std::vector<translog::Hash>& hashes) {
  w.begin_array();
  for (const auto& h : hashes) {
    w.string(crypto::to_hex(h));
  }
  w.end_array();
}

http::Response json(std::string body) {
  http::Response r(200, std::move(body));
  r.headers.push_back({"access-control-allow-origin", "*"});  // a verifier saved to disk may ask
  r.headers.push_back({"cache-control", "no-cache"});
  return r;
}

// The tree size a proof is asked against: the one given, or the newest published.
Result<uint64_t> size_or_newest(receipts::LogReader& log, std::optional<uint64_t> size) {
  if (size) {
    return *size;
  }
  auto newest = log.newest();
  if (!newest) {
    return tl::unexpected(newest.error());
  }
  if (!*newest) {
    return make_error(ErrorCode::kNotFound, "no tree head published yet");
  }
  return (*newest)->size;
}

}  // namespace

http::Response tree_head_answer(storage::Store& store, std::optional<uint64_t> size, size_t quorum) {
  receipts::LogReader log(store);
  Result<receipts::TreeHead> head = make_error(ErrorCode::kNotFound, "no tree head published yet");
  if (size) {
    head = log.at(*size);
  } else if (auto newest = log.newest(); !newest) {
    head = tl::unexpected(newest.error());
  } else if (*newest) {
    head = std::move(**newest);
  }
  if (!head) {
    return failure(head.error());
  }
  JsonWriter w;
  w.begin_object()
      .key("size").number(static_cast<int64_t>(head->size))
      .key("root").string(crypto::to_hex(head->root))
      .key("timestamp").number(head->timestamp)
      .key("quorum").number(static_cast<int64_t>(quorum))
      .key("signatures").begin_array();
  for (const auto& s : head->signatures) {
    w.string(s);
  }
  w.end_array().end_object();
  return json(std::move(w).take());
}

http::Response inclusion_answer(storage::Store& store, std::string_view leaf_hash, std::optional<uint64_t> tree_size) {
  translog::Hash leaf{};
  if (!crypto::digest_from_hex(leaf_hash, leaf)) {
    return failure(Error{ErrorCode::kInvalidArgument, "leafHash must be a SHA-256 in hex"});
  }
  receipts::LogReader log(store);
  auto size = size_or_newest(log, tree_size);
  auto index = size ? log.index_of(leaf) : Result<uint64_t>(tl::unexpected(size.error()));
  if (!index) {
    return failure(index.error());
  }
  if (*index >= *size) {
    return failure(Error{ErrorCode::kNotFound, "the leaf was appended after that tree head; ask a newer one"});
  }
  auto proof = log.inclusion_proof(*index, *size);
  if (!proof) {
    return failure(proof.error());
  }
  JsonWriter w;
  w.begin_object()
      .key("leafIndex").number(static_cast<int64_t>(*index))
      .key("treeSize").number(static_cast<int64_t>(*size))
      .key("proof");
  write_hashes(w, *proof);
  w.end_object();
  return json(std::move(w).take());
}

http::Response consistency_answer(storage::Store& store, uint64_t first, uint64_t second) {
  receipts::LogReader log(store);
  auto size = log.size();
  if (!size) {
    return failure(size.error());
  }
  if (first == 0 || first > second || second > *size) {
    return failure(Error{ErrorCode::kInvalidArgument, "need 0 < first <= second <= the log's size"});
  }
  auto proof = log.consistency_proof(first, second);
  if (!proof) {
    return failure(proof.error());
  }
  JsonWriter w;
  w.begin_object()
      .key("first").number(static_cast<int64_t>(first))
      .key("second").number(static_cast<int64_t>(second))
      .key("proof");
  write_hashes(w, *proof);
  w.end_object();
  return json(std::move(w).take());
}

}  // namespace idempay::admin
