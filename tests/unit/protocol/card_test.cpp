#include <gtest/gtest.h>

#include "idempay/protocol/card.hpp"

namespace idempay {
namespace {

TEST(CardTest, SummaryKeepsOnlyBinLast4LengthAndExpiry) {
  CardSecret c;
  c.number = "4444333322221111";
  c.holder = "John Doe";
  c.csc = "123";
  c.expiration_month = "12";
  c.expiration_year = "2030";
  CardSummary s = summarize_card(c, "", 0);
  EXPECT_EQ(s.bin, "444433");
  EXPECT_EQ(s.last4, "1111");
  EXPECT_EQ(s.number_length, 16);
  EXPECT_EQ(s.expiration_month, "12");
  EXPECT_EQ(s.expiration_year, "2030");
}

TEST(CardTest, MaskedAndTokenizedNumbers) {
  CardSecret masked;
  masked.number = "364901****2661";
  EXPECT_EQ(summarize_card(masked, "", 0).bin, "364901");
  EXPECT_EQ(summarize_card(masked, "", 0).last4, "2661");
  CardSecret tokenized;
  tokenized.number_token = "#vtex#token#d799bae#number#";
  CardSummary s = summarize_card(tokenized, "411111", 16);
  EXPECT_EQ(s.bin, "411111");
  EXPECT_EQ(s.last4, "");
  EXPECT_EQ(s.number_length, 16);
}

TEST(CardTest, LuhnCheck) {
  EXPECT_TRUE(is_valid_pan("4444333322221111"));
  EXPECT_FALSE(is_valid_pan("4222222222222224"));  // a homologation card, not Luhn-valid
  EXPECT_TRUE(is_valid_pan("4111111111111111"));
  EXPECT_FALSE(is_valid_pan("4111111111111112"));
  EXPECT_FALSE(is_valid_pan("41111111111"));
  EXPECT_FALSE(is_valid_pan("4111-1111-1111-1111"));
}

TEST(CardTest, RedactsDigitRunsThatCouldBeCardNumbers) {
  EXPECT_EQ(redact_digit_runs("card 4444333322221111 declined"), "card [redacted] declined");
  EXPECT_EQ(redact_digit_runs("card 4444 3333 2222 1111!"), "card [redacted]!");
  EXPECT_EQ(redact_digit_runs("card 4444-3333-2222-1111"), "card [redacted]");
  EXPECT_EQ(redact_digit_runs("order 12345 value 31.9"), "order 12345 value 31.9");
}

}  // namespace
}  // namespace idempay
