#include <gtest/gtest.h>

#include "callback_wait.hpp"

#include <future>
#include <thread>

#include "idempay/acquirers/http_acquirer.hpp"
#include "idempay/acquirers/stub.hpp"
#include "idempay/acquirers/stub_server.hpp"
#include "idempay/acquirers/wire.hpp"
#include "idempay/http/server.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay::acquirer {
namespace {

AuthorizeCall call(std::string key, std::string card, Cents amount = 1000) {
  AuthorizeCall c;
  c.key = std::move(key);
  c.amount = amount;
  c.currency = "BRL";
  c.payment_method = "Visa";
  c.card.number = std::move(card);
  return c;
}

using testing_support::wait;

Authorization authorize(Acquirer& a, AuthorizeCall c) {
  return wait<Authorization>([&](Callback<Authorization> cb) { a.authorize(std::move(c), cb); }).value();
}

TEST(StubAcquirerTest, HomologationCards) {
  StubAcquirer stub(StubOptions{std::chrono::milliseconds(0), std::chrono::milliseconds(50)});
  EXPECT_EQ(authorize(stub, call("a", "4444333322221111")).status, AuthorizationStatus::kApproved);
  EXPECT_EQ(authorize(stub, call("d", "4444333322221112")).status, AuthorizationStatus::kDenied);
  EXPECT_EQ(authorize(stub, call("pa", "4222222222222224")).status, AuthorizationStatus::kPending);
  EXPECT_EQ(authorize(stub, call("pd", "4222222222222225")).status, AuthorizationStatus::kPending);
  EXPECT_EQ(authorize(stub, call("o", "4111111111111111")).status, AuthorizationStatus::kApproved);
  EXPECT_EQ(authorize(stub, call("bad", "4111111111111112")).status, AuthorizationStatus::kDenied);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  auto pa = wait<std::optional<Authorization>>([&](auto cb) { stub.status("pa", cb); }).value();
  ASSERT_TRUE(pa);
  EXPECT_EQ(pa->status, AuthorizationStatus::kApproved);
  auto pd = wait<std::optional<Authorization>>([&](auto cb) { stub.status("pd", cb); }).value();
  EXPECT_EQ(pd->status, AuthorizationStatus::kDenied);
  auto unknown = wait<std::optional<Authorization>>([&](auto cb) { stub.status("nope", cb); }).value();
  EXPECT_FALSE(unknown);
}

TEST(StubAcquirerTest, IdempotentPerKeyWithALedger) {
  StubAcquirer stub;
  auto first = authorize(stub, call("k", "4444333322221111"));
  auto second = authorize(stub, call("k", "4444333322221111"));
  EXPECT_EQ(first.tid, second.tid);
  EXPECT_EQ(first.authorization_id, second.authorization_id);
  EXPECT_EQ(first.nsu, second.nsu);
  auto ledger = JsonValue::parse(stub.ledger_json()).value();
  const JsonValue* entry = ledger.find("authorizations")->find("k");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->int_or("calls"), 2);
  EXPECT_EQ(entry->int_or("charges"), 1);
  EXPECT_EQ(stub.ledger_json().find("4444333322221111"), std::string::npos);
}

TEST(StubAcquirerTest, OperationsKeepTheirInvariants) {
  StubAcquirer stub;
  authorize(stub, call("p", "4444333322221111", 1000));
  auto op = [&](ppp::OperationKind kind, std::string key, Cents amount) {
    return wait<OperationOutcome>([&](auto cb) { stub.operate(OperationCall{kind, key, "p", "", amount, {}, "BRL", "Visa", true}, cb); }).value();
  };
  EXPECT_TRUE(op(ppp::OperationKind::kSettle, "s1", 600).succeeded);
  EXPECT_FALSE(op(ppp::OperationKind::kSettle, "s2", 401).succeeded);
  EXPECT_TRUE(op(ppp::OperationKind::kSettle, "s1", 600).succeeded);  // replay, not a second capture
  EXPECT_TRUE(op(ppp::OperationKind::kSettle, "s3", 400).succeeded);
  EXPECT_TRUE(op(ppp::OperationKind::kRefund, "r1", 1000).succeeded);
  EXPECT_FALSE(op(ppp::OperationKind::kRefund, "r2", 1).succeeded);
  EXPECT_FALSE(op(ppp::OperationKind::kCancel, "c1", 0).succeeded);
}

TEST(StubServerTest, HttpClientAndServerAgree) {
  StubAcquirer stub;
  StubHandler handler(stub);
  http::ServerOptions options;
  options.port = 0;
  http::Server server(options, handler);
  uint16_t port = server.start().value();
  auto remote = make_http_acquirer("http://127.0.0.1:" + std::to_string(port), std::chrono::seconds(5));
  ASSERT_NE(remote, nullptr);
  auto a = authorize(*remote, call("h", "4444333322221111"));
  EXPECT_EQ(a.status, AuthorizationStatus::kApproved);
  EXPECT_EQ(a.tid, authorize(stub, call("h", "4444333322221111")).tid);
  auto s = wait<std::optional<Authorization>>([&](auto cb) { remote->status("h", cb); }).value();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->tid, a.tid);
  auto missing = wait<std::optional<Authorization>>([&](auto cb) { remote->status("none", cb); }).value();
  EXPECT_FALSE(missing);
  auto settle = wait<OperationOutcome>([&](auto cb) {
    remote->operate(OperationCall{ppp::OperationKind::kSettle, "s", "h", a.tid, 500, {}, "BRL", "Visa", true}, cb);
  }).value();
  EXPECT_TRUE(settle.succeeded);
  EXPECT_EQ(settle.amount, 500);
  server.stop(std::chrono::milliseconds(100));
}

TEST(StubServerTest, UnreachableAcquirerIsUnavailable) {
  auto remote = make_http_acquirer("http://127.0.0.1:1", std::chrono::seconds(2));
  auto r = wait<Authorization>([&](Callback<Authorization> cb) { remote->authorize(call("x", ""), cb); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

TEST(AcquirerEventTest, WebhookBodyRoundTripsAndRefusesWhatIsNotAnEvent) {
  Authorization a;
  a.status = AuthorizationStatus::kApproved;
  a.tid = "T1";
  a.authorization_id = "777";
  a.revision = 3;
  auto back = decode_event(encode_event({"pay-1", a})).value();
  EXPECT_EQ(back.key, "pay-1");
  EXPECT_EQ(back.authorization.status, AuthorizationStatus::kApproved);
  EXPECT_EQ(back.authorization.tid, "T1");
  EXPECT_EQ(back.authorization.revision, 3);
  EXPECT_FALSE(decode_event(R"({"data":{"paymentId":"p","status":"refunded"}})"));
  EXPECT_FALSE(decode_event(R"({"data":{"status":"approved"}})"));
  EXPECT_FALSE(decode_event(R"({"data":{"paymentId":"p","status":"denied","status":"approved"}})"));
  EXPECT_FALSE(decode_event("not json"));
}

}  // namespace
}  // namespace idempay::acquirer
