#pragma once
// Boleto bar codes and their typeable lines (linha digitável), as FEBRABAN lays them out: made
// for a due date and an amount (the stub, the fake Adyen), or read from a line an acquirer
// issued (Adyen's voucher), each check digit verified.
#include <cstdint>
#include <string>
#include <string_view>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"

namespace idempay::acquirer {

struct Boleto {
  std::string barcode;         ///< 44 digits
  std::string line;            ///< 47-digit typeable line
  std::string line_formatted;  ///< "AAAAA.AAAAA BBBBB.BBBBBB CCCCC.CCCCCC D EEEEEEEEEEEEEE"
};

/// Bar code and typeable line for bank `bank` (3 digits), due `due_days_since_epoch` (days since
/// 1970-01-01), `amount` (≤ 99,999,999.99) and a 25-digit free field; kInvalidArgument otherwise.
Result<Boleto> make_boleto(std::string_view bank, int64_t due_days_since_epoch, Cents amount,
                           std::string_view free_field);

/// The boleto of a typeable line as an acquirer shows it (its 47 digits, with or without the
/// dots and spaces of its printed form): the bar code it stands for, the line and the line
/// formatted; kInvalidArgument for anything else, a wrong check digit included.
Result<Boleto> boleto_from_line(std::string_view printed);

/// Modulo-10 and modulo-11 check digits of the boleto standard (FEBRABAN).
int boleto_mod10(std::string_view digits);
int boleto_mod11(std::string_view digits);

}  // namespace idempay::acquirer
