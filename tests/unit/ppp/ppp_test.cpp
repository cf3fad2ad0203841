// The PPP adapter without a socket: its route table, and its handler in front of a real payment
// engine (a memory store, the deterministic stub), asked as the gateway asks. And the
// configuration flow's bounds.
#include <gtest/gtest.h>

#include <future>

#include "idempay/acquirers/stub.hpp"
#include "idempay/answers/answers.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/ppp/handler.hpp"
#include "idempay/ppp/onboarding.hpp"
#include "idempay/storage/store.hpp"
#include "temp_dir.hpp"

namespace idempay::ppp {
namespace {

class NoCallbacks final : public actors::CallbackTransport {
public:
  void send(actors::CallbackAttempt, std::function<void(actors::CallbackResult)> done) override {
    done(actors::CallbackResult{200, {}, -1});
  }
};

class PppHandlerTest : public ::testing::Test {
protected:
  void SetUp() override {
    actors::ServiceOptions options;
    options.answers = &answers;
    options.idle_timeout = std::chrono::milliseconds(50);
    service = std::make_unique<actors::PaymentService>(*store, stub, callbacks, options);
    ASSERT_TRUE(service->start("https://connector.example"));
    PppHandlerOptions handler_options;
    handler_options.stub_trigger = [this](const std::string& id, const std::string& outcome) {
      return stub.trigger(id, outcome == "approve" ? acquirer::TriggerOutcome::kApprove : acquirer::TriggerOutcome::kDeny);
    };
    handler_options.callback_urls = http::DestinationRules{*http::HostAllowlist::parse("gateway.example"), false};
    handler_options.policy_of = [](const std::string& merchant) {
      config::MerchantPolicy policy;
      policy.onboarding = merchant == "flow";
      return policy;
    };
    handler = std::make_unique<PppHandler>(*service, std::move(handler_options));
  }
  void TearDown() override {
    handler.reset();
    service->shutdown();
  }

  http::Response ask(const std::string& method, const std::string& path, const std::string& body = {},
                     const std::string& principal = "shop") {
    std::promise<http::Response> answer;
    http::Request request;
    request.method = method;
    request.path = path;
    request.body = body;
    request.principal = principal;
    auto dropped = std::make_shared<const http::Response>(503, "dropped");
    handler->handle(std::move(request), http::Responder([&answer](http::Response r) { answer.set_value(std::move(r)); },
                                                        dropped));
    return answer.get_future().get();
  }

  static std::string create(const std::string& id, const std::string& card, const std::string& extra = {}) {
    return R"({"paymentId":")" + id + R"(","transactionId":"t","reference":"r","orderId":"o","paymentMethod":"Visa",)"
           R"("value":10,"currency":"BRL","callbackUrl":"https://gateway.example/cb",)"
           R"("card":{"number":")" + card + R"(","holder":"A","csc":"123","expiration":{"month":"12","year":"2030"}})" +
           extra + "}";
  }

