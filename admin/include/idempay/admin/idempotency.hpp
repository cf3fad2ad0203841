#pragma once
// The Idempotency-Key guard in front of the operator API's mutating routes: the first answer
// to a key is stored in the connector's store (keyspace `idempotency`, keys "admin/<hash>")
// and every repeat gets it back byte for byte, marked `Idempotent-Replayed: true`.
//
//   no record, or an expired one    -> a "running" record is put (compare-and-swap), the route runs
//   running (its lease not over)    -> 409 with Retry-After: the first is still at work
//   running, lease over (a crash)   -> taken over by compare-and-swap, the route runs again (the
//                                      operation's own requestId, derived from the key, makes the
//                                      payment actor answer the first attempt's result if it got that far)
//   done, same body fingerprint     -> the stored answer, replayed
//   any record, another fingerprint -> 422
//
// A first attempt answered with a retryable error (5xx other than 501) does not keep the key:
// its record is deleted and the retry runs. A store that cannot be read or written answers 503
// and nothing runs unguarded.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "idempay/http/server.hpp"
#include "idempay/base/error.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::admin {

struct IdempotencyOptions {
  /// How long a stored answer is kept and replayed; older records are collected. Default: 24 h
  std::chrono::milliseconds retention{24 * 3600 * 1000};
  /// How long a "running" record keeps repeats away before another attempt may take over
  /// (longer than an acquirer call). Default: 60 s
  std::chrono::milliseconds lease{60'000};
  /// The keyspace the records live in, and the prefix of this guard's keys (each guard
  /// collects only its own).
  storage::Keyspace keyspace{2};
  std::string prefix = "admin/";
};

/// 1-255 printable ASCII characters (space to '~').
bool valid_idempotency_key(std::string_view key);

/// The body with object members sorted and insignificant whitespace dropped, so that the
/// same request written differently has one fingerprint. kInvalidArgument if not JSON.
Result<std::string> canonical_json(std::string_view body);

/// The stored record's key for a scope (operator, method, route) and a client's key, under
/// a guard's prefix.
std::string idempotency_record_key(std::string_view prefix, std::string_view operator_name, std::string_view method,
                                   std::string_view route, std::string_view key);

/// Runs a route once per key. Thread-safe; never blocks the caller (reads on the store's
/// reader threads, commits asynchronous).
class IdempotencyGuard {
public:
  using Route = std::function<void(std::function<void(http::Response)> done)>;

  IdempotencyGuard(storage::Store& store, IdempotencyOptions options);
  const IdempotencyOptions& options() const { return options_; }

  /// Answers `respond` with the stored answer for `record_key`, or runs `route` and stores
  /// what it answers. `fingerprint` identifies the request's body.
  void run(std::string record_key, std::string fingerprint, Route route, http::Responder respond);

  /// Deletes this guard's expired records (at most `limit` looked at); returns how many
  /// went. Blocking: for a store reader thread or a test.
  Result<size_t> collect_expired(size_t limit = 10'000);

private:
  struct Attempt;
  void decide(const std::shared_ptr<Attempt>& a, Result<std::optional<storage::Versioned>> stored);
  void start(const std::shared_ptr<Attempt>& a, std::optional<uint64_t> expected_etag);
  void finish(const std::shared_ptr<Attempt>& a, uint64_t running_etag, http::Response answer);
  void maybe_collect();

  storage::Store& store_;
  IdempotencyOptions options_;
  std::atomic<int64_t> last_collect_{0};
};

}  // namespace idempay::admin
