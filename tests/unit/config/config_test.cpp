// The configuration files, read whole and refused whole: the merchants file (credentials,
// operators, per-merchant settings, warnings), the manifest, and where the store is.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "idempay/config/manifest.hpp"
#include "idempay/config/merchants.hpp"
#include "idempay/config/store_location.hpp"
#include "temp_dir.hpp"

namespace idempay::config {
namespace {

const std::string kLongToken(40, 't');

// A kind the test defines (acquirers/extension.hpp): the merchants file reads an entry's name,
// kind and methods, and hands the rest to the kind, whose own error comes back naming the place.
struct TestSettings final : acquirer::Settings {
  std::string url;
  std::string identity() const override { return "test " + url; }
};

const acquirer::Kind kTestKind{
    "test",
    [](const JsonValue& entry, const std::vector<std::string>&,
       const std::string& where) -> Result<std::shared_ptr<const acquirer::Settings>> {
      if (auto known = acquirer::only_known_fields(entry, {"url"}, where); !known) {
        return tl::unexpected(known.error());
      }
      auto settings = std::make_shared<TestSettings>();
      settings->url = entry.string_or("url");
      if (settings->url == "refused") {
        return make_error(ErrorCode::kInvalidArgument, where + ": the kind refuses it");
      }
      return settings;
    },
    nullptr, nullptr, {}};
const AcquirerKinds kKinds{&kTestKind};


TEST(MerchantsFileTest, ReadsMerchantsOperatorsAndTheirSettings) {
  testing::TempDir dir;
  auto path = dir.write("m.json", R"({"merchants": [
      {"name": "shop", "appKey": "k1", "appToken": ")" + kLongToken + R"(", "requireSecureProxy": true,
       "manualOperations": ["refund"], "testSuite": "refuse"},
      {"name": "suite", "appKey": "", "appToken": "", "testSuite": "only"},
      {"name": "flow", "appKey": "k2", "appToken": ")" + kLongToken + R"(", "onboarding": true}],
    "operators": [{"name": "alice", "token": "operator-token-0123456789", "role": "act", "merchants": ["shop"]}]})");
  auto file = load_merchant_file(path, kKinds);
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
  const OperatorSettings& alice = file->operators.at("alice");
  EXPECT_TRUE(alice.can_act && !alice.all_merchants);
  EXPECT_EQ(alice.merchants, (std::set<std::string, std::less<>>{"shop"}));
  EXPECT_TRUE(file->warnings.empty());
}

TEST(MerchantsFileTest, AGuessableTokenIsAcceptedWithAWarning) {
  testing::TempDir dir;
  auto path = dir.write("m.json", R"({"merchants": [{"name": "shop", "appKey": "k", "appToken": "hunter2"}]})");
  auto file = load_merchant_file(path, kKinds);
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
    auto file = load_merchant_file(dir.write("bad.json", text), kKinds);
    ASSERT_FALSE(file) << text;
    EXPECT_NE(file.error().message.find(named), std::string::npos) << file.error().message;
  }
}

TEST(MerchantsFileTest, AcquirersByMethodEachReadByItsKind) {
  testing::TempDir dir;
  auto path = dir.write("m.json", R"({"merchants": [{"name": "shop", "appKey": "k", "appToken": ")" + kLongToken + R"(",
      "acquirers": [{"name": "pix", "kind": "test", "methods": ["Pix"], "url": "u1"},
                    {"name": "rest", "kind": "test"}]}]})");
  auto file = load_merchant_file(path, kKinds);
  ASSERT_TRUE(file) << file.error().message;
  const auto& acquirers = file->settings.at("shop").acquirers;
  ASSERT_EQ(acquirers.size(), 2u);
  EXPECT_EQ(acquirers[0].kind, &kTestKind);
  EXPECT_EQ(dynamic_cast<const TestSettings&>(*acquirers[0].settings).url, "u1");
  EXPECT_EQ(acquirer_for(acquirers, "Pix")->name, "pix");
  EXPECT_EQ(acquirer_for(acquirers, "Diners")->name, "rest") << "the entry without methods takes the others";
  EXPECT_EQ(acquirer_named(acquirers, "rest"), &acquirers[1]);
  EXPECT_EQ(named_route("pix"), "@pix");
  EXPECT_EQ(route_name("@pix"), "pix");
  EXPECT_EQ(route_name("https://acquirer.example"), "");
}

