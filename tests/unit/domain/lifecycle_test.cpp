#include <gtest/gtest.h>

#include <set>

#include "idempay/domain/lifecycle.hpp"

namespace idempay::domain {
namespace {

using S = PaymentState;
constexpr S kAll[] = {S::kProcessing, S::kUndefined, S::kApproved, S::kDenied,
                      S::kCancelled, S::kSettled, S::kRefunded, S::kOrphaned};

// G3, spelled out: every pair not listed here must be refused.
const std::set<std::pair<S, S>> kLegal = {
    {S::kProcessing, S::kUndefined}, {S::kProcessing, S::kApproved}, {S::kProcessing, S::kDenied},
    {S::kProcessing, S::kOrphaned},  {S::kOrphaned, S::kUndefined},  {S::kOrphaned, S::kApproved},
    {S::kOrphaned, S::kDenied},
    {S::kUndefined, S::kApproved},   {S::kUndefined, S::kDenied},    {S::kUndefined, S::kCancelled},
    {S::kApproved, S::kSettled},     {S::kApproved, S::kCancelled},  {S::kSettled, S::kSettled},
    {S::kSettled, S::kRefunded},     {S::kRefunded, S::kRefunded},
};

TEST(StateMachineTest, EveryTransitionIsLegalExactlyWhenListed) {
  for (S from : kAll) {
    for (S to : kAll) {
      EXPECT_EQ(is_legal_transition(from, to), kLegal.count({from, to}) == 1)
          << to_string(from) << " -> " << to_string(to);
    }
  }
}

TEST(StateMachineTest, NamesRoundTrip) {
  for (S s : kAll) {
    EXPECT_EQ(payment_state_from_string(to_string(s)), s);
  }
  EXPECT_FALSE(payment_state_from_string("settledx").has_value());
}

// Each rule by name: no refusal where the rules hold, the first rule broken where one is not,
// with the facts in its message.
TEST(StateMachineTest, SettleRespectsStateAndAuthorizedAmount) {
  Amounts a{1000, 0, 0};
  EXPECT_FALSE(settle_refusal(S::kApproved, a, 1000));
  EXPECT_FALSE(settle_refusal(S::kApproved, a, 400));
  auto over = settle_refusal(S::kApproved, a, 1001);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->refusal, Refusal::kOverSettleLimit);
  EXPECT_EQ(over->message, "settlement of 10.01 exceeds what remains authorized (10)");
  EXPECT_EQ(over->reason(), "over-settle-limit: " + over->message);
  EXPECT_EQ(settle_refusal(S::kApproved, a, 0)->refusal, Refusal::kAmountNotPositive);
  Amounts partly{1000, 600, 0};
  EXPECT_FALSE(settle_refusal(S::kSettled, partly, 400));
  EXPECT_TRUE(settle_refusal(S::kSettled, partly, 401));
  Amounts raised = partly;
  raised.max_value = 1'100;  // maxValue: settlements may add up to more than the amount
  EXPECT_EQ(raised.settle_limit(), 1'100);
  EXPECT_FALSE(settle_refusal(S::kSettled, raised, 500));
  EXPECT_TRUE(settle_refusal(S::kSettled, raised, 501));
  for (S s : {S::kProcessing, S::kUndefined, S::kDenied, S::kCancelled, S::kRefunded, S::kOrphaned}) {
    auto illegal = settle_refusal(s, a, 1);
    ASSERT_TRUE(illegal) << to_string(s);
    EXPECT_EQ(illegal->refusal, Refusal::kInvalidState) << to_string(s);
    EXPECT_EQ(illegal->message, "cannot settle a payment whose state is " + std::string(to_string(s)));
  }
}

TEST(StateMachineTest, RefundsNeverExceedWhatWasSettled) {
  Amounts settled{1000, 800, 0};
  EXPECT_FALSE(refund_refusal(S::kSettled, settled, 800));
  EXPECT_EQ(refund_refusal(S::kSettled, settled, 801)->refusal, Refusal::kOverSettled);
  Amounts partly{1000, 800, 500};
  EXPECT_FALSE(refund_refusal(S::kRefunded, partly, 300));
  EXPECT_TRUE(refund_refusal(S::kRefunded, partly, 301));
  EXPECT_EQ(refund_refusal(S::kRefunded, partly, 0)->refusal, Refusal::kAmountNotPositive);
  for (S s : {S::kProcessing, S::kUndefined, S::kApproved, S::kDenied, S::kCancelled}) {
    EXPECT_EQ(refund_refusal(s, settled, 1)->refusal, Refusal::kInvalidState) << to_string(s);
  }
}

TEST(StateMachineTest, OnlyUnsettledAuthorizationsCancel) {
  EXPECT_FALSE(cancel_refusal(S::kUndefined));
  EXPECT_FALSE(cancel_refusal(S::kApproved));
  for (S s : {S::kProcessing, S::kDenied, S::kCancelled, S::kSettled, S::kRefunded, S::kOrphaned}) {
    EXPECT_EQ(cancel_refusal(s)->refusal, Refusal::kInvalidState) << to_string(s);
  }
}

// Every refusal has its own code: an answer's code leads back to one name.
TEST(StateMachineTest, EveryRefusalHasItsOwnCode) {
  std::set<std::string_view> codes;
  for (int r = 0; r <= static_cast<int>(Refusal::kInternalError); ++r) {
    auto code = code_of(static_cast<Refusal>(r));
    EXPECT_TRUE(codes.insert(code).second) << code << " names two refusals";
  }
}

TEST(StateMachineTest, CreatePaymentStatusIsOneOfThePppThree) {
  EXPECT_EQ(create_payment_status(S::kProcessing), "undefined");
  EXPECT_EQ(create_payment_status(S::kUndefined), "undefined");
  EXPECT_EQ(create_payment_status(S::kApproved), "approved");
  EXPECT_EQ(create_payment_status(S::kDenied), "denied");
}

}  // namespace
}  // namespace idempay::domain
