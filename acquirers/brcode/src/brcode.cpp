#include "idempay/acquirers/brcode.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include <png.h>
#include <qrencode.h>

#include "idempay/base/webhooks.hpp"

namespace idempay::acquirer {

uint16_t crc16_ccitt(std::string_view data) {
  uint16_t crc = 0xFFFF;
  for (unsigned char c : data) {
    crc ^= static_cast<uint16_t>(c << 8);
    for (int i = 0; i < 8; ++i) {
      crc = static_cast<uint16_t>((crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc;
}

namespace {

std::string tlv(std::string_view id, std::string_view value) {
  char len[3];
  std::snprintf(len, sizeof len, "%02zu", value.size());
  return std::string(id) + len + std::string(value);
}

std::string ascii_upper(std::string_view s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : (c >= 32 && c < 127 ? c : ' '));
  }
  return out;
}

void write_png_chunk(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), length);
}

}  // namespace

namespace {

// The merchant's name and city, the additional data and the CRC that close every BR Code.
std::string closed(std::string code, std::string_view merchant_name, std::string_view city, std::string_view txid) {
  code += tlv("58", "BR") + tlv("59", ascii_upper(merchant_name, 25)) + tlv("60", ascii_upper(city, 15)) +
          tlv("62", tlv("05", txid)) + "6304";
  char crc[5];
  std::snprintf(crc, sizeof crc, "%04X", crc16_ccitt(code));
  return code + crc;
}

}  // namespace

std::string pix_code(std::string_view pix_key, std::string_view merchant_name, std::string_view city,
                     Cents amount, std::string_view txid) {
  std::string amount_text = std::to_string(amount / 100) + "." + (amount % 100 < 10 ? "0" : "") +
                            std::to_string(amount % 100);
  std::string code = tlv("00", "01") + tlv("26", tlv("00", "br.gov.bcb.pix") + tlv("01", pix_key)) +
                     tlv("52", "0000") + tlv("53", "986") + tlv("54", amount_text);
  return closed(std::move(code), merchant_name, city, txid.substr(0, 25));
}

std::string dynamic_pix_code(std::string_view location, std::string_view merchant_name, std::string_view city) {
  // 01=12: the code is for one payment; the amount and the rest are in the payload at `location`.
  std::string code = tlv("00", "01") + tlv("01", "12") +
                     tlv("26", tlv("00", "br.gov.bcb.pix") + tlv("25", location.substr(0, 77))) +
                     tlv("52", "0000") + tlv("53", "986");
  return closed(std::move(code), merchant_name, city, "***");
}

Result<std::string> qr_png_base64(std::string_view text) {
  std::string input(text);
  QRcode* qr = QRcode_encodeString(input.c_str(), 0, QR_ECLEVEL_M, QR_MODE_8, 1);
  if (qr == nullptr) {
    return make_error(ErrorCode::kInternal, "QR encoding failed");
  }
  constexpr int kScale = 4;
  constexpr int kMargin = 4;
  const int size = (qr->width + 2 * kMargin) * kScale;
  std::string png_bytes;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    QRcode_free(qr);
    return make_error(ErrorCode::kInternal, "PNG encoding failed");
  }
  png_set_write_fn(png, &png_bytes, write_png_chunk, nullptr);
  // One bit per pixel and one filter for every row: a QR image is black and white, and each
  // row repeats the one above it or differs from it in whole modules, so the "up" filter
  // leaves deflate little to do. (Eight bits per pixel and libpng's adaptive choice among all
  // five filters per row cost about 1 ms per image, more than the rest of a Create Payment.)
  png_set_IHDR(png, info, size, size, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
  png_write_info(png, info);
  // Each module row is packed once and written kScale times.
  std::vector<png_byte> row(static_cast<size_t>((size + 7) / 8));
  for (int my = -kMargin; my < qr->width + kMargin; ++my) {
    std::fill(row.begin(), row.end(), png_byte{0xFF});  // white: a set bit
    for (int mx = 0; my >= 0 && my < qr->width && mx < qr->width; ++mx) {
      if ((qr->data[my * qr->width + mx] & 1) == 0) {
        continue;
      }
      for (int x = (mx + kMargin) * kScale, end = x + kScale; x < end; ++x) {
        row[static_cast<size_t>(x / 8)] &= static_cast<png_byte>(~(0x80u >> (x % 8)));
      }
    }
    for (int copy = 0; copy < kScale; ++copy) {
      png_write_row(png, row.data());
    }
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  QRcode_free(qr);
  return webhooks::base64_encode(png_bytes);
}

}  // namespace idempay::acquirer
