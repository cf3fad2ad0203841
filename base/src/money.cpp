#include "idempay/base/money.hpp"

#include <cctype>

namespace idempay {

namespace {

Status invalid(std::string_view text) {
  return make_error(ErrorCode::kInvalidArgument,
                    "amount is not a valid non-negative decimal: " + std::string(text.substr(0, 32)));
}

// Splits "mantissa[e|E exponent]"; the exponent must be a small signed integer.
bool split_exponent(std::string_view text, std::string_view& mantissa, int& exponent) {
  auto pos = text.find_first_of("eE");
  mantissa = text.substr(0, pos);
  exponent = 0;
  if (pos == std::string_view::npos) {
    return true;
  }
  std::string_view e = text.substr(pos + 1);
  bool negative = false;
  if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
    negative = e[0] == '-';
    e.remove_prefix(1);
  }
  if (e.empty() || e.size() > 3) {
    return false;
  }
  for (char c : e) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
    exponent = exponent * 10 + (c - '0');
  }
  exponent = negative ? -exponent : exponent;
  return true;
}

}  // namespace

Result<Cents> parse_decimal_amount(std::string_view text) {
  std::string_view mantissa;
  int exponent = 0;
  if (text.empty() || !split_exponent(text, mantissa, exponent)) {
    return tl::unexpected(invalid(text).error());
  }
  // Collect digits; remember how many follow the decimal separator.
  std::string digits;
  int fraction_digits = 0;
  bool seen_separator = false;
  for (char c : mantissa) {
    if (c == '.' || c == ',') {
      if (seen_separator) {
        return tl::unexpected(invalid(text).error());
      }
      seen_separator = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digits.push_back(c);
      fraction_digits += seen_separator ? 1 : 0;
    } else {
      return tl::unexpected(invalid(text).error());
    }
  }
  if (digits.empty()) {
    return tl::unexpected(invalid(text).error());
  }
  // value = digits * 10^(exponent - fraction_digits); cents = value * 100.
  int scale = exponent - fraction_digits + 2;
  while (scale < 0) {
    if (digits.back() != '0') {
      return make_error(ErrorCode::kInvalidArgument,
                        "amount has more than two decimal places: " + std::string(text.substr(0, 32)));
    }
    digits.pop_back();
    ++scale;
    if (digits.empty()) {
      digits = "0";
    }
  }
  digits.append(static_cast<size_t>(scale), '0');
  auto first = digits.find_first_not_of('0');
  if (first == std::string::npos) {
    return Cents{0};
  }
  if (digits.size() - first > 18) {
    return tl::unexpected(invalid(text).error());
  }
  Cents cents = std::stoll(digits.substr(first));
  if (cents > kMaxCents) {
    return tl::unexpected(invalid(text).error());
  }
  return cents;
}

std::string format_amount(Cents cents) {
  std::string out = std::to_string(cents / 100);
  Cents fraction = cents % 100;
  if (fraction != 0) {
    out.push_back('.');
    out.push_back(static_cast<char>('0' + fraction / 10));
    if (fraction % 10 != 0) {
      out.push_back(static_cast<char>('0' + fraction % 10));
    }
  }
  return out;
}

}  // namespace idempay
