// The API Pix adapter against the fake PSP, in process over loopback HTTP: what each call
// sends and makes of the answers, the ids that make retries safe, and the shared token.
#include <gtest/gtest.h>

#include "callback_wait.hpp"

#include <future>
#include <thread>

#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/acquirers/pix_psp.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/http/client.hpp"

namespace idempay::acquirer {
namespace {

using testing_support::wait;

class BcbPixTest : public testing::Test {
protected:
  void SetUp() override {
    PixPspOptions psp_options;
    psp_options.client_secret = "s3cret";
    psp_options.pix_keys = {"7d9f0335-8dcc-4054-9bf9-0dbd61d36906"};
    psp_ = std::make_unique<PixPsp>(psp_options);
    http::ServerOptions server;
    server.host = "127.0.0.1";
    server.port = 0;
    server_ = std::make_unique<http::Server>(server, *psp_);
    port_ = server_->start().value();
    adapter_ = make_bcb_pix_acquirer(options());
  }

  BcbPixOptions options() const {
    BcbPixOptions o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port_);
    o.token_url = o.base_url + "/oauth/token";
    o.client_id = "idempay";
    o.client_secret = "s3cret";
    o.pix_key = "7d9f0335-8dcc-4054-9bf9-0dbd61d36906";
    o.timeout = std::chrono::milliseconds(5000);
    return o;
  }

  JsonValue ledger() const { return JsonValue::parse(psp_->ledger_json()).value(); }

  // The fake's own routes, as a test (or a user) drives them.
  unsigned fake(const std::string& path, const std::string& body = "{}") {
    http::Client client;
    http::OutboundRequest r;
    r.url = "http://127.0.0.1:" + std::to_string(port_) + path;
    r.body = body;
    r.allow_private = true;
    return wait<http::ClientResponse>([&](auto cb) { client.send(r, cb); }).value().status;
  }

  Authorization authorize(const std::string& key, Cents amount = 3190) {
    AuthorizeCall call;
    call.key = key;
    call.amount = amount;
    call.currency = "BRL";
    call.payment_method = "Pix";
    call.payable_for_seconds = 1800;
    call.order.buyer.first_name = "Ana";
    call.order.buyer.last_name = "Silva";
    call.order.buyer.document = "123.456.789-09";
    call.order.buyer.document_type = "CPF";
    return wait<Authorization>([&](auto cb) { adapter_->authorize(call, cb); }).value();
  }

  std::optional<Authorization> status(const std::string& key) {
    return wait<std::optional<Authorization>>([&](auto cb) { adapter_->status(key, cb); }).value();
  }

  OperationOutcome operate(ppp::OperationKind kind, const std::string& payment, const std::string& request, Cents amount) {
    OperationCall call{kind, request, payment, pix_txid(payment), amount, {}, "BRL", "Pix", true};
    return wait<OperationOutcome>([&](auto cb) { adapter_->operate(call, cb); }).value();
  }

