// The signing library against RFC 8037's own examples (Appendix A): the key, its thumbprint,
// and the JWS signed with it, byte for byte (Ed25519 signatures are deterministic).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "idempay/base/private_files.hpp"
#include "idempay/base/webhooks.hpp"
#include "idempay/signing/jose.hpp"

namespace idempay::signing {
namespace {

// RFC 8037 A.1 and A.2.
constexpr std::string_view kD = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
constexpr std::string_view kX = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
// A.3: the JWK thumbprint of that key.
constexpr std::string_view kThumbprint = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";
// A.4: {"alg":"EdDSA"} over "Example of Ed25519 signing".
constexpr std::string_view kJws =
    "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc."
    "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg";

class JoseTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("idempay-signing-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The RFC's private key as the PEM file an operator would give (PKCS #8: a fixed prefix and
  // the 32 bytes), written with `mode`.
  std::string rfc_key_file(mode_t mode) {
    std::string der = std::string("\x30\x2e\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x70\x04\x22\x04\x20", 16)
                      + from_base64url(kD).value();
    std::string path = (dir_ / "rfc8037.pem").string();
    std::ofstream(path) << "-----BEGIN PRIVATE KEY-----\n" << webhooks::base64_encode(der)
                        << "\n-----END PRIVATE KEY-----\n";
    ::chmod(path.c_str(), mode);
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(JoseTest, Base64urlRoundTripsAndRefusesPaddingAndOtherAlphabets) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "\xff\xfe\xfd"}) {
    EXPECT_EQ(from_base64url(base64url(s)).value(), s);
  }
  EXPECT_EQ(base64url("\xfb\xff"), "-_8");
  EXPECT_FALSE(from_base64url("Zg=="));
  EXPECT_FALSE(from_base64url("a+b/"));
  EXPECT_FALSE(from_base64url("Z"));
  EXPECT_FALSE(from_base64url("Zh"));  // stray bits: "f" is "Zg"
}

TEST_F(JoseTest, TheRfcKeyHasTheRfcThumbprintAndSignsTheRfcSignature) {
  auto key = SigningKey::load(rfc_key_file(0600));
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ(base64url(key->public_key().raw), kX);
  EXPECT_EQ(key->public_key().kid, kThumbprint);
  auto jws = parse_compact(kJws).value();
  EXPECT_EQ(base64url(key->sign(jws.signing_input)), kJws.substr(kJws.rfind('.') + 1));
  EXPECT_TRUE(verify_compact(jws, key->public_key()));
}

TEST_F(JoseTest, AChangedByteOrAnotherKeyFailsVerification) {
  auto rfc = public_key_from_raw(from_base64url(kX).value()).value();
  auto jws = parse_compact(kJws).value();
  ASSERT_TRUE(verify_compact(jws, rfc));
  auto changed = jws;
  changed.signing_input[30] ^= 1;
  EXPECT_FALSE(verify_compact(changed, rfc));
  auto other = SigningKey::generate((dir_ / "other.pem").string()).value();
  EXPECT_FALSE(verify_compact(jws, other.public_key()));
  changed = jws;
  changed.alg = "none";
  EXPECT_FALSE(verify_compact(changed, rfc));
}

TEST_F(JoseTest, SignCompactCarriesTheKidAndVerifies) {
  auto key = SigningKey::generate((dir_ / "k.pem").string()).value();
  auto jws = parse_compact(sign_compact(key, "test+jws", R"({"a":1})")).value();
  EXPECT_EQ(jws.kid, key.public_key().kid);
  EXPECT_EQ(jws.typ, "test+jws");
  EXPECT_EQ(jws.payload, R"({"a":1})");
  EXPECT_TRUE(verify_compact(jws, key.public_key()));
}

TEST_F(JoseTest, AKeyReadableByOthersOrNotEd25519IsRefused) {
  auto loose = SigningKey::load(rfc_key_file(0644));
  ASSERT_FALSE(loose);
  EXPECT_NE(loose.error().message.find("chmod 600"), std::string::npos);
  std::string path = (dir_ / "not-a-key.pem").string();
  ASSERT_TRUE(write_private_file(path, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"));
  EXPECT_FALSE(SigningKey::load(path));
  EXPECT_EQ(SigningKey::load((dir_ / "absent.pem").string()).error().code, ErrorCode::kNotFound);
}

TEST_F(JoseTest, AGeneratedKeyIsPrivateIsReloadedTheSameAndIsNeverOverwritten) {
  std::string path = (dir_ / "generated.pem").string();
  auto first = SigningKey::load_or_generate(path).value();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(SigningKey::load_or_generate(path).value().public_key().kid, first.public_key().kid);
  EXPECT_EQ(SigningKey::generate(path).error().code, ErrorCode::kConflict);
}

TEST_F(JoseTest, TheJwkSetIsRfc8037Shaped) {
  auto rfc = public_key_from_raw(from_base64url(kX).value()).value();
  EXPECT_EQ(jwk_set_json({rfc}),
            std::string(R"({"keys":[{"kty":"OKP","crv":"Ed25519","x":")") + std::string(kX) + R"(","kid":")"
                + std::string(kThumbprint) + R"(","alg":"EdDSA","use":"sig"}]})");
}

TEST_F(JoseTest, MalformedCompactFormsAreRefused) {
  EXPECT_FALSE(parse_compact("a.b"));
  EXPECT_FALSE(parse_compact("a.b.c.d"));
  EXPECT_FALSE(parse_compact("!!.e30.AA"));
  EXPECT_FALSE(parse_compact(base64url("[1]") + ".e30.AA"));  // the header must be an object
}

}  // namespace
}  // namespace idempay::signing
