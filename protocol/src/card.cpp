#include "idempay/protocol/card.hpp"

#include <cctype>

namespace idempay {

namespace {
bool all_digits(std::string_view s) {
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return !s.empty();
}
}  // namespace

CardSummary summarize_card(const CardSecret& card, std::string_view proxy_bin, int proxy_length) {
  CardSummary s;
  s.expiration_month = card.expiration_month.substr(0, 2);
  s.expiration_year = card.expiration_year.substr(0, 4);
  const std::string& n = card.number;
  if (n.size() >= 12) {
    // Masked numbers such as "364901****2661" still yield BIN and last 4.
    std::string_view first = std::string_view(n).substr(0, 6);
    std::string_view last = std::string_view(n).substr(n.size() - 4);
    s.bin = all_digits(first) ? std::string(first) : std::string();
    s.last4 = all_digits(last) ? std::string(last) : std::string();
    s.number_length = static_cast<int>(n.size());
  } else {
    s.bin = all_digits(proxy_bin) ? std::string(proxy_bin.substr(0, 6)) : std::string();
    s.number_length = proxy_length;
  }
  return s;
}

bool is_valid_pan(std::string_view number) {
  if (number.size() < 12 || number.size() > 19 || !all_digits(number)) {
    return false;
  }
  int sum = 0;
  bool twice = false;
  for (auto it = number.rbegin(); it != number.rend(); ++it) {
    int d = *it - '0';
    if (twice) {
      d *= 2;
      d -= d > 9 ? 9 : 0;
    }
    sum += d;
    twice = !twice;
  }
  return sum % 10 == 0;
}

std::string redact_digit_runs(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      out.push_back(text[i++]);
      continue;
    }
    // Extend over digits and single separators.
    size_t j = i;
    size_t digits = 0;
    size_t end = i;
    while (j < text.size()) {
      char c = text[j];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++digits;
        end = j + 1;
      } else if (!(c == ' ' || c == '-') || j + 1 >= text.size() ||
                 !std::isdigit(static_cast<unsigned char>(text[j + 1]))) {
        break;
      }
      ++j;
    }
    if (digits >= 12) {
      out += "[redacted]";
    } else {
      out.append(text.substr(i, end - i));
    }
    i = end;
  }
  return out;
}

}  // namespace idempay