  std::unique_ptr<PixPsp> psp_;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  std::unique_ptr<domain::Acquirer> adapter_;
};

TEST(PixIdsTest, TxidsAndRefundIdsAreDeterministicAndWithinTheDocumentsPatterns) {
  EXPECT_EQ(pix_txid("P1"), pix_txid("P1"));
  EXPECT_NE(pix_txid("P1"), pix_txid("P2"));
  for (const auto& id : {pix_txid("F5C1A4E20D3B4E07B7E871F5B5BC9F91"), pix_refund_id("r1")}) {
    EXPECT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  }
  EXPECT_EQ(pix_reference("abc"), "bcb-pix/abc");
  EXPECT_EQ(pix_amount(3190), "31.90");
  EXPECT_EQ(pix_amount(5), "0.05");
  EXPECT_EQ(parse_pix_amount("31.90").value(), 3190);
  for (const char* bad : {"31.9", "31", ".90", "1.000", "-1.00", "12345678901.00", "1,00"}) {
    EXPECT_FALSE(parse_pix_amount(bad)) << bad;
  }
}

TEST_F(BcbPixTest, ACreatePaymentIsAChargeWaitingForThePixWithItsCodeAndQr) {
  Authorization a = authorize("pay-1");
  EXPECT_EQ(a.status, AuthorizationStatus::kPending);
  EXPECT_EQ(a.tid, pix_txid("pay-1"));
  EXPECT_EQ(a.document.pix_code.rfind("000201", 0), 0u) << "an EMV BR Code";
  EXPECT_NE(a.document.pix_code.find("br.gov.bcb.pix"), std::string::npos);
  EXPECT_FALSE(a.document.pix_qr_png.empty());
  EXPECT_EQ(a.document.expires_in_seconds, 1800);
  EXPECT_EQ(adapter_->reference("pay-1"), pix_reference(pix_txid("pay-1")));
  auto book = ledger();
  ASSERT_EQ(book.find("charges")->items().size(), 1u);
  EXPECT_EQ(book.find("charges")->items()[0].string_or("valor"), "31.90");
}

TEST_F(BcbPixTest, ARepeatedCreateFindsTheSameChargeAndAPaidOneComesBackApproved) {
  Authorization first = authorize("pay-2");
  Authorization again = authorize("pay-2");
  EXPECT_EQ(again.tid, first.tid);
  EXPECT_EQ(again.document.pix_code, first.document.pix_code);
  ASSERT_EQ(fake("/fake/pay/" + first.tid), 200u);
  Authorization after_payment = authorize("pay-2");  // PUT refused (no longer ATIVA): read back
  EXPECT_EQ(after_payment.status, AuthorizationStatus::kApproved);
  auto book = ledger();
  ASSERT_EQ(book.find("charges")->items().size(), 1u) << "one charge, however often it is asked for";
  EXPECT_EQ(book.find("charges")->items()[0].int_or("puts"), 3);
  EXPECT_EQ(book.find("charges")->items()[0].int_or("paid"), 1);
  EXPECT_EQ(after_payment.authorization_id, book.find("charges")->items()[0].string_or("endToEndId"));
}

TEST_F(BcbPixTest, TheStatusIsTheChargesUnknownPendingPaidOrRemoved) {
  EXPECT_FALSE(status("never")) << "a charge the PSP never saw: authorizing again is safe";
  authorize("pay-3");
  auto pending = status("pay-3");
  EXPECT_EQ(pending->status, AuthorizationStatus::kPending);
  EXPECT_FALSE(pending->document.pix_code.empty()) << "a crash before the answer still gets the code";
  ASSERT_EQ(fake("/fake/pay/" + pix_txid("pay-3")), 200u);
  auto paid = status("pay-3");
  EXPECT_EQ(paid->status, AuthorizationStatus::kApproved);
  EXPECT_GT(paid->revision, pending->revision) << "newer than the pending answer: the core applies it";
}

TEST_F(BcbPixTest, AnExpiredChargeIsRemovedBeforeItIsDeniedAndCanNoLongerBePaid) {
  authorize("pay-4");
  ASSERT_EQ(fake("/fake/age/" + pix_txid("pay-4"), R"({"seconds": 1800})"), 200u);
  EXPECT_EQ(status("pay-4")->status, AuthorizationStatus::kPending) << "within the grace after expiry";
  ASSERT_EQ(fake("/fake/age/" + pix_txid("pay-4"), R"({"seconds": 600})"), 200u);
  auto expired = status("pay-4");
  EXPECT_EQ(expired->status, AuthorizationStatus::kDenied);
  EXPECT_EQ(expired->code, "expired");
  EXPECT_EQ(ledger().find("charges")->items()[0].string_or("status"), "REMOVIDA_PELO_USUARIO_RECEBEDOR");
  EXPECT_EQ(fake("/fake/pay/" + pix_txid("pay-4")), 409u);
}

TEST_F(BcbPixTest, ACancellationRemovesTheChargeOnceAndAPaidOneIsNotCancelled) {
  authorize("pay-5");
  EXPECT_TRUE(operate(ppp::OperationKind::kCancel, "pay-5", "c1", 3190).succeeded);
  EXPECT_TRUE(operate(ppp::OperationKind::kCancel, "pay-5", "c1", 3190).succeeded) << "a retry";
  EXPECT_EQ(status("pay-5")->status, AuthorizationStatus::kDenied);
  EXPECT_TRUE(operate(ppp::OperationKind::kCancel, "never-created", "c2", 100).succeeded);
  authorize("pay-6");
  ASSERT_EQ(fake("/fake/pay/" + pix_txid("pay-6")), 200u);
  auto refused = operate(ppp::OperationKind::kCancel, "pay-6", "c3", 3190);
  EXPECT_FALSE(refused.succeeded);
  EXPECT_EQ(refused.code, "pix-paid");
}

TEST_F(BcbPixTest, ARefundIsOneDevolucaoPerRequestIdWithinWhatWasPaid) {
  authorize("pay-7");
  ASSERT_EQ(fake("/fake/pay/" + pix_txid("pay-7")), 200u);
  auto first = operate(ppp::OperationKind::kRefund, "pay-7", "refund-1", 1000);
  EXPECT_TRUE(first.succeeded);
  EXPECT_EQ(first.amount, 1000);
  auto retried = operate(ppp::OperationKind::kRefund, "pay-7", "refund-1", 1000);
  EXPECT_TRUE(retried.succeeded) << "the document answers a reused id with 400: read back";
  EXPECT_EQ(retried.id, first.id);
  auto over = operate(ppp::OperationKind::kRefund, "pay-7", "refund-2", 2500);
  EXPECT_FALSE(over.succeeded);
  EXPECT_FALSE(over.pending);
  EXPECT_TRUE(operate(ppp::OperationKind::kRefund, "pay-7", "refund-3", 2190).succeeded);
  auto refunds = ledger().find("charges")->items()[0].find("devolucoes")->items();
  ASSERT_EQ(refunds.size(), 2u) << "one per requestId that the PSP accepted";
  EXPECT_EQ(refunds[0].string_or("id"), pix_refund_id("refund-1"));
  EXPECT_FALSE(operate(ppp::OperationKind::kRefund, "unpaid", "refund-4", 100).succeeded);
}

TEST_F(BcbPixTest, ASettlementIsAnsweredWithoutThePsp) {
  auto settled = operate(ppp::OperationKind::kSettle, "pay-8", "s1", 3190);
  EXPECT_TRUE(settled.succeeded);
  EXPECT_EQ(settled.amount, 3190);
  EXPECT_EQ(ledger().find("tokensIssued")->text(), "0");
}

TEST_F(BcbPixTest, OneTokenServesManyPaymentsAndARefusedOneIsRenewedOnce) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([this, i] { authorize("many-" + std::to_string(i)); });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(ledger().find("tokensIssued")->text(), "1") << "one token request for 16 concurrent payments";
  ASSERT_EQ(fake("/fake/expire-tokens"), 200u);
  EXPECT_EQ(status("many-0")->status, AuthorizationStatus::kPending) << "the 401 is answered by a new token";
  EXPECT_EQ(status("many-1")->status, AuthorizationStatus::kPending);
  EXPECT_EQ(ledger().find("tokensIssued")->text(), "2");
}