  std::unique_ptr<storage::Store> store = storage::make_memory_store(domain::keyspace_names());
  acquirer::StubAcquirer stub{acquirer::StubOptions{std::chrono::milliseconds(0), std::chrono::hours(1)}};
  NoCallbacks callbacks;
  answers::PppAnswers answers;
  std::unique_ptr<actors::PaymentService> service;
  std::unique_ptr<PppHandler> handler;
};

TEST_F(PppHandlerTest, RoutesAreMatchedByTheirTableWithTheirMethods) {
  EXPECT_TRUE(handler->knows("/payments"));
  EXPECT_TRUE(handler->knows("/payments/p%3A1/settlements/"));
  EXPECT_TRUE(handler->knows("/stub/trigger"));
  EXPECT_FALSE(handler->knows("/authorization/token")) << "no configuration flow configured";
  EXPECT_FALSE(handler->knows("/favicon.ico"));
  EXPECT_EQ(ask("GET", "/manifest").status, 200u);
  auto wrong_method = ask("GET", "/payments");
  EXPECT_EQ(wrong_method.status, 405u);
  EXPECT_EQ(wrong_method.headers.at(0).value, "POST");
  EXPECT_EQ(ask("GET", "/nope").status, 404u);
}

TEST_F(PppHandlerTest, APaymentIdIsTheSameIdPercentEncodedOrNot) {
  ASSERT_EQ(ask("POST", "/payments", create("order:1", "4444333322221111")).status, 200u);
  auto settled = ask("POST", "/payments/order%3A1/settlements", R"({"requestId":"s1","value":10})");
  EXPECT_EQ(settled.status, 200u) << settled.body;
  EXPECT_EQ(ask("POST", "/payments/order:1/settlements", R"({"requestId":"s1","value":10})").body, settled.body);
}

TEST_F(PppHandlerTest, RecipientsOfAMethodThatDoesNotSplitAreInformation) {
  std::string recipients = R"(,"recipients":[{"id":"m","role":"marketplace","amount":7}])";  // not the value
  auto created = ask("POST", "/payments", create("split-1", "4444333322221111", recipients));
  EXPECT_EQ(created.status, 200u) << created.body;
  auto ledger = JsonValue::parse(stub.ledger_json()).value();
  EXPECT_TRUE(ledger.find("authorizations")->find("split-1")->find("recipients")->items().empty());
}

TEST_F(PppHandlerTest, TheStubsTriggerIsThePaymentOwnersAlone) {
  ASSERT_EQ(ask("POST", "/payments", create("pending-1", "4222222222222224")).status, 200u);
  std::string trigger = R"({"paymentId":"pending-1","outcome":"approve"})";
  EXPECT_EQ(ask("POST", "/stub/trigger", trigger, "other-shop").status, 404u);
  EXPECT_EQ(ask("POST", "/stub/trigger", R"({"paymentId":"nobody","outcome":"approve"})").status, 404u);
  EXPECT_EQ(ask("POST", "/stub/trigger", trigger).status, 200u);
  EXPECT_EQ(ask("POST", "/stub/trigger", trigger).status, 409u) << "no longer pending";
}

TEST_F(PppHandlerTest, TheConfigurationFlowsCredentialsOpenNothingElse) {
  EXPECT_EQ(ask("POST", "/payments", create("flow-1", "4444333322221111"), "flow").status, 403u);
}

// -- the configuration flow's bounds ------------------------------------------------------------

OnboardingOptions flow_options(const testing::TempDir& dir) {
  OnboardingOptions o;
  o.issued_path = dir.path() + "/onboarded.json";
  o.return_urls = http::DestinationRules{*http::HostAllowlist::parse("admin.example"), false};
  o.max_pending = 3;
  o.max_pending_per_caller = 2;
  return o;
}

TEST(OnboardingTest, PendingFlowsAndReturnUrlsAreBounded) {
  testing::TempDir dir;
  Onboarding flow(flow_options(dir));
  const std::string url = "https://admin.example/back";
  EXPECT_EQ(flow.issue_token("vtex", url + "?pad=" + std::string(3000, 'x')).error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(flow.issue_token("vtex", url));
  EXPECT_TRUE(flow.issue_token("vtex", url));
  EXPECT_EQ(flow.issue_token("vtex", url).error().code, ErrorCode::kUnavailable) << "two per caller";
  EXPECT_TRUE(flow.issue_token("other", url));
  EXPECT_EQ(flow.issue_token("third", url).error().code, ErrorCode::kUnavailable) << "three in all";
}

TEST(OnboardingTest, TheCodeGoesInTheQueryBeforeAnyFragment) {
  testing::TempDir dir;
  Onboarding flow(flow_options(dir));
  auto token = flow.issue_token("vtex", "https://admin.example/back?x=1#step-2").value();
  auto page = flow.consent_page(token).value();
  auto at = page.find("https://admin.example/back?x=1&amp;authorizationCode=");
  ASSERT_NE(at, std::string::npos) << page;
  EXPECT_NE(page.find("#step-2\"", at), std::string::npos) << page;
}

}  // namespace
}  // namespace idempay::ppp
