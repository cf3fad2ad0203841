#pragma once
// Callbacks to the gateway: the actors' callback transport over HTTP(S).
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "idempay/actors/payment_service.hpp"
#include "idempay/http/client.hpp"

namespace idempay::ppp {

struct CallbackTransportOptions {
  std::string app_key;      ///< sent as X-VTEX-API-AppKey (the connector's own credentials)
  std::string app_token;    ///< sent as X-VTEX-API-AppToken
  std::string signing_key;  ///< raw Standard Webhooks secret bytes
  /// Checked again before every attempt: a stored URL whose host is no longer allowed is a
  /// refused destination (dead letter), never contacted.
  http::DestinationRules destinations;
  /// A merchant's own VTEX credentials (key, token) for its payments' callbacks, instead of
  /// app_key/app_token; nullopt for none. Optional.
  std::function<std::optional<std::pair<std::string, std::string>>(const std::string& merchant)> merchant_credentials;
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds total_timeout{15'000};
  std::string extra_ca_file;
};

/// Posts callbacks over HTTP(S): the Create Payment answer as body, the connector's VTEX
/// credentials, and Standard Webhooks headers signed afresh for every attempt. Credentials
/// go only to URLs the destination rules allow.
class HttpCallbackTransport final : public actors::CallbackTransport {
public:
  explicit HttpCallbackTransport(CallbackTransportOptions options);
  void send(actors::CallbackAttempt attempt, std::function<void(actors::CallbackResult)> done) override;

private:
  CallbackTransportOptions options_;
  http::Client client_;
};

}  // namespace idempay::ppp
