#pragma once
// Pix BR Codes (EMV QR Code Merchant Presented Mode, as the Banco Central's Manual de Padrões
// para Iniciação do Pix lays them out) and their QR images: the only library of idempay that
// links libqrencode and libpng, used by the stub, the API Pix adapter and its fake PSP.
#include <cstdint>
#include <string>
#include <string_view>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"

namespace idempay::acquirer {

/// CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF), as the BR Code's field 63 requires.
uint16_t crc16_ccitt(std::string_view data);

/// A static Pix BR Code for `amount`, keyed by `pix_key`, with `txid` (at most 25
/// alphanumerics) and the CRC in field 63.
std::string pix_code(std::string_view pix_key, std::string_view merchant_name, std::string_view city,
                     Cents amount, std::string_view txid);

/// A dynamic Pix BR Code: the payer's app fetches the charge from `location` (the PSP's
/// payload URL without its scheme, at most 77 characters); field 62 holds "***" as the
/// standard asks.
std::string dynamic_pix_code(std::string_view location, std::string_view merchant_name, std::string_view city);

/// A PNG (base64) of `text` as a QR code, error correction M, 4 px per module, 4-module margin.
Result<std::string> qr_png_base64(std::string_view text);

}  // namespace idempay::acquirer
