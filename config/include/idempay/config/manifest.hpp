#pragma once
// What this deployment offers the gateway (--manifest FILE; docs/configuration.md): the
// methods, each with its split mode and answer timers, the merchant's custom fields and the
// auto-settle window — served as GET /manifest and applied to Create Payment answers.
#include <map>
#include <string>

#include "idempay/base/error.hpp"
#include "idempay/protocol/methods.hpp"

namespace idempay::config {

struct Manifest {
  std::string manifest_json;         ///< GET /manifest
  std::string payment_methods_json;  ///< GET /payment-methods (deprecated route)
  std::map<std::string, ppp::MethodTerms, std::less<>> methods;  ///< the methods offered
};

/// Every method the connector knows, split disabled, default timers.
Manifest default_manifest();

/// Reads and checks a manifest file: known method names, each once; allowsSplit one of
/// disabled|onAuthorize|onCapture; timers within the protocol's bounds; customFields of type
/// text|password|select (a select with options); autoSettleDelay as whole-hour strings with
/// minimum <= maximum. kInvalidArgument naming the place otherwise.
Result<Manifest> load_manifest(const std::string& path);

}  // namespace idempay::config
