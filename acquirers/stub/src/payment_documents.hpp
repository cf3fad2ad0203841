#pragma once
// Boleto bar codes with their typeable line, as the stub hands them out (its Pix codes are
// brcode.hpp's).
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

/// Modulo-10 and modulo-11 check digits of the boleto standard (FEBRABAN).
int boleto_mod10(std::string_view digits);
int boleto_mod11(std::string_view digits);

}  // namespace idempay::acquirer
