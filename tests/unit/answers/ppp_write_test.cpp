// The PPP documents, as answers/ writes them from the engine's typed answers.
#include <gtest/gtest.h>

#include "idempay/answers/answers.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay::answers {
namespace {

using domain::OperationAnswer;
using ppp::OperationKind;

TEST(PppWriteTest, CreatePaymentResponseHasEveryRequiredField) {
  domain::PaymentAnswer r;
  r.payment_id = "P1";
  r.status = "denied";
  r.tid = "T1";
  std::string json = write_payment(r);
  auto doc = JsonValue::parse(json).value();
  for (const char* field : {"paymentId", "status", "authorizationId", "tid", "nsu", "acquirer",
                            "delayToAutoSettle", "delayToAutoSettleAfterAntifraud", "delayToCancel"}) {
    EXPECT_NE(doc.find(field), nullptr) << field;
  }
  EXPECT_EQ(doc.find("authorizationId")->type(), JsonValue::Type::kString);
  EXPECT_TRUE(doc.find("nsu")->is_null());
}

TEST(PppWriteTest, OperationResponsesUseTheirOwnIdFieldAndNullOnFailure) {
  OperationAnswer ok{OperationKind::kSettle, "P1", "R1", "S1", 3190, "", "ok"};
  EXPECT_EQ(write_operation(ok),
            R"({"paymentId":"P1","settleId":"S1","value":31.9,"code":null,"message":"ok","requestId":"R1"})");
  OperationAnswer failed{OperationKind::kRefund, "P1", "R2", "", 0, "not-refundable", "no"};
  EXPECT_EQ(write_operation(failed),
            R"({"paymentId":"P1","refundId":null,"value":0,"code":"not-refundable","message":"no","requestId":"R2"})");
  OperationAnswer cancel{OperationKind::kCancel, "P1", "R3", "C1", 0, "", "ok"};
  EXPECT_EQ(write_operation(cancel),
            R"({"paymentId":"P1","cancellationId":"C1","code":null,"message":"ok","requestId":"R3"})");
}

TEST(PppWriteTest, ErrorsAreEscaped) {
  EXPECT_EQ(write_error("x", "say \"hi\""), R"({"status":"error","code":"x","message":"say \"hi\""})");
  EXPECT_TRUE(JsonValue::parse(write_error("x", std::string("\0\x1f", 2))).has_value());
}

// A refusal is written where it leaves: an error document, or the operation's own shape.
TEST(PppWriteTest, RefusalsTakeTheirShapeAndTheirCodeIsTheirName) {
  domain::Reply error = domain::refusal(domain::Refusal::kPaymentConflict, "taken");
  EXPECT_EQ(error.outcome, domain::Outcome::kRefused);
  EXPECT_EQ(http_status(error.outcome), 400u);
  EXPECT_EQ(body_of(error), R"({"status":"error","code":"payment-conflict","message":"taken"})");
  ppp::OperationRequest req;
  req.kind = OperationKind::kSettle;
  req.payment_id = "P1";
  req.request_id = "R1";
  domain::Reply refused = domain::operation_refusal(req, domain::Refusal::kOverSettleLimit, "too much");
  EXPECT_EQ(http_status(refused.outcome), 500u);
  EXPECT_EQ(body_of(refused),
            R"({"paymentId":"P1","settleId":null,"value":0,"code":"over-settle-limit","message":"too much","requestId":"R1"})");
  domain::Reply stored{domain::Outcome::kManual, "stored bytes"};
  EXPECT_EQ(http_status(stored.outcome), 501u);
  EXPECT_EQ(body_of(stored), "stored bytes");
}

}  // namespace
}  // namespace idempay::answers
