#include "idempay/base/money.hpp"

#include <algorithm>
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
  // Check the characters; count the digits and those that follow the decimal separator.
  size_t digit_count = 0;
  int fraction_digits = 0;
  bool seen_separator = false;
  for (char c : mantissa) {
    if (c == '.' || c == ',') {
      if (seen_separator) {
        return tl::unexpected(invalid(text).error());
      }
      seen_separator = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      ++digit_count;
      fraction_digits += seen_separator ? 1 : 0;
    } else {
      return tl::unexpected(invalid(text).error());
    }
  }
  if (digit_count == 0) {
    return tl::unexpected(invalid(text).error());
  }
  // cents = digits * 10^scale. A negative scale drops the last digits, which must be zeros;
  // the value is accumulated from the digits kept, without a copy (amounts are read for every
  // item of every order).
  int scale = exponent - fraction_digits + 2;
  size_t kept = digit_count;
  if (scale < 0) {
    kept = digit_count - std::min(digit_count, static_cast<size_t>(-scale));
    scale = 0;
  }
  Cents cents = 0;
  size_t significant = 0;
  size_t position = 0;
  for (char c : mantissa) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      continue;
    }
    if (position++ >= kept) {
      if (c != '0') {
        return make_error(ErrorCode::kInvalidArgument,
                          "amount has more than two decimal places: " + std::string(text.substr(0, 32)));
      }
    } else if (significant > 0 || c != '0') {
      // At most 18 significant digits, which an int64 holds.
      if (++significant > 18) {
        return tl::unexpected(invalid(text).error());
      }
      cents = cents * 10 + (c - '0');
    }
  }
  if (significant == 0) {
    return Cents{0};
  }
  if (significant + static_cast<size_t>(scale) > 18) {
    return tl::unexpected(invalid(text).error());
  }
  for (int i = 0; i < scale; ++i) {
    cents *= 10;
  }
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

std::string format_amount_fixed(Cents cents) {
  std::string sign = cents < 0 ? "-" : "";
  uint64_t magnitude = cents < 0 ? 0 - static_cast<uint64_t>(cents) : static_cast<uint64_t>(cents);
  std::string fraction = std::to_string(magnitude % 100);
  return sign + std::to_string(magnitude / 100) + "." + (fraction.size() == 1 ? "0" : "") + fraction;
}

}  // namespace idempay
