#pragma once
// ASCII case folding for the protocol's tokens (header names, schemes, hosts): no locale.
#include <string>
#include <string_view>

namespace idempay::http {

inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = ascii_lower(c);
  }
  return out;
}

}  // namespace idempay::http
