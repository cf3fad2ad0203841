#include <gtest/gtest.h>

#include "idempay/base/webhooks.hpp"

namespace idempay::webhooks {
namespace {

// Vector from the Standard Webhooks reference libraries' own tests.
constexpr const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* kId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kTimestamp = 1614265330;
constexpr const char* kBody = R"({"test": 2432232314})";
constexpr const char* kSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

TEST(WebhooksTest, MatchesTheReferenceSignature) {
  auto key = decode_secret(kSecret).value();
  EXPECT_EQ(sign(key, kId, kTimestamp, kBody), kSignature);
  EXPECT_TRUE(verify({key}, kId, std::to_string(kTimestamp), kSignature, kBody, kTimestamp));
}

TEST(WebhooksTest, RejectsTamperingStalenessAndWrongKeys) {
  auto key = decode_secret(kSecret).value();
  auto ts = std::to_string(kTimestamp);
  EXPECT_FALSE(verify({key}, kId, ts, kSignature, R"({"test": 2432232315})", kTimestamp));
  EXPECT_FALSE(verify({key}, "msg_other", ts, kSignature, kBody, kTimestamp));
  EXPECT_FALSE(verify({key}, kId, ts, kSignature, kBody, kTimestamp + 301));
  EXPECT_FALSE(verify({key}, kId, ts, kSignature, kBody, kTimestamp - 301));
  EXPECT_TRUE(verify({key}, kId, ts, kSignature, kBody, kTimestamp + 299));
  EXPECT_FALSE(verify({std::string(32, 'x')}, kId, ts, kSignature, kBody, kTimestamp));
  EXPECT_FALSE(verify({key}, kId, "12a", kSignature, kBody, kTimestamp));
  EXPECT_FALSE(verify({key}, kId, ts, "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", kBody, kTimestamp));
  EXPECT_FALSE(verify({key}, kId, ts, "", kBody, kTimestamp));
}

TEST(WebhooksTest, AnySignatureAndAnyKeyDuringRotation) {
  auto key = decode_secret(kSecret).value();
  auto old_key = decode_secret(generate_secret()).value();
  auto ts = std::to_string(kTimestamp);
  std::string both = "v1,bm90LWl0 " + std::string(kSignature);
  EXPECT_TRUE(verify({key}, kId, ts, both, kBody, kTimestamp));
  EXPECT_TRUE(verify({old_key, key}, kId, ts, kSignature, kBody, kTimestamp));
}

TEST(WebhooksTest, SecretsAndBase64) {
  EXPECT_FALSE(decode_secret("whsec_c2hvcnQ=").has_value());  // too short
  EXPECT_FALSE(decode_secret("whsec_not base64!").has_value());
  EXPECT_FALSE(base64_decode("I=======").has_value());  // more padding than bytes (fuzz_webhook)
  EXPECT_FALSE(decode_secret("whsec_I=======").has_value());
  EXPECT_EQ(decode_secret(generate_secret()).value().size(), 32u);
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(base64_decode(base64_encode(s)).value(), s);
  }
}

}  // namespace
}  // namespace idempay::webhooks
