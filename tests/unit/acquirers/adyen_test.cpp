// The Adyen adapter: the notification signature against Adyen's documented example, amounts
// by the currency's exponent, the keys that make retries safe, and the adapter against the fake
// in process over loopback HTTP (what each answer becomes, replays under a used key).
#include <gtest/gtest.h>

#include "callback_wait.hpp"

#include <future>

#include "idempay/acquirers/adyen.hpp"
#include "idempay/acquirers/adyen_fake.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay::acquirer {
namespace {

using testing_support::wait;

// Adyen's documentation's example: its key, its notification item, its hmacSignature.
AdyenNotification documented_example() {
  AdyenNotification n;
  n.psp_reference = "7914073381342284";
  n.merchant_account = "TestMerchant";
  n.merchant_reference = "TestPayment-1407325143704";
  n.value = "1130";
  n.currency = "EUR";
  n.event_code = "AUTHORISATION";
  n.success = "true";
  n.hmac_signature = "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=";
  return n;
}
constexpr const char* kDocumentedKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

TEST(AdyenSignatureTest, TheDocumentedExampleVerifiesAndAnyChangeDoesNot) {
  AdyenNotification n = documented_example();
  EXPECT_EQ(adyen_signing_payload(n), "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true");
  EXPECT_EQ(adyen_signature(n, kDocumentedKey), n.hmac_signature);
  EXPECT_TRUE(adyen_signature_valid(n, {kDocumentedKey}));
  EXPECT_TRUE(adyen_signature_valid(n, {std::string(64, '0'), kDocumentedKey})) << "a rotation: either key";
  EXPECT_FALSE(adyen_signature_valid(n, {std::string(64, '0')}));
  EXPECT_FALSE(adyen_signature_valid(n, {"not hex"}));
  AdyenNotification changed = n;
  changed.success = "false";
  EXPECT_FALSE(adyen_signature_valid(changed, {kDocumentedKey}));
  changed = n;
  changed.value = "11300";
  EXPECT_FALSE(adyen_signature_valid(changed, {kDocumentedKey}));
  changed = n;
  changed.hmac_signature = "";
  EXPECT_FALSE(adyen_signature_valid(changed, {kDocumentedKey}));
}

TEST(AdyenNotificationTest, ItemsAreReadBoundedAndMalformedOnesRefused) {
  auto read = read_adyen_notifications(
      R"({"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"x","authCode":"123"},)"
      R"("amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","merchantAccountCode":"M",)"
      R"("merchantReference":"p-1","pspReference":"7914073381342284","success":"true"}}]})");
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].value, "1130");
  EXPECT_EQ((*read)[0].auth_code, "123");
  EXPECT_FALSE(read_adyen_notifications(R"({"notificationItems":[]})"));
  EXPECT_FALSE(read_adyen_notifications(R"({"notificationItems":[{"NotificationRequestItem":{"eventCode":"X"}}]})"));
  EXPECT_FALSE(read_adyen_notifications(R"({"notificationItems":[{"Other":{}}]})"));
  std::string many = R"({"notificationItems":[)";
  for (int i = 0; i < 101; ++i) {
    many += std::string(i ? "," : "") + R"({"NotificationRequestItem":{"eventCode":"X","pspReference":"P","success":"true"}})";
  }
  EXPECT_FALSE(read_adyen_notifications(many + "]}")) << "at most 100 items";
}

