// URLs taken from requests (callbackUrl, secureProxyUrl, returnUrl) and the host allowlists:
// whatever is accepted must be safe to put on a request line and in a Host header. And request
// paths as the route tables read them: a decoded parameter never holds '/' or a control
// character, and a match's canonical path matches the same route with the same parameters.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "idempay/http/routes.hpp"
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

  static const idempay::http::RouteTable routes({{"POST", "/payments/{}/refunds", 1}, {"GET", "/payments/{}", 2},
                                                  {"POST", "/pos/{}/terminal", 3}, {"GET", "/admin", 4}});
  for (const char* method : {"GET", "POST"}) {
    auto found = routes.find(method, input);
    if (!found.match) {
      continue;
    }
    for (const auto& param : found.match->params) {
      for (char c : param) {
        if (c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          std::abort();  // a parameter that could reach a path or a line
        }
      }
    }
    std::string canonical = found.match->canonical();
    // Parameters are raw in the canonical form: it matches again unless one holds a '%'.
    bool escaped = canonical.find('%') != std::string::npos;
    auto again = routes.find(method, canonical);
    if (!escaped && (!again.match || again.match->id != found.match->id || again.match->params != found.match->params)) {
      std::abort();
    }
  }
  return 0;
}
