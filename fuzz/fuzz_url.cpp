// URLs taken from requests (callbackUrl, secureProxyUrl, returnUrl) and the host allowlists:
// whatever is accepted must be safe to put on a request line and in a Host header.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "idempay/http/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto url = idempay::http::Url::parse(input)) {
    if (!idempay::http::is_safe_target(url->target) || !idempay::http::is_safe_header_value(url->host_header())) {
      std::abort();  // a parsed URL that could split a request
    }
  }
  auto hosts = idempay::http::HostAllowlist::parse("gateway.example,.vtexpayments.com.br,127.0.0.1");
  for (bool allow_private : {false, true}) {
    (void)idempay::http::check_destination(input, idempay::http::DestinationRules{*hosts, allow_private});
  }
  (void)idempay::http::HostAllowlist::parse(input);
  return 0;
}
