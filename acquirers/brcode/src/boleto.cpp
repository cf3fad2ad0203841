#include "idempay/acquirers/boleto.hpp"

#include <cstdio>

namespace idempay::acquirer {

int boleto_mod10(std::string_view digits) {
  int sum = 0;
  int weight = 2;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    int p = (*it - '0') * weight;
    sum += p / 10 + p % 10;
    weight = weight == 2 ? 1 : 2;
  }
  return (10 - sum % 10) % 10;
}

int boleto_mod11(std::string_view digits) {
  int sum = 0;
  int weight = 2;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    sum += (*it - '0') * weight;
    weight = weight == 9 ? 2 : weight + 1;
  }
  int dv = 11 - sum % 11;
  return dv == 0 || dv == 10 || dv == 11 ? 1 : dv;
}

namespace {

// The typeable line of a 44-digit bar code, with the check digit of each of its first three fields.
Boleto boleto_of_barcode(std::string barcode) {
  Boleto b;
  b.barcode = std::move(barcode);
  std::string f1 = b.barcode.substr(0, 4) + b.barcode.substr(19, 5);
  std::string f2 = b.barcode.substr(24, 10);
  std::string f3 = b.barcode.substr(34, 10);
  f1 += std::to_string(boleto_mod10(f1));
  f2 += std::to_string(boleto_mod10(f2));
  f3 += std::to_string(boleto_mod10(f3));
  std::string dv = b.barcode.substr(4, 1);
  std::string f5 = b.barcode.substr(5, 14);
  b.line = f1 + f2 + f3 + dv + f5;
  b.line_formatted = f1.substr(0, 5) + "." + f1.substr(5) + " " + f2.substr(0, 5) + "." + f2.substr(5) + " "
                     + f3.substr(0, 5) + "." + f3.substr(5) + " " + dv + " " + f5;
  return b;
}

}  // namespace

Result<Boleto> make_boleto(std::string_view bank, int64_t due_days_since_epoch, Cents amount,
                           std::string_view free_field) {
  auto digits_only = [](std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (bank.size() != 3 || !digits_only(bank) || free_field.size() != 25 || !digits_only(free_field) ||
      amount < 0 || amount > 9'999'999'999) {
    return make_error(ErrorCode::kInvalidArgument, "boleto needs a 3-digit bank, 25-digit free field, amount <= 99,999,999.99");
  }
  // Due-date factor: days since 1997-10-07; after 9999 (2025-02-21) it restarts at 1000.
  constexpr int64_t kBase = 10'141;  // 1997-10-07 in days since 1970-01-01
  int64_t days = due_days_since_epoch - kBase;
  if (days < 1000) {
    return make_error(ErrorCode::kInvalidArgument, "boleto due date out of range");
  }
  int64_t factor = days <= 9999 ? days : (days - 10'000) % 9'000 + 1'000;
  char head[20];
  std::snprintf(head, sizeof head, "%04lld%010lld", static_cast<long long>(factor), static_cast<long long>(amount));
  std::string without_dv = std::string(bank) + "9" + head + std::string(free_field);  // 43 digits
  int dv = boleto_mod11(without_dv);
  return boleto_of_barcode(without_dv.substr(0, 4) + std::to_string(dv) + without_dv.substr(4));
}

Result<Boleto> boleto_from_line(std::string_view printed) {
  std::string line;
  for (char c : printed) {
    if (c >= '0' && c <= '9') {
      line.push_back(c);
    } else if (c != '.' && c != ' ') {
      return make_error(ErrorCode::kInvalidArgument, "a boleto line holds digits, dots and spaces only");
    }
  }
  if (line.size() != 47) {
    return make_error(ErrorCode::kInvalidArgument, "a boleto line has 47 digits");
  }
  // The line is the bar code's fields reordered: bank and currency, the free field in three
  // parts each with its check digit, the bar code's own check digit, due factor and amount.
  std::string barcode = line.substr(0, 4) + line.substr(32, 1) + line.substr(33, 14) + line.substr(4, 5)
                        + line.substr(10, 10) + line.substr(21, 10);
  Boleto b = boleto_of_barcode(barcode);
  if (b.line != line || boleto_mod11(barcode.substr(0, 4) + barcode.substr(5)) != barcode[4] - '0') {
    return make_error(ErrorCode::kInvalidArgument, "a boleto line's check digits do not match");
  }
  return b;
}

}  // namespace idempay::acquirer
