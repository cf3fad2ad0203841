// The configuration files, read whole and refused whole: the merchants file (credentials,
// operators, per-merchant settings, warnings), the manifest, and where the store is.
#include <gtest/gtest.h>

#include <fstream>

#include "idempay/config/manifest.hpp"
#include "idempay/config/merchants.hpp"
#include "idempay/config/store_location.hpp"
#include "temp_dir.hpp"

namespace idempay::config {
namespace {

std::string write_file(const testing::TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kLongToken(40, 't');

TEST(MerchantsFileTest, ReadsMerchantsOperatorsAndTheirSettings) {
  testing::TempDir dir;
  auto path = write_file(dir, "m.json", R"({"merchants": [
      {"name": "shop", "appKey": "k1", "appToken": ")" + kLongToken + R"(", "requireSecureProxy": true,
       "manualOperations": ["refund"], "testSuite": "refuse"},
      {"name": "suite", "appKey": "", "appToken": "", "testSuite": "only"},
      {"name": "flow", "appKey": "k2", "appToken": ")" + kLongToken + R"(", "onboarding": true}],
    "operators": [{"name": "alice", "token": "operator-token-0123456789", "role": "act", "merchants": ["shop"]}]})");
  auto file = load_merchant_file(path);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->first_merchant, "shop");
  EXPECT_EQ(file->credentials->authenticate("k1", kLongToken, false), "shop");
  EXPECT_EQ(file->credentials->authenticate("", "", false), "") << "the suite's empty pair outside the suite";
  EXPECT_EQ(file->credentials->authenticate("", "", true), "suite");
  const MerchantSettings& shop = file->settings.at("shop");
  EXPECT_TRUE(shop.require_secure_proxy && shop.manual_refund && !shop.manual_cancel);
  EXPECT_EQ(shop.test_suite, TestSuitePolicy::kRefuse);
  EXPECT_TRUE(file->settings.at("flow").onboarding);
  EXPECT_EQ(file->operator_credentials->authenticate_bearer("operator-token-0123456789"), "alice");
  EXPECT_TRUE(file->operators.at("alice").can_act && file->operators.at("alice").sees("shop"));
  EXPECT_FALSE(file->operators.at("alice").sees("flow"));
  EXPECT_TRUE(file->warnings.empty());
}

TEST(MerchantsFileTest, AGuessableTokenIsAcceptedWithAWarning) {
  testing::TempDir dir;
  auto path = write_file(dir, "m.json", R"({"merchants": [{"name": "shop", "appKey": "k", "appToken": "hunter2"}]})");
  auto file = load_merchant_file(path);
  ASSERT_TRUE(file);
  ASSERT_EQ(file->warnings.size(), 1u);
  EXPECT_NE(file->warnings[0].find("could be guessed"), std::string::npos);
  EXPECT_EQ(file->warnings[0].find("hunter2"), std::string::npos) << "the token itself is never in a message";
}

TEST(MerchantsFileTest, AFileWithAnErrorIsRefusedWholeNamingThePlace) {
  testing::TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {R"({"merchants": []})", "at least one merchant"},
      {R"({"merchants": [{"name": "a", "appKey": "k", "appToken": ""}]})", "merchants[0]"},
      {R"({"merchants": [{"name": "a", "appKey": "k", "appToken": "t", "colour": "red"}]})", "unknown field"},
      {R"({"merchants": [{"name": "a", "appKey": "k", "appToken": "t"}, {"name": "b", "appKey": "k", "appToken": "u"}]})",
       "appKey"},
      {R"({"merchants": [{"name": "a", "appKey": "k", "appToken": "t", "testSuite": "sometimes"}]})", "testSuite"},
      {R"({"merchants": [{"name": "a", "appKey": "k", "appToken": "t", "acquirer": "ftp://x"}]})", "acquirer"},
      {R"({"merchants": [{"name": "a", "appKey": "k", "appToken": "t"}],
           "operators": [{"name": "o", "token": "short", "role": "act", "merchants": ["*"]}]})", "16 characters"},
      {R"({"merchants": [{"name": "a", "appKey": "k", "appToken": "t", "appToken": "u"}]})", "twice"},
  };
  for (const auto& [text, named] : cases) {
    auto file = load_merchant_file(write_file(dir, "bad.json", text));
    ASSERT_FALSE(file) << text;
    EXPECT_NE(file.error().message.find(named), std::string::npos) << file.error().message;
  }
}

TEST(ManifestTest, TheDefaultOffersEveryMethodUnsplitAndAFileChoosesTerms) {
  Manifest defaults = default_manifest();
  EXPECT_EQ(defaults.methods.at("Visa").allows_split, ppp::SplitMode::kDisabled);
  EXPECT_EQ(defaults.methods.at("Pix").delay_to_cancel, 1800);
  EXPECT_NE(defaults.manifest_json.find("\"allowsSplit\":\"disabled\""), std::string::npos);
  testing::TempDir dir;
  auto file = load_manifest(write_file(dir, "manifest.json", R"({"paymentMethods": [
      {"name": "Visa", "allowsSplit": "onCapture", "delayToAutoSettle": 3600}, {"name": "Pix"}]})"));
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->methods.size(), 2u);
  EXPECT_EQ(file->methods.at("Visa").allows_split, ppp::SplitMode::kOnCapture);
  EXPECT_EQ(file->methods.at("Visa").delay_to_auto_settle, 3600);
  for (const char* bad : {R"({"paymentMethods": [{"name": "NoSuchMethod"}]})",
                          R"({"paymentMethods": [{"name": "Visa", "allowsSplit": "sometimes"}]})",
                          R"({"paymentMethods": [{"name": "Pix", "delayToCancel": 300}]})",
                          R"({"paymentMethods": []})"}) {
    EXPECT_FALSE(load_manifest(write_file(dir, "bad.json", bad))) << bad;
  }
}

TEST(StoreLocationTest, RocksDbByDefaultPostgresByUri) {
  auto rocks = parse_store_location("", "/var/lib/idempay");
  ASSERT_TRUE(rocks);
  EXPECT_EQ(rocks->kind, StoreLocation::Kind::kRocks);
  EXPECT_EQ(rocks->where, "/var/lib/idempay/rocksdb");
  auto pg = parse_store_location("postgresql://user@db/idempay", "/ignored");
  ASSERT_TRUE(pg);
  EXPECT_EQ(pg->kind, StoreLocation::Kind::kPostgres);
  EXPECT_EQ(describe(*pg), "PostgreSQL") << "a URI may hold a password: never in a log line";
  EXPECT_FALSE(parse_store_location("mysql://db", "/x"));
}

}  // namespace
}  // namespace idempay::config
