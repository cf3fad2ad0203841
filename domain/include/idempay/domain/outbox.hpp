#pragma once
// Callback deliveries: the outbox record, and the retry policy as pure functions.
#include <chrono>
#include <cstdint>
#include <random>
#include <string>

#include "idempay/base/error.hpp"

namespace idempay::domain {

/// What came of one callback attempt: an HTTP status, or an error before any status was read.
struct CallbackResult {
  unsigned status = 0;  ///< 0 if no response
  Error error;          ///< meaningful when status == 0
  int64_t retry_after_seconds = -1;  ///< from a Retry-After header, -1 if none
};

struct CallbackOptions {
  /// First retry delay; later ones double, each drawn with full jitter. Default: 5 s
  std::chrono::milliseconds retry_base{5'000};
  /// Longest delay between two attempts. Default: 1 h
  std::chrono::milliseconds retry_cap{3'600'000};
  /// After this long without success a delivery becomes a dead letter. Default: 7 days
  std::chrono::milliseconds retry_window{7LL * 24 * 3'600'000};
  /// Attempts in flight to one host at most. Default: 4
  int max_per_destination = 4;
};

/// A callback waiting for delivery (the outbox), or given up on (a dead letter).
struct OutboxEntry {
  std::string id;  ///< stable delivery id, the webhook-id
  std::string payment_id;
  std::string merchant;  ///< the payment's owner: whose callback credentials the attempt carries
  std::string url;
  std::string body;
  int attempts = 0;
  int64_t created_at = 0;       ///< Unix ms; the retry window starts here
  int64_t next_attempt_at = 0;  ///< Unix ms
  unsigned last_status = 0;
  std::string last_error;
  std::string dead_reason;  ///< set once it is a dead letter
  /// Instances sharing the store: the one making an attempt, until when (Unix ms). Nobody
  /// else attempts it before then; a dead instance's claim passes to others once it expires.
  std::string claim_owner;
  int64_t claim_until = 0;
  /// The payment's trace (PaymentRecord::trace, ::trace_state): each attempt is a span of it,
  /// and the callback carries it to the gateway. Empty: none.
  std::string trace;
  std::string trace_state;
};

/// Whether `instance` may claim the entry now: due, and nobody else's claim is live.
bool claimable(const OutboxEntry& e, const std::string& instance, int64_t now);

std::string encode(const OutboxEntry& e);
Result<OutboxEntry> decode_outbox(std::string_view json);

/// How a failed attempt is treated.
enum class FailureKind {
  kRetry,      ///< 5xx, 408, 429, timeouts, connection failures
  kRetrySlow,  ///< other 4xx: probably needs a human, retried on the slow lane
  kPermanent,  ///< 410 Gone, redirects, refused destinations, malformed URLs: dead letter now
};
FailureKind classify(const CallbackResult& r);

/// Delay before attempt number `attempt` (1-based count of failures so far): full jitter over
/// min(cap, base * 2^(attempt-1)), at least the receiver's Retry-After, at most `cap`;
/// the slow lane waits at least 60 base delays.
std::chrono::milliseconds retry_delay(const CallbackOptions& options, int attempt, FailureKind kind,
                                      int64_t retry_after_seconds, std::mt19937_64& random);

}  // namespace idempay::domain
