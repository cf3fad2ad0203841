#pragma once

#include <string_view>

namespace idempay::http {

/// True for globally routable unicast addresses. False for loopback, private (RFC 1918, ULA),
/// link-local (incl. the 169.254.169.254 metadata service), CGNAT (100.64/10), "this network",
/// documentation, benchmarking, multicast, reserved and broadcast ranges; IPv4-mapped,
/// IPv4-compatible and NAT64 IPv6 addresses are judged by the IPv4 address they carry.
/// Unparseable text is not public.
bool is_public_address(std::string_view address);

}  // namespace idempay::http
