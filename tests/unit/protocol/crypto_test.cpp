#include <gtest/gtest.h>

#include "idempay/protocol/crypto.hpp"

namespace idempay::crypto {
namespace {

TEST(CryptoTest, HmacSha256Rfc4231Case2) {
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(CryptoTest, Sha256OfEmptyString) {
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(CryptoTest, DigestHexRoundTripAndRejection) {
  Digest d = sha256("x");
  Digest back{};
  ASSERT_TRUE(digest_from_hex(to_hex(d), back));
  EXPECT_TRUE(constant_time_equal(d, back));
  EXPECT_FALSE(digest_from_hex("abc", back));
  EXPECT_FALSE(digest_from_hex(std::string(64, 'g'), back));
  back[0] ^= 1;
  EXPECT_FALSE(constant_time_equal(d, back));
}

TEST(CryptoTest, RandomBytesDiffer) {
  EXPECT_EQ(random_bytes(32).size(), 32u);
  EXPECT_NE(random_bytes(32), random_bytes(32));
}

}  // namespace
}  // namespace idempay::crypto
