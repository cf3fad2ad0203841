#include "idempay/http/address_policy.hpp"

#include <array>
#include <cstdint>

#include <boost/asio/ip/address.hpp>

namespace idempay::http {

namespace {

struct V4Range {
  uint32_t network;
  int prefix;
};

constexpr uint32_t v4(int a, int b, int c, int d) {
  return (static_cast<uint32_t>(a) << 24) | (static_cast<uint32_t>(b) << 16) |
         (static_cast<uint32_t>(c) << 8) | static_cast<uint32_t>(d);
}

// IANA IPv4 special-purpose registry, plus multicast and the reserved class E.
constexpr std::array<V4Range, 16> kBlockedV4 = {{
    {v4(0, 0, 0, 0), 8},       {v4(10, 0, 0, 0), 8},      {v4(100, 64, 0, 0), 10},
    {v4(127, 0, 0, 0), 8},     {v4(169, 254, 0, 0), 16},  {v4(172, 16, 0, 0), 12},
    {v4(192, 0, 0, 0), 24},    {v4(192, 0, 2, 0), 24},    {v4(192, 88, 99, 0), 24},
    {v4(192, 168, 0, 0), 16},  {v4(198, 18, 0, 0), 15},   {v4(198, 51, 100, 0), 24},
    {v4(203, 0, 113, 0), 24},  {v4(224, 0, 0, 0), 4},     {v4(240, 0, 0, 0), 4},
    {v4(255, 255, 255, 255), 32},
}};

bool public_v4(uint32_t a) {
  for (const auto& r : kBlockedV4) {
    uint32_t mask = r.prefix == 0 ? 0 : ~uint32_t{0} << (32 - r.prefix);
    if ((a & mask) == r.network) {
      return false;
    }
  }
  return true;
}

bool public_v6(const boost::asio::ip::address_v6& a) {
  auto b = a.to_bytes();
  auto embedded_v4 = [&](size_t at) {
    return public_v4(v4(b[at], b[at + 1], b[at + 2], b[at + 3]));
  };
  bool first_80_zero = true;
  for (size_t i = 0; i < 10; ++i) {
    first_80_zero &= b[i] == 0;
  }
  if (first_80_zero && b[10] == 0xff && b[11] == 0xff) {
    return embedded_v4(12);  // ::ffff:a.b.c.d
  }
  if (first_80_zero && b[10] == 0 && b[11] == 0) {
    return embedded_v4(12) && !a.is_loopback() && !a.is_unspecified();  // ::a.b.c.d, ::1, ::
  }
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {
    return embedded_v4(12);  // 64:ff9b::/96 NAT64
  }
  if ((b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || b[0] == 0xff) {
    return false;  // ULA fc00::/7, link-local fe80::/10, multicast ff00::/8
  }
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) {
    return false;  // documentation 2001:db8::/32
  }
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] < 0x02) {
    return false;  // 2001::/23 IETF protocol assignments (Teredo, ORCHID, ...)
  }
  if (b[0] == 0x01 && b[1] == 0x00 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 && b[6] == 0 &&
      b[7] == 0) {
    return false;  // discard-only 100::/64
  }
  return (b[0] & 0xe0) == 0x20;  // only global unicast 2000::/3 remains public
}

}  // namespace

bool is_public_address(std::string_view address) {
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address(std::string(address), ec);
  if (ec) {
    return false;
  }
  return a.is_v4() ? public_v4(a.to_v4().to_uint()) : public_v6(a.to_v6());
}

}  // namespace idempay::http
