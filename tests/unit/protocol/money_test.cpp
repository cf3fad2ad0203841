#include <gtest/gtest.h>

#include <random>
#include <string>

#include "idempay/base/money.hpp"

#include <optional>
#include <string_view>

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

// The rule written the plain way (the digits collected into a string, trailing zeros popped
// for a negative scale, zeros appended for a positive one): the parser, which accumulates the
// value without copying, must agree with it on every input, error or value.
std::optional<Cents> reference_amount(std::string_view text) {
  auto pos = text.find_first_of("eE");
  std::string_view mantissa = text.substr(0, pos);
  int exponent = 0;
  if (pos != std::string_view::npos) {
    std::string_view e = text.substr(pos + 1);
    bool negative = !e.empty() && e[0] == '-';
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) e.remove_prefix(1);
    if (e.empty() || e.size() > 3) return std::nullopt;
    for (char c : e) {
      if (c < '0' || c > '9') return std::nullopt;
      exponent = exponent * 10 + (c - '0');
    }
    exponent = negative ? -exponent : exponent;
  }
  std::string digits;
  int fraction = 0;
  bool separator = false;
  for (char c : mantissa) {
    if (c == '.' || c == ',') {
      if (separator) return std::nullopt;
      separator = true;
    } else if (c >= '0' && c <= '9') {
      digits.push_back(c);
      fraction += separator ? 1 : 0;
    } else {
      return std::nullopt;
    }
  }
  if (digits.empty()) return std::nullopt;
  int scale = exponent - fraction + 2;
  for (; scale < 0; ++scale) {
    if (digits.back() != '0') return std::nullopt;
    digits.pop_back();
    if (digits.empty()) digits = "0";
  }
  digits.append(static_cast<size_t>(scale), '0');
  auto first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Cents{0};
  if (digits.size() - first > 18) return std::nullopt;
  Cents cents = std::stoll(digits.substr(first));
  if (cents > kMaxCents) return std::nullopt;
  return cents;
}

TEST(MoneyTest, ParserAgreesWithThePlainRuleOnRandomInputs) {
  std::mt19937 random(11);
  const std::string alphabet = "0000123456789..,,eE+-x";
  size_t values = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    std::string text(1 + random() % 24, '0');
    for (char& c : text) c = alphabet[random() % alphabet.size()];
    if (trial % 3 == 0) text = std::to_string(random() % 100000) + "." + std::to_string(random() % 1000) + "e" +
                                std::to_string(static_cast<int>(random() % 41) - 20);
    auto expected = reference_amount(text);
    auto actual = parse_decimal_amount(text);
    ASSERT_EQ(actual.has_value(), expected.has_value()) << text;
    if (expected) {
      ASSERT_EQ(*actual, *expected) << text;
      ++values;
    }
  }
  EXPECT_GT(values, 20000u);  // the inputs reach the accepted values, not only the errors
}

TEST(MoneyTest, FormatsWithoutTrailingZeros) {
  EXPECT_EQ(format_amount(3190), "31.9");
  EXPECT_EQ(format_amount(100), "1");
  EXPECT_EQ(format_amount(5), "0.05");
  EXPECT_EQ(format_amount(0), "0");
  EXPECT_EQ(format_amount(430723), "4307.23");
}

TEST(MoneyTest, FormatsFixedWithTwoDecimals) {
  EXPECT_EQ(format_amount_fixed(3190), "31.90");
  EXPECT_EQ(format_amount_fixed(100), "1.00");
  EXPECT_EQ(format_amount_fixed(5), "0.05");
  EXPECT_EQ(format_amount_fixed(0), "0.00");
  EXPECT_EQ(format_amount_fixed(-1205), "-12.05");
  EXPECT_EQ(format_amount_fixed(kMaxCents), "10000000000000.00");
}

TEST(MoneyTest, FormatParseRoundTrip) {
  for (Cents c : {0LL, 1LL, 10LL, 99LL, 100LL, 101LL, 123456789LL}) {
    EXPECT_EQ(parse_decimal_amount(format_amount(c)).value(), c);
  }
}

}  // namespace
}  // namespace idempay
