#include <gtest/gtest.h>

#include "idempay/domain/outbox.hpp"

namespace idempay::domain {
namespace {

CallbackResult status(unsigned s) {
  CallbackResult r;
  r.status = s;
  return r;
}

TEST(OutboxTest, ClassifiesFailures) {
  EXPECT_EQ(classify(status(500)), FailureKind::kRetry);
  EXPECT_EQ(classify(status(503)), FailureKind::kRetry);
  EXPECT_EQ(classify(status(408)), FailureKind::kRetry);
  EXPECT_EQ(classify(status(429)), FailureKind::kRetry);
  EXPECT_EQ(classify(status(400)), FailureKind::kRetrySlow);
  EXPECT_EQ(classify(status(404)), FailureKind::kRetrySlow);
  EXPECT_EQ(classify(status(410)), FailureKind::kPermanent);
  EXPECT_EQ(classify(status(301)), FailureKind::kPermanent);
  CallbackResult timeout;
  timeout.error = Error{ErrorCode::kTimeout, "t"};
  EXPECT_EQ(classify(timeout), FailureKind::kRetry);
  CallbackResult refused;
  refused.error = Error{ErrorCode::kForbidden, "private"};
  EXPECT_EQ(classify(refused), FailureKind::kPermanent);
}

TEST(OutboxTest, FullJitterWithinTheExponentialEnvelope) {
  CallbackOptions o;
  o.retry_base = std::chrono::milliseconds(100);
  o.retry_cap = std::chrono::milliseconds(10'000);
  std::mt19937_64 random(42);
  for (int attempt = 1; attempt <= 12; ++attempt) {
    int64_t envelope = std::min<int64_t>(10'000, 100LL << (attempt - 1));
    int64_t max_seen = 0;
    for (int i = 0; i < 200; ++i) {
      auto d = retry_delay(o, attempt, FailureKind::kRetry, -1, random).count();
      ASSERT_GE(d, 0);
      ASSERT_LE(d, envelope);
      max_seen = std::max(max_seen, d);
    }
    EXPECT_GT(max_seen, envelope / 2) << "jitter should spread over the envelope";
  }
}

TEST(OutboxTest, RetryAfterAndSlowLane) {
  CallbackOptions o;
  o.retry_base = std::chrono::milliseconds(100);
  o.retry_cap = std::chrono::milliseconds(60'000);
  std::mt19937_64 random(7);
  EXPECT_GE(retry_delay(o, 1, FailureKind::kRetry, 30, random).count(), 30'000);
  EXPECT_LE(retry_delay(o, 1, FailureKind::kRetry, 3'600, random).count(), 60'000);
  EXPECT_GE(retry_delay(o, 1, FailureKind::kRetrySlow, -1, random).count(), 6'000);
}

TEST(OutboxTest, EntryRoundTrip) {
  OutboxEntry e{"dlv_p_1", "p", "shop", "https://x/cb?s=1", R"({"a":"\"q\""})", 3, 10, 20, 503, "boom", "", "", 0, "", ""};
  auto back = decode_outbox(encode(e)).value();
  EXPECT_EQ(back.id, e.id);
  EXPECT_EQ(back.merchant, "shop");
  EXPECT_EQ(back.url, e.url);
  EXPECT_EQ(back.body, e.body);
  EXPECT_EQ(back.attempts, 3);
  EXPECT_EQ(back.next_attempt_at, 20);
  EXPECT_EQ(back.last_status, 503u);
}

}  // namespace
}  // namespace idempay::domain
