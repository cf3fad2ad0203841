#include <gtest/gtest.h>

#include "idempay/base/money.hpp"

namespace idempay {
namespace {

TEST(MoneyTest, ParsesDecimalsExactly) {
  EXPECT_EQ(parse_decimal_amount("31.9").value(), 3190);
  EXPECT_EQ(parse_decimal_amount("0.1").value(), 10);
  EXPECT_EQ(parse_decimal_amount("0.05").value(), 5);
  EXPECT_EQ(parse_decimal_amount("2300").value(), 230000);
  EXPECT_EQ(parse_decimal_amount("4307.23").value(), 430723);
  EXPECT_EQ(parse_decimal_amount("1.10").value(), 110);
  EXPECT_EQ(parse_decimal_amount("1.100000").value(), 110);
  EXPECT_EQ(parse_decimal_amount("0").value(), 0);
  EXPECT_EQ(parse_decimal_amount("0.0").value(), 0);
}

TEST(MoneyTest, AcceptsExponentAndCommaDecimal) {
  EXPECT_EQ(parse_decimal_amount("1e2").value(), 10000);
  EXPECT_EQ(parse_decimal_amount("1.5E1").value(), 1500);
  EXPECT_EQ(parse_decimal_amount("123e-2").value(), 123);
  EXPECT_EQ(parse_decimal_amount("29,90").value(), 2990);
}

TEST(MoneyTest, RejectsWhatIsNotAnExactNonNegativeAmount) {
  for (const char* bad : {"", "-1", "1.005", "abc", "1..2", "1.2.3", "1e", "1e1000", ".", "12a",
                          "99999999999999999999", "1e-3"}) {
    EXPECT_FALSE(parse_decimal_amount(bad).has_value()) << bad;
  }
}

TEST(MoneyTest, FormatsWithoutTrailingZeros) {
  EXPECT_EQ(format_amount(3190), "31.9");
  EXPECT_EQ(format_amount(100), "1");
  EXPECT_EQ(format_amount(5), "0.05");
  EXPECT_EQ(format_amount(0), "0");
  EXPECT_EQ(format_amount(430723), "4307.23");
}

TEST(MoneyTest, FormatParseRoundTrip) {
  for (Cents c : {0LL, 1LL, 10LL, 99LL, 100LL, 101LL, 123456789LL}) {
    EXPECT_EQ(parse_decimal_amount(format_amount(c)).value(), c);
  }
}

}  // namespace
}  // namespace idempay
