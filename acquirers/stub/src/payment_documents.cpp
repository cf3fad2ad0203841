#include "payment_documents.hpp"

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

std::string pix_code(std::string_view pix_key, std::string_view merchant_name, std::string_view city,
                     Cents amount, std::string_view txid) {
  std::string amount_text = std::to_string(amount / 100) + "." + (amount % 100 < 10 ? "0" : "") +
                            std::to_string(amount % 100);
  std::string code = tlv("00", "01") +
                     tlv("26", tlv("00", "br.gov.bcb.pix") + tlv("01", pix_key)) +
                     tlv("52", "0000") + tlv("53", "986") + tlv("54", amount_text) + tlv("58", "BR") +
                     tlv("59", ascii_upper(merchant_name, 25)) + tlv("60", ascii_upper(city, 15)) +
                     tlv("62", tlv("05", txid.substr(0, 25))) + "6304";
  char crc[5];
  std::snprintf(crc, sizeof crc, "%04X", crc16_ccitt(code));
  return code + crc;
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
  png_set_IHDR(png, info, size, size, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  std::vector<png_byte> row(static_cast<size_t>(size));
  for (int y = 0; y < size; ++y) {
    int my = y / kScale - kMargin;
    for (int x = 0; x < size; ++x) {
      int mx = x / kScale - kMargin;
      bool dark = mx >= 0 && my >= 0 && mx < qr->width && my < qr->width && (qr->data[my * qr->width + mx] & 1) != 0;
      row[static_cast<size_t>(x)] = dark ? 0 : 255;
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  QRcode_free(qr);
  return webhooks::base64_encode(png_bytes);
}

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
  Boleto b;
  b.barcode = without_dv.substr(0, 4) + std::to_string(dv) + without_dv.substr(4);
  std::string f1 = b.barcode.substr(0, 4) + b.barcode.substr(19, 5);
  std::string f2 = b.barcode.substr(24, 10);
  std::string f3 = b.barcode.substr(34, 10);
  f1 += std::to_string(boleto_mod10(f1));
  f2 += std::to_string(boleto_mod10(f2));
  f3 += std::to_string(boleto_mod10(f3));
  std::string f5 = b.barcode.substr(5, 14);
  b.line = f1 + f2 + f3 + std::to_string(dv) + f5;
  b.line_formatted = f1.substr(0, 5) + "." + f1.substr(5) + " " + f2.substr(0, 5) + "." + f2.substr(5) + " " +
                     f3.substr(0, 5) + "." + f3.substr(5) + " " + std::to_string(dv) + " " + f5;
  return b;
}

}  // namespace idempay::acquirer
