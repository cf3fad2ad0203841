#include "idempay/http/proxy_protocol.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace idempay::http {

namespace {

constexpr std::string_view kSignature("\r\n\r\n\0\r\nQUIT\n", 12);

Error malformed(std::string_view what) {
  return Error{ErrorCode::kInvalidArgument, "PROXY protocol header: " + std::string(what)};
}

uint8_t byte_at(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

// The address as 16 bytes (IPv4 mapped into ::ffff:0:0/96); false if it is not an address.
bool to_bytes(const std::string& text, std::array<uint8_t, 16>& out) {
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    out = {};
    out[10] = out[11] = 0xff;
    std::memcpy(out.data() + 12, &v4, 4);
    return true;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, 16);
    return true;
  }
  return false;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

Result<NetworkList> NetworkList::parse(std::string_view list) {
  NetworkList out;
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string item = trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (item.empty()) {
      continue;
    }
    auto slash = item.find('/');
    std::string address = item.substr(0, slash);
    Network n;
    if (!to_bytes(address, n.bytes)) {
      return make_error(ErrorCode::kInvalidArgument, "\"" + item + "\" is not an IP address or CIDR network");
    }
    bool v4 = address.find(':') == std::string::npos;
    int max_bits = v4 ? 32 : 128;
    int bits = max_bits;
    if (slash != std::string::npos) {
      std::string length = item.substr(slash + 1);
      bool digits = !length.empty() && length.size() <= 3 &&
                    length.find_first_not_of("0123456789") == std::string::npos;
      bits = digits ? std::stoi(length) : -1;
      if (bits < 0 || bits > max_bits) {
        return make_error(ErrorCode::kInvalidArgument, "\"" + item + "\" has an invalid prefix length");
      }
    }
    n.prefix_bits = v4 ? 96 + bits : bits;
    out.networks_.push_back(n);
  }
  return out;
}

bool NetworkList::contains(std::string_view address) const {
  std::array<uint8_t, 16> bytes{};
  if (networks_.empty() || !to_bytes(std::string(address), bytes)) {
    return false;
  }
  for (const Network& n : networks_) {
    bool inside = true;
    for (int bit = 0; bit < n.prefix_bits && inside; ++bit) {
      uint8_t mask = static_cast<uint8_t>(0x80 >> (bit % 8));
      inside = (bytes[bit / 8] & mask) == (n.bytes[bit / 8] & mask);
    }
    if (inside) {
      return true;
    }
  }
  return false;
}

Result<size_t> proxy_v2_block_length(std::string_view prefix) {
  if (prefix.size() < kProxyV2PrefixBytes || prefix.substr(0, kSignature.size()) != kSignature) {
    return tl::unexpected(malformed("missing (a trusted proxy must send PROXY protocol v2)"));
  }
  if ((byte_at(prefix, 12) >> 4) != 2) {
    return tl::unexpected(malformed("not version 2"));
  }
  size_t length = (size_t{byte_at(prefix, 14)} << 8) | byte_at(prefix, 15);
  if (length > kProxyV2MaxBlockBytes) {
    return tl::unexpected(malformed("longer than " + std::to_string(kProxyV2MaxBlockBytes) + " bytes"));
  }
  return length;
}

Result<std::string> proxy_v2_source(std::string_view header) {
  auto length = proxy_v2_block_length(header);
  if (!length) {
    return tl::unexpected(length.error());
  }
  if (header.size() != kProxyV2PrefixBytes + *length) {
    return tl::unexpected(malformed("its length does not match"));
  }
  uint8_t command = byte_at(header, 12) & 0x0f;
  if (command == 0x0) {
    return std::string();  // LOCAL: the proxy speaking for itself
  }
  if (command != 0x1) {
    return tl::unexpected(malformed("unknown command"));
  }
  std::string_view block = header.substr(kProxyV2PrefixBytes);
  uint8_t family = byte_at(header, 13) >> 4;
  char text[INET6_ADDRSTRLEN] = {};
  if (family == 0x1 && block.size() >= 12) {  // IPv4: source, destination, ports
    if (inet_ntop(AF_INET, block.data(), text, sizeof text) == nullptr) {
      return tl::unexpected(malformed("bad IPv4 address"));
    }
    return std::string(text);
  }
  if (family == 0x2 && block.size() >= 36) {  // IPv6 likewise
    if (inet_ntop(AF_INET6, block.data(), text, sizeof text) == nullptr) {
      return tl::unexpected(malformed("bad IPv6 address"));
    }
    return std::string(text);
  }
  if (family == 0x0 || family == 0x3) {
    return std::string();  // UNSPEC or UNIX: no address to use
  }
  return tl::unexpected(malformed("address block too short for its family"));
}

}  // namespace idempay::http