TEST_F(BcbPixTest, WrongClientCredentialsLeaveTheOutcomeRetryableNotDenied) {
  BcbPixOptions wrong = options();
  wrong.client_secret = "not-it";
  auto adapter = make_bcb_pix_acquirer(wrong);
  AuthorizeCall call;
  call.key = "pay-9";
  call.amount = 100;
  call.currency = "BRL";
  auto r = wait<Authorization>([&](auto cb) { adapter->authorize(call, cb); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(ledger().find("charges")->items().size(), 0u);
}

TEST_F(BcbPixTest, NotBrlIsDeniedWithoutAskingThePsp) {
  AuthorizeCall call;
  call.key = "pay-10";
  call.amount = 100;
  call.currency = "USD";
  auto a = wait<Authorization>([&](auto cb) { adapter_->authorize(call, cb); }).value();
  EXPECT_EQ(a.status, AuthorizationStatus::kDenied);
  EXPECT_EQ(ledger().find("charges")->items().size(), 0u);
}

TEST(PixNotificationTest, OnlyTheTxidsAreReadEachOnceAndBounded) {
  auto hints = read_pix_notification(R"({"pix": [
      {"endToEndId": "E1", "txid": "abc123", "valor": "999999.00", "horario": "2020-01-01T00:00:00Z"},
      {"endToEndId": "E2", "txid": "abc123"},
      {"endToEndId": "E3"},
      {"endToEndId": "E4", "txid": "no spaces allowed"},
      {"endToEndId": "E5", "txid": "def456", "devolucoes": [{"id": "d", "status": "DEVOLVIDO"}]},
      {"endToEndId": "E6", "txid": "abc123", "devolucoes": [{"id": "e", "status": "EM_PROCESSAMENTO"}]}]})");
  ASSERT_TRUE(hints) << hints.error().message;
  EXPECT_EQ(*hints, (std::vector<PixHint>{{"abc123", true}, {"def456", true}}))
      << "amounts and statuses are never read; a charge named twice is one hint";
  for (const char* bad : {"", "[]", R"({"pix": {}})", R"({"pix": [1]})", R"({"other": []})"}) {
    EXPECT_FALSE(read_pix_notification(bad)) << bad;
  }
  std::string many = R"({"pix": [)";
  for (int i = 0; i <= 100; ++i) {
    many += std::string(i ? "," : "") + R"({"txid": "t)" + std::to_string(i) + R"("})";
  }
  EXPECT_FALSE(read_pix_notification(many + "]}")) << "at most 100 charges in one notification";
  EXPECT_TRUE(read_pix_notification(R"({"pix": []})"));
}

}  // namespace
}  // namespace idempay::acquirer
