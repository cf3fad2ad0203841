#pragma once
// What an acquirer hands out for asynchronous methods: Pix copy-and-paste codes (EMV BR Code)
// with their QR image, and boleto bar codes with their typeable line.
#include <cstdint>
#include <string>
#include <string_view>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"

namespace idempay::acquirer {

/// CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF), as the BR Code's field 63 requires.
uint16_t crc16_ccitt(std::string_view data);

/// A static Pix BR Code (EMV MPM) for `amount`, keyed by `pix_key`, with `txid` (≤ 25
/// alphanumerics) and the CRC in field 63.
std::string pix_code(std::string_view pix_key, std::string_view merchant_name, std::string_view city,
                     Cents amount, std::string_view txid);

/// A PNG (base64) of `text` as a QR code, error correction M, 4 px per module, 4-module margin.
Result<std::string> qr_png_base64(std::string_view text);

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
