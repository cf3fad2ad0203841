#pragma once
// An acquirer reached over HTTP with idempay's own acquirer protocol (docs/acquirer-protocol.md).
#include <chrono>
#include <memory>
#include <string>

#include "idempay/acquirers/extension.hpp"
#include "idempay/domain/acquirer.hpp"
#include "idempay/http/client.hpp"

namespace idempay::acquirer {

/// An acquirer reached over HTTP with the stub's JSON protocol (see docs/acquirer-protocol.md).
/// A non-empty `api_key` is sent as `Authorization: Bearer KEY` with every call. An
/// authorization that carries a Secure Proxy URL and card tokens is POSTed to the proxy with
/// `X-PROVIDER-Forward-To` naming the acquirer's URL and the acquirer's headers prefixed
/// `X-PROVIDER-Forward-`; every other call goes to the acquirer directly. Null for a
/// malformed URL or key.
std::unique_ptr<domain::Acquirer> make_http_acquirer(const std::string& base_url, std::chrono::milliseconds timeout,
                                             const std::string& api_key = {},
                                                     SecureProxyOptions proxy = {});

/// The kind "http" (extension.hpp): an entry's `url` and `apiKey`, its acquirer over idempay's
/// own protocol; no webhook route of its own (its events come to /webhooks/acquirer).
const Kind& http_kind();

}  // namespace idempay::acquirer
