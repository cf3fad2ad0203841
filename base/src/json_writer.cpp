#include "idempay/base/json_writer.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace idempay {

namespace {

constexpr uint64_t kEachByte = 0x0101010101010101ULL;
constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// Whether any of the 8 bytes of `w` is below 0x20, a quote or a backslash (the classic
// "has less" and "has zero" bit tricks: exact for the question "any byte?").
bool any_needs_escape(uint64_t w) {
  uint64_t control = (w - kEachByte * 0x20) & ~w;
  uint64_t q = w ^ (kEachByte * '"');
  uint64_t b = w ^ (kEachByte * '\\');
  uint64_t quote = (q - kEachByte) & ~q;
  uint64_t backslash = (b - kEachByte) & ~b;
  return ((control | quote | backslash) & kHighBits) != 0;
}

// Bytes each byte adds when escaped: 1 for \" \\ \n \r \t, 5 for the other control
// characters (\u00XX), 0 for the rest.
constexpr std::array<uint8_t, 256> kEscapeGrowth = [] {
  std::array<uint8_t, 256> growth{};
  for (int c = 0; c < 0x20; ++c) {
    growth[c] = 5;
  }
  for (unsigned char c : {'"', '\\', '\n', '\r', '\t'}) {
    growth[c] = 1;
  }
  return growth;
}();

// Writes `v` escaped at `out`, which has room for it.
void write_escaped(char* out, std::string_view v) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : v) {
    auto u = static_cast<unsigned char>(c);
    if (kEscapeGrowth[u] == 0) {
      *out++ = c;
      continue;
    }
    *out++ = '\\';
    switch (u) {
      case '"': *out++ = '"'; break;
      case '\\': *out++ = '\\'; break;
      case '\n': *out++ = 'n'; break;
      case '\r': *out++ = 'r'; break;
      case '\t': *out++ = 't'; break;
      default:
        *out++ = 'u';
        *out++ = '0';
        *out++ = '0';
        *out++ = kHex[u >> 4];
        *out++ = kHex[u & 0xf];
    }
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view v) {
  // The bytes before the first one to escape are found eight at a time and copied as they
  // are; from there, the escaped length is counted and the rest written in place, in one
  // resize (stored records embed whole JSON answers, a quote every few bytes: appending
  // each escape and each run between two of them was most of what a record cost to encode).
  const char* data = v.data();
  const size_t size = v.size();
  size_t clean = 0;
  while (clean + 8 <= size) {
    uint64_t word;
    std::memcpy(&word, data + clean, 8);
    if (any_needs_escape(word)) {
      break;
    }
    clean += 8;
  }
  while (clean < size && kEscapeGrowth[static_cast<unsigned char>(data[clean])] == 0) {
    ++clean;
  }
  if (clean == size) {  // keys and most values
    out.push_back('"');
    out.append(data, size);
    out.push_back('"');
    return;
  }
  std::string_view rest = v.substr(clean);
  size_t growth = 0;
  for (char c : rest) {
    growth += kEscapeGrowth[static_cast<unsigned char>(c)];
  }
  size_t at = out.size();
  out.resize(at + size + growth + 2);
  char* p = out.data() + at;
  *p++ = '"';
  std::memcpy(p, data, clean);
  write_escaped(p + clean, rest);
  out.back() = '"';
}

void JsonWriter::separate() {
  if (need_comma_) {
    out_.push_back(',');
  }
  need_comma_ = true;
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_.push_back('{');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_.push_back('}');
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_.push_back('[');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_.push_back(']');
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  append_json_string(out_, k);
  out_.push_back(':');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view v) {
  separate();
  append_json_string(out_, v);
  return *this;
}

JsonWriter& JsonWriter::number(int64_t v) {
  separate();
  char digits[24];  // an int64's 19 digits and its sign
  auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  out_.append(digits, end);
  return *this;
}

JsonWriter& JsonWriter::raw_number(std::string_view v) {
  separate();
  out_ += v;
  return *this;
}

JsonWriter& JsonWriter::boolean(bool v) {
  separate();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::string_or_null(std::string_view v) {
  return v.empty() ? null() : string(v);
}

}  // namespace idempay
