// The acquirer kinds as the merchants file names them (acquirers/kinds.hpp): each reads its
// entries' own fields (secrets from files, a webhook's pinned certificates, Adyen's HMAC keys)
// and refuses what it cannot serve, naming the place; the connector knows no kind but through
// them.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "idempay/acquirers/adyen.hpp"
#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/acquirers/http_acquirer.hpp"
#include "idempay/acquirers/kinds.hpp"
#include "idempay/acquirers/stub.hpp"
#include "idempay/config/merchants.hpp"
#include "temp_dir.hpp"

namespace idempay::acquirer {
namespace {

const std::string kLongToken(40, 't');

TEST(AcquirerKindsTest, AcquirersByMethodEachOfAKindWithItsOwnFields) {
  testing::TempDir dir;
  auto secret = dir.write("psp-secret", "s3cret\n");
  auto path = dir.write("m.json", R"({"merchants": [{"name": "shop", "appKey": "k", "appToken": ")" + kLongToken + R"(",
      "acquirers": [
        {"name": "pix", "kind": "bcb-pix", "methods": ["Pix"], "baseUrl": "https://pix.psp.example/api/v2",
         "tokenUrl": "https://pix.psp.example/oauth/token", "clientId": "id", "clientSecretFile": ")" + secret + R"(",
         "pixKey": "7d9f0335-8dcc-4054-9bf9-0dbd61d36906", "timeoutMs": 3000,
         "webhookCertificateSha256": ["AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"]},
        {"name": "cards", "kind": "http", "url": "https://acquirer.example", "apiKey": "key", "methods": ["Visa"]},
        {"name": "adyen", "kind": "adyen", "methods": ["Mastercard"], "baseUrl": "https://checkout-test.adyen.com/v71",
         "apiKeyFile": ")" + secret + R"(", "merchantAccount": "ShopECOM", "returnUrl": "https://shop.example/r",
         "hmacKey": "44782DEF547AAA06", "previousHmacKey": "00ff"},
        {"name": "rest", "kind": "stub"}]}]})");
  auto file = config::load_merchant_file(path, acquirer_kinds());
  ASSERT_TRUE(file) << file.error().message;
  const auto& acquirers = file->settings.at("shop").acquirers;
  ASSERT_EQ(acquirers.size(), 4u);
  const AdyenSettings* adyen = adyen_settings(*acquirers[2].settings);
  ASSERT_NE(adyen, nullptr);
  EXPECT_EQ(adyen->options.api_key, "s3cret");
  EXPECT_EQ(adyen->options.merchant_account, "ShopECOM");
  EXPECT_EQ(adyen->notifications.hmac_keys, (std::vector<std::string>{"44782DEF547AAA06", "00ff"}));
  EXPECT_EQ(config::acquirer_for(acquirers, "Mastercard")->name, "adyen");
  const BcbPixSettings* pix = bcb_pix_settings(*acquirers[0].settings);
  ASSERT_NE(pix, nullptr);
  EXPECT_EQ(bcb_pix_settings(*acquirers[2].settings), nullptr) << "each entry's settings are its kind's";
  EXPECT_EQ(pix->pix.client_secret, "s3cret") << "read from its file, without the newline";
  EXPECT_EQ(pix->pix.timeout, std::chrono::milliseconds(3000));
  EXPECT_EQ(pix->webhook.certificate_sha256[0], "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
  EXPECT_EQ(acquirers[3].kind, &stub_kind());
  EXPECT_EQ(config::acquirer_for(acquirers, "Pix")->name, "pix");
  EXPECT_EQ(config::acquirer_for(acquirers, "Visa")->name, "cards");
  EXPECT_EQ(acquirers[1].kind, &http_kind());
}

TEST(AcquirerKindsTest, AcquirerEntriesWithAnErrorAreRefusedNamingIt) {
  testing::TempDir dir;
  const std::string pix = R"("kind": "bcb-pix", "baseUrl": "https://p.example", "tokenUrl": "https://p.example/t",
                              "clientId": "i", "clientSecret": "s", "pixKey": "k")";
  const std::string adyen = R"("kind": "adyen", "baseUrl": "https://c.example/v71", "apiKey": "k",
                                "merchantAccount": "Shop", "returnUrl": "https://shop.example/r", "hmacKey": "00ff")";
  const std::pair<std::string, const char*> cases[] = {
      {R"([{"name": "a", "kind": "ftp"}])", R"(kind must be one of "stub", "http", "bcb-pix", "adyen")"},
      {R"([{"name": "a b", "kind": "stub"}])", "name is required"},
      {R"([{"name": "a", "kind": "stub"}, {"name": "a", "kind": "stub", "methods": ["Pix"]}])", "used twice"},
      {R"([{"name": "a", "kind": "stub"}, {"name": "b", "kind": "stub"}])",
       "only one acquirer may leave out methods"},
      {R"([{"name": "a", "kind": "stub", "methods": ["Pix"]}, {"name": "b", "kind": "stub", "methods": ["Pix"]}])",
       "served by two acquirers"},
      {R"([{"name": "a", "kind": "stub", "methods": ["Bitcoin"]}])", "not a payment method"},
      {R"([{"name": "a", "kind": "http"}])", "url is required"},
      {R"([{"name": "a", "kind": "stub", "url": "https://x.example"}])", "unknown field"},
      {"[{\"name\": \"a\", " + pix + R"(, "methods": ["Visa"]}])", "serves Pix only"},
      {"[{\"name\": \"a\", " + pix
           + R"(, "certificateFile": "/nonexistent.pem", "keyFile": "/nonexistent.key"}])",
       "client certificate"},
      {"[{\"name\": \"a\", " + pix + R"(, "webhookCertificateSha256": ["abc"]}])", "64 hex digits"},
      {"[{\"name\": \"a\", " + pix + R"(, "timeoutMs": 5}])", "timeoutMs"},
      {R"([{"name": "a", "kind": "bcb-pix", "baseUrl": "https://p.example", "tokenUrl": "https://p.example/t",
           "clientId": "i", "pixKey": "k"}])",
       "clientSecret"},
      {"[{\"name\": \"a\", " + adyen + R"(, "methods": ["Pix"]}])",
       "serves cards and boleto (BankInvoice) only"},
      {"[{\"name\": \"a\", " + adyen + "}]", "names the card methods"},
      {R"([{"name": "a", "kind": "adyen", "methods": ["Visa"], "baseUrl": "https://c.example/v71", "apiKey": "k",
           "merchantAccount": "Shop", "returnUrl": "https://shop.example/r", "hmacKey": "not-hex"}])",
       "HMAC key, in hex"},
      {R"([{"name": "a", "kind": "adyen", "methods": ["Visa"], "baseUrl": "https://c.example/v71", "apiKey": "k",
           "returnUrl": "https://shop.example/r", "hmacKey": "00ff"}])",
       "merchantAccount"},
      {"[{\"name\": \"a\", " + adyen + R"(, "methods": ["Visa"], "notificationUsername": "u"}])",
       "go together"},
  };
  for (const auto& [list, named] : cases) {
    std::string text = R"({"merchants": [{"name": "shop", "appKey": "k", "appToken": "t", "acquirers": )" + list + "}]}";
    auto file = config::load_merchant_file(dir.write("bad.json", text), acquirer_kinds());
    ASSERT_FALSE(file) << list;
    EXPECT_NE(file.error().message.find(named), std::string::npos) << file.error().message;
    EXPECT_NE(file.error().message.find("merchants[0]"), std::string::npos) << "the place is named";
  }
}

}  // namespace
}  // namespace idempay::acquirer