// Adyen documents a successful AUTHORISATION's authorisation code in its reason
// (authCode:last4:expiry); additionalData.authCode only when the account is set to send it.
TEST(AdyenNotificationTest, TheAuthorisationCodeIsReadFromTheReasonAsDocumented) {
  auto item = [](std::string_view reason, std::string_view success, std::string_view extra) {
    std::string body = R"({"notificationItems":[{"NotificationRequestItem":{"additionalData":{)"
                       + std::string(extra) + R"(},"eventCode":"AUTHORISATION","pspReference":"P","reason":")"
                       + std::string(reason) + R"(","success":")" + std::string(success) + R"("}}]})";
    auto read = read_adyen_notifications(body);
    EXPECT_TRUE(read) << body;
    return read ? (*read)[0].auth_code : std::string("?");
  };
  EXPECT_EQ(item("874574:1935:11/2020", "true", ""), "874574");
  EXPECT_EQ(item("874574:1935:11/2020", "true", R"("authCode":"999999")"), "874574");
  EXPECT_EQ(item("null", "true", R"("authCode":"999999")"), "999999") << "the reason of another shape";
  EXPECT_EQ(item("null", "true", ""), "");
  EXPECT_EQ(item("874574:19:11/2020", "true", ""), "");
  EXPECT_EQ(item("87 4574:1935:11/2020", "true", ""), "");
  EXPECT_EQ(item("874574:1935:11/2020:x", "true", ""), "");
  EXPECT_EQ(item("874574:1935:11/2020", "false", ""), "") << "a refusal's reason is its explanation";
}

TEST(AdyenAmountTest, MinorUnitsFollowTheCurrencysExponent) {
  EXPECT_EQ(adyen_minor_units(3190, "BRL").value(), 3190);
  EXPECT_EQ(adyen_minor_units(150000, "CLP").value(), 1500);
  EXPECT_FALSE(adyen_minor_units(150050, "CLP")) << "no centavos in Chilean pesos";
  EXPECT_EQ(adyen_minor_units(1234, "KWD").value(), 12340);
  EXPECT_FALSE(adyen_minor_units(100, "brl"));
  EXPECT_EQ(adyen_cents(1500, "CLP").value(), 150000);
  EXPECT_EQ(adyen_cents(12340, "KWD").value(), 1234);
}

TEST(AdyenKeyTest, KeysAreDeterministicPerCallAndWithinTheApisLimit) {
  std::string key = adyen_idempotency_key("payment", "p-1");
  EXPECT_EQ(key, adyen_idempotency_key("payment", "p-1"));
  EXPECT_NE(key, adyen_idempotency_key("payment", "p-2"));
  EXPECT_NE(key, adyen_idempotency_key("capture", "p-1"));
  EXPECT_LE(key.size(), 64u);
}

class AdyenAdapterTest : public testing::Test {
protected:
  void SetUp() override {
    AdyenFakeOptions fake_options;
    fake_options.api_key = "key";
    fake_options.merchant_accounts = {"Shop"};
    fake_options.pending_delay = std::chrono::milliseconds(100);
    fake_ = std::make_unique<AdyenFake>(fake_options);
    http::ServerOptions server;
    server.host = "127.0.0.1";
    server.port = 0;
    server_ = std::make_unique<http::Server>(server, *fake_);
    port_ = server_->start().value();
    AdyenOptions o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port_);
    o.api_key = "key";
    o.merchant_account = "Shop";
    o.return_url = "https://shop.example/return";
    o.timeout = std::chrono::milliseconds(5000);
    adapter_ = make_adyen_acquirer(o);
  }
  void TearDown() override { server_->stop(std::chrono::milliseconds(500)); }

  AuthorizeCall call(const std::string& key, const std::string& card, Cents amount = 3190) const {
    AuthorizeCall c;
    c.key = key;
    c.amount = amount;
    c.currency = "BRL";
    c.payment_method = "Visa";
    c.card.number = card;
    c.card.csc = "123";
    c.card.holder = "Ana Silva";
    c.card.expiration_month = "3";
    c.card.expiration_year = "2030";
    return c;
  }

  Result<Authorization> authorize(const AuthorizeCall& c) {
    return wait<Authorization>([&](auto cb) { adapter_->authorize(c, cb); });
  }
  Result<OperationOutcome> operate(ppp::OperationKind kind, const std::string& key, const std::string& payment,
                                   const std::string& tid, Cents amount) {
    OperationCall c{kind, key, payment, tid, amount, {}, "BRL", "Visa", true};
    return wait<OperationOutcome>([&](auto cb) { adapter_->operate(c, cb); });
  }
  JsonValue ledger() const { return JsonValue::parse(fake_->ledger_json()).value(); }

  std::unique_ptr<AdyenFake> fake_;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  std::unique_ptr<domain::Acquirer> adapter_;
};