TEST(MerchantsFileTest, AcquirerEntriesWithAnErrorAreRefusedNamingIt) {
  testing::TempDir dir;
  const std::pair<std::string, const char*> cases[] = {
      {R"([{"name": "a", "kind": "ftp"}])", "kind must be one of \"test\""},
      {R"([{"name": "a b", "kind": "test"}])", "name is required"},
      {R"([{"name": "a", "kind": "test"}, {"name": "a", "kind": "test", "methods": ["Pix"]}])", "used twice"},
      {R"([{"name": "a", "kind": "test"}, {"name": "b", "kind": "test"}])",
       "only one acquirer may leave out methods"},
      {R"([{"name": "a", "kind": "test", "methods": ["Pix"]}, {"name": "b", "kind": "test", "methods": ["Pix"]}])",
       "served by two acquirers"},
      {R"([{"name": "a", "kind": "test", "methods": ["Bitcoin"]}])", "not a payment method"},
      {R"([{"name": "a", "kind": "test", "colour": "red"}])", "unknown field"},
      {R"([{"name": "a", "kind": "test", "url": "refused"}])", "the kind refuses it"},
  };
  for (const auto& [list, named] : cases) {
    std::string text = R"({"merchants": [{"name": "shop", "appKey": "k", "appToken": "t", "acquirers": )" + list + "}]}";
    auto file = load_merchant_file(dir.write("bad.json", text), kKinds);
    ASSERT_FALSE(file) << list;
    EXPECT_NE(file.error().message.find(named), std::string::npos) << file.error().message;
    EXPECT_NE(file.error().message.find("merchants[0]"), std::string::npos) << "the place is named";
  }
  std::string both = R"({"merchants": [{"name": "shop", "appKey": "k", "appToken": "t", "acquirer": "stub",
                          "acquirers": [{"name": "a", "kind": "test"}]}]})";
  auto file = load_merchant_file(dir.write("both.json", both), kKinds);
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message.find("keep one"), std::string::npos);
}

TEST(ManifestTest, TheDefaultOffersEveryMethodUnsplitAndAFileChoosesTerms) {
  Manifest defaults = default_manifest();
  EXPECT_EQ(defaults.methods.at("Visa").allows_split, ppp::SplitMode::kDisabled);
  EXPECT_EQ(defaults.methods.at("Pix").delay_to_cancel, 1800);
  EXPECT_NE(defaults.manifest_json.find("\"allowsSplit\":\"disabled\""), std::string::npos);
  testing::TempDir dir;
  auto file = load_manifest(dir.write("manifest.json", R"({"paymentMethods": [
      {"name": "Visa", "allowsSplit": "onCapture", "delayToAutoSettle": 3600}, {"name": "Pix"}]})"));
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->methods.size(), 2u);
  EXPECT_EQ(file->methods.at("Visa").allows_split, ppp::SplitMode::kOnCapture);
  EXPECT_EQ(file->methods.at("Visa").delay_to_auto_settle, 3600);
  for (const char* bad : {R"({"paymentMethods": [{"name": "NoSuchMethod"}]})",
                          R"({"paymentMethods": [{"name": "Visa", "allowsSplit": "sometimes"}]})",
                          R"({"paymentMethods": [{"name": "Pix", "delayToCancel": 300}]})",
                          R"({"paymentMethods": []})"}) {
    EXPECT_FALSE(load_manifest(dir.write("bad.json", bad))) << bad;
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
