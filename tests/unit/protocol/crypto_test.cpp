#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "idempay/base/crypto.hpp"

namespace idempay::crypto {
namespace {

TEST(CryptoTest, HmacSha256Rfc4231Case2) {
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// Keyed contexts are cached per thread: repeated and interleaved keys, an empty key, a key
// longer than a block (hashed first) and more keys than the cache holds must all still give
// RFC 4231's answers.
TEST(CryptoTest, HmacSha256KeysInterleavedAndRotated) {
  const std::string long_key(131, '\xaa');
  const char* long_expected = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
  const char* jefe_expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(to_hex(hmac_sha256(long_key, "Test Using Larger Than Block-Size Key - Hash Key First")), long_expected);
    EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")), jefe_expected);
    for (int i = 0; i < 10; ++i) {  // more keys than are kept
      hmac_sha256("key-" + std::to_string(i), "data");
    }
  }
  EXPECT_EQ(to_hex(hmac_sha256("", "")), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  std::string from_other_thread;
  std::thread([&] { from_other_thread = to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")); }).join();
  EXPECT_EQ(from_other_thread, jefe_expected);
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

TEST(CryptoTest, SealedValuesOpenUnderTheirKeyOnlyAndUnaltered) {
  std::string key(32, 'k');
  std::string sealed = seal(key, "payment-42");
  EXPECT_EQ(unseal(key, sealed).value(), "payment-42");
  EXPECT_EQ(sealed.find("payment-42"), std::string::npos) << "the plaintext must not show";
  EXPECT_NE(seal(key, "payment-42"), sealed) << "a fresh nonce each time";
  EXPECT_FALSE(unseal(std::string(32, 'j'), sealed));
  for (size_t i = 0; i < sealed.size(); ++i) {
    std::string altered = sealed;
    altered[i] ^= 1;
    EXPECT_FALSE(unseal(key, altered)) << "byte " << i;
  }
  EXPECT_FALSE(unseal(key, sealed.substr(0, 20)));
  EXPECT_EQ(unseal(key, seal(key, "")).value(), "");
}

TEST(CryptoTest, RandomBytesDiffer) {
  EXPECT_EQ(random_bytes(32).size(), 32u);
  EXPECT_NE(random_bytes(32), random_bytes(32));
}

}  // namespace
}  // namespace idempay::crypto