TEST_F(AdyenAdapterTest, AnswersBecomeOutcomesAndARepeatIsTheFirstAnswer) {
  auto approved = authorize(call("p-ok", "4444333322221111"));
  ASSERT_TRUE(approved) << approved.error().message;
  EXPECT_EQ(approved->status, AuthorizationStatus::kApproved);
  EXPECT_EQ(approved->tid.size(), 16u);
  auto again = authorize(call("p-ok", "4444333322221111"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->tid, approved->tid) << "the same Idempotency-Key: Adyen's first answer";
  EXPECT_EQ(ledger().find("payments")->items().size(), 1u);

  auto refused = authorize(call("p-no", "4444333322221112"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, AuthorizationStatus::kDenied);
  EXPECT_EQ(refused->code, "2");
  auto pending = authorize(call("p-later", "4222222222222224"));
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->status, AuthorizationStatus::kPending);
  auto redirect = authorize(call("p-3ds", "4000000000003220"));
  ASSERT_TRUE(redirect);
  EXPECT_EQ(redirect->status, AuthorizationStatus::kPending);
  EXPECT_EQ(redirect->document.payment_url.rfind("https://", 0), 0u);

  auto other_body = authorize(call("p-ok", "4444333322221111", 999));
  ASSERT_FALSE(other_body) << "another body under a used key: unknown, never a denial";
  EXPECT_EQ(other_body.error().code, ErrorCode::kTimeout);
}

TEST_F(AdyenAdapterTest, ModificationsAreReceivedOncePerRequestId) {
  auto approved = authorize(call("p-mod", "4444333322221111"));
  ASSERT_TRUE(approved);
  auto captured = operate(ppp::OperationKind::kSettle, "s-1", "p-mod", approved->tid, 3190);
  ASSERT_TRUE(captured) << captured.error().message;
  EXPECT_TRUE(captured->succeeded);
  auto again = operate(ppp::OperationKind::kSettle, "s-1", "p-mod", approved->tid, 3190);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, captured->id);
  auto refunded = operate(ppp::OperationKind::kRefund, "r-1", "p-mod", approved->tid, 1000);
  ASSERT_TRUE(refunded);
  EXPECT_TRUE(refunded->succeeded);
  EXPECT_EQ(ledger().find("modifications")->items().size(), 2u);
  auto unknown = operate(ppp::OperationKind::kSettle, "s-2", "p-x", "NOSUCHREFERENCE0", 100);
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(unknown->succeeded) << "Adyen's 422 for an unknown pspReference: refused";
}

TEST_F(AdyenAdapterTest, AnUnheardPaymentIsCancelledByTheConnectorsReference) {
  ASSERT_TRUE(authorize(call("p-lost", "4444333322221111")));
  auto status = wait<std::optional<Authorization>>([&](auto cb) { adapter_->status("p-lost", cb); });
  ASSERT_TRUE(status && *status);
  EXPECT_EQ((*status)->status, AuthorizationStatus::kPending) << "no status call: awaited from the notification";
  auto cancelled = operate(ppp::OperationKind::kCancel, "c-1", "p-lost", "", 0);
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_TRUE(cancelled->succeeded);
  auto payments = ledger().find("payments")->items();
  ASSERT_EQ(payments.size(), 1u);
  EXPECT_EQ(payments[0].string_or("status"), "Cancelled");
}

}  // namespace
}  // namespace idempay::acquirer
