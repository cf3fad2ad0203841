#include "idempay/base/json_writer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace idempay {

namespace {

constexpr uint64_t kEachByte = 0x0101010101010101ULL;
constexpr uint64_t kHighBits = 0x8080808080808080ULL;

bool needs_escape(unsigned char u) { return u < 0x20 || u == '"' || u == '\\'; }

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

void append_escaped(std::string& out, unsigned char u) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (u) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view v) {
  out.push_back('"');
  // Characters that need no escape are copied in runs, and found eight at a time: stored
  // records embed whole JSON answers, so this is most of the bytes a payment writes.
  const char* data = v.data();
  const size_t size = v.size();
  size_t run = 0;
  size_t i = 0;
  while (i < size) {
    if (i + 8 <= size) {
      uint64_t word;
      std::memcpy(&word, data + i, 8);
      if (!any_needs_escape(word)) {
        i += 8;
        continue;
      }
    }
    for (size_t end = std::min(size, i + 8); i < end; ++i) {
      auto u = static_cast<unsigned char>(data[i]);
      if (!needs_escape(u)) {
        continue;
      }
      out.append(data + run, i - run);
      run = i + 1;
      append_escaped(out, u);
    }
  }
  out.append(data + run, size - run);
  out.push_back('"');
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
  out_ += std::to_string(v);
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
