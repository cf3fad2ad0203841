#pragma once
// An acquirer reached over HTTP with idempay's own acquirer protocol (docs/acquirer-protocol.md).
#include <chrono>
#include <memory>
#include <string>

#include "idempay/domain/acquirer.hpp"
#include "idempay/http/client.hpp"

namespace idempay::acquirer {

/// How authorizations with card tokens reach the acquirer through the gateway's Secure Proxy.
struct SecureProxyOptions {
  /// The proxy may be on loopback or a private network, over plain http (tests only; the
  /// proxy URL's host was checked against --secure-proxy-allowed-hosts). Default: false
  bool allow_private = false;
  /// Extra PEM CA trusted for the proxy's TLS, besides the system store. Default: none
  std::string extra_ca_file;
};

/// The HTTP client settings of an acquirer reached through the Secure Proxy: its extra CA
/// trusted, no client certificate of idempay's own presented.
http::ClientOptions proxy_client_options(const SecureProxyOptions& proxy);

/// An acquirer reached over HTTP with the stub's JSON protocol (see docs/acquirer-protocol.md).
/// A non-empty `api_key` is sent as `Authorization: Bearer KEY` with every call. An
/// authorization that carries a Secure Proxy URL and card tokens is POSTed to the proxy with
/// `X-PROVIDER-Forward-To` naming the acquirer's URL and the acquirer's headers prefixed
/// `X-PROVIDER-Forward-`; every other call goes to the acquirer directly. Null for a
/// malformed URL or key.
std::unique_ptr<domain::Acquirer> make_http_acquirer(const std::string& base_url, std::chrono::milliseconds timeout,
                                             const std::string& api_key = {},
                                                     SecureProxyOptions proxy = {});

}  // namespace idempay::acquirer
