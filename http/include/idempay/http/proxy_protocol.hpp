#pragma once
// The client's real address behind a load balancer: the PROXY protocol, version 2 (the binary
// header haproxy sends with `send-proxy-v2`), accepted only from trusted networks.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"

namespace idempay::http {

/// IP networks in CIDR notation, comma-separated: "127.0.0.1/32,10.0.0.0/8,fd00::/8"; an
/// address without a prefix length is that one address. IPv4 addresses also match in their
/// IPv4-mapped IPv6 form.
class NetworkList {
public:
  static Result<NetworkList> parse(std::string_view list);

  bool empty() const { return networks_.empty(); }
  /// True when `address` (text, as the socket names it) lies in one of the networks.
  bool contains(std::string_view address) const;

private:
  struct Network {
    std::array<uint8_t, 16> bytes{};  // IPv4 as IPv4-mapped IPv6
    int prefix_bits = 0;              // of the 128
  };
  std::vector<Network> networks_;
};

/// A PROXY v2 header starts with this 12-byte signature, then version and command, address
/// family, and the length of what follows (big-endian): 16 bytes in all.
inline constexpr size_t kProxyV2PrefixBytes = 16;
/// The longest address block accepted after the prefix (the addresses and haproxy's TLVs).
inline constexpr size_t kProxyV2MaxBlockBytes = 1024;

/// How many bytes follow the 16-byte `prefix`; kInvalidArgument if it is not a version 2
/// header (a v1 text header, plain HTTP, TLS) or announces more than kProxyV2MaxBlockBytes.
Result<size_t> proxy_v2_block_length(std::string_view prefix);

/// The client's address a whole header (prefix and block) carries, as text; empty for a
/// LOCAL command (the proxy's own health check) or an address family without one (UNSPEC,
/// UNIX): the connection's own address stands. kInvalidArgument for anything malformed.
Result<std::string> proxy_v2_source(std::string_view header);

}  // namespace idempay::http
