#include "idempay/base/visible_text.hpp"

#include <cstdint>

namespace idempay {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// The code point of the UTF-8 sequence at the start of `s` and its length; length 0 for a byte
// that does not start a valid sequence (overlong forms and surrogates included).
struct Decoded {
  uint32_t code = 0;
  size_t length = 0;
};

Decoded decode(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char b = byte(0);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || n > s.size()) {
    return {};
  }
  uint32_t code = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xc0) != 0x80) {
      return {};
    }
    code = (code << 6) | (byte(i) & 0x3f);
  }
  static constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kLeast[n] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
    return {};
  }
  return {code, n};
}

// A C1 control, or a character that changes the order in which text is displayed.
bool is_hidden_control(uint32_t code) {
  return (code >= 0x80 && code <= 0x9f) || code == 0x061c || code == 0x200e || code == 0x200f
         || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}

void append_u(std::string& out, uint32_t code) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) {
    out += kHex[(code >> shift) & 0xf];
  }
}

void append_x(std::string& out, unsigned char b) {
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 0xf];
}

}  // namespace

void append_visible(std::string& out, std::string_view text) {
  out.reserve(out.size() + text.size());
  for (size_t i = 0; i < text.size();) {
    auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 && b < 0x7f) {
      if (b == '\\') {
        out += '\\';
      }
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    if (b == '\n' || b == '\r' || b == '\t') {
      out += b == '\n' ? "\\n" : b == '\r' ? "\\r" : "\\t";
      ++i;
      continue;
    }
    Decoded d = b < 0x80 ? Decoded{} : decode(text.substr(i));
    if (d.length == 0) {
      append_x(out, b);
      ++i;
    } else if (is_hidden_control(d.code)) {
      append_u(out, d.code);
      i += d.length;
    } else {
      out.append(text.substr(i, d.length));
      i += d.length;
    }
  }
}

std::string visible(std::string_view text) {
  std::string out;
  append_visible(out, text);
  return out;
}

bool is_plain_text(std::string_view text, bool tab) {
  for (size_t i = 0; i < text.size();) {
    auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      if ((b < 0x20 && !(tab && b == '\t')) || b == 0x7f) {
        return false;
      }
      ++i;
      continue;
    }
    Decoded d = decode(text.substr(i));
    if (d.length == 0 || is_hidden_control(d.code)) {
      return false;
    }
    i += d.length;
  }
  return true;
}

std::string terminal_safe_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size();) {
    auto b = static_cast<unsigned char>(json[i]);
    if (b < 0x80 && b != 0x7f) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    Decoded d = b == 0x7f ? Decoded{0x7f, 1} : decode(json.substr(i));
    if (d.length == 0) {
      append_u(out, 0xfffd);
      ++i;
    } else if (d.code == 0x7f || is_hidden_control(d.code)) {
      append_u(out, d.code);
      i += d.length;
    } else {
      out.append(json.substr(i, d.length));
      i += d.length;
    }
  }
  return out;
}

}  // namespace idempay
