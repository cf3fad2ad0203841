#include "idempay/ppp/callbacks.hpp"

#include "idempay/base/webhooks.hpp"

namespace idempay::ppp {

namespace {
int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Retry-After in delta-seconds; an HTTP-date (or garbage) is ignored.
int64_t retry_after_seconds(std::string_view value) {
  if (value.empty() || value.size() > 9) {
    return -1;
  }
  int64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') {
      return -1;
    }
    n = n * 10 + (c - '0');
  }
  return n;
}

// Callbacks authenticate with the gateway's credentials, never with a client certificate.
http::ClientOptions client_options(std::string extra_ca_file) {
  http::ClientOptions options;
  options.extra_ca_file = std::move(extra_ca_file);
  return options;
}
}  // namespace

HttpCallbackTransport::HttpCallbackTransport(CallbackTransportOptions options)
    : options_(std::move(options)), client_(client_options(options_.extra_ca_file)) {}

void HttpCallbackTransport::send(actors::CallbackAttempt attempt, std::function<void(actors::CallbackResult)> done) {
  if (auto allowed = http::check_destination(attempt.url, options_.destinations); !allowed) {
    actors::CallbackResult refused;
    refused.error = Error{ErrorCode::kForbidden, allowed.error().message};
    return done(std::move(refused));
  }
  auto own = options_.merchant_credentials ? options_.merchant_credentials(attempt.merchant) : std::nullopt;
  const std::string& app_key = own ? own->first : options_.app_key;
  const std::string& app_token = own ? own->second : options_.app_token;
  int64_t now = unix_seconds();
  http::OutboundRequest r;
  r.method = "POST";
  r.url = attempt.url;
  r.headers = {{"content-type", "application/json"},
               {"accept", "application/json"},
               {"x-vtex-api-appkey", app_key},
               {"x-vtex-api-apptoken", app_token},
               {"webhook-id", attempt.delivery_id},
               {"webhook-timestamp", std::to_string(now)},
               {"webhook-signature", webhooks::sign(options_.signing_key, attempt.delivery_id, now, attempt.body)}};
  r.body = std::move(attempt.body);
  r.connect_timeout = options_.connect_timeout;
  r.total_timeout = options_.total_timeout;
  r.max_response_bytes = 64 * 1024;
  r.allow_private = options_.destinations.allow_private;
  client_.send(std::move(r), [done = std::move(done)](Result<http::ClientResponse> res) {
    actors::CallbackResult out;
    if (!res) {
      out.error = res.error();
    } else {
      out.status = res->status;
      out.retry_after_seconds = retry_after_seconds(res->header("retry-after"));
    }
    done(std::move(out));
  });
}

}  // namespace idempay::ppp
