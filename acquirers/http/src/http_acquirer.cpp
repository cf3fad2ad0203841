#include "idempay/acquirers/http_acquirer.hpp"
#include "idempay/http/client.hpp"
#include "idempay/acquirers/wire.hpp"

namespace idempay::acquirer {

namespace {

// Turns a raw HTTP answer into the decoded value; non-2xx answers are kUnavailable because a
// stub/acquirer error means the call did not take effect.
template <class T, class Decode>
http::ClientCallback decoding(Callback<T> done, Decode decode) {
  return [done = std::move(done), decode](Result<http::ClientResponse> r) {
    if (!r) {
      return done(tl::unexpected(r.error()));
    }
    if (r->status < 200 || r->status >= 300) {
      return done(make_error(ErrorCode::kUnavailable,
                             "acquirer answered HTTP " + std::to_string(r->status)));
    }
    done(decode(r->body));
  };
}

constexpr std::string_view kForwardPrefix = "x-provider-forward-";

class HttpAcquirer final : public Acquirer {
public:
  HttpAcquirer(std::string base_url, http::Url url, std::chrono::milliseconds timeout, const std::string& api_key,
               SecureProxyOptions proxy)
      : base_url_(std::move(base_url)),
        url_(std::move(url)),
        timeout_(timeout),
        proxy_(std::move(proxy)),
        client_(proxy_client_options(proxy_)) {
    while (!base_url_.empty() && base_url_.back() == '/') {
      base_url_.pop_back();
    }
    if (!api_key.empty()) {
      headers_.push_back({"authorization", "Bearer " + api_key});
    }
  }

  void authorize(AuthorizeCall call, Callback<Authorization> done) override {
    if (through_secure_proxy(call)) {
      return authorize_through_proxy(std::move(call), std::move(done));
    }
    client_.request(url_, "POST", "/authorize", wire::encode(call), timeout_,
                    decoding(std::move(done), wire::decode_authorization), headers_);
  }

  void operate(OperationCall call, Callback<OperationOutcome> done) override {
    client_.request(url_, "POST", "/operations", wire::encode(call), timeout_,
                    decoding(std::move(done), wire::decode_operation_outcome), headers_);
  }

  void status(std::string key, Callback<std::optional<Authorization>> done) override {
    client_.request(url_, "GET", "/authorizations/" + key, "", timeout_,
                    [done = std::move(done)](Result<http::ClientResponse> r) {
                      if (r && r->status == 404) {
                        return done(std::optional<Authorization>());
                      }
                      if (!r || r->status != 200) {
                        return done(make_error(ErrorCode::kUnavailable, "acquirer status call failed"));
                      }
                      auto a = wire::decode_authorization(r->body);
                      if (!a) {
                        return done(tl::unexpected(a.error()));
                      }
                      done(std::optional<Authorization>(std::move(*a)));
                    },
                    headers_);
  }

private:
  // The gateway substitutes the tokens and relays the acquirer's answer. Any failure — the
  // proxy's own 400/403/500, an acquirer error passed through, a timeout — leaves the outcome
  // unknown to the caller, which settles it by a status call under the same key.
  void authorize_through_proxy(AuthorizeCall call, Callback<Authorization> done) {
    call.card.number = call.card.number_token;
    call.card.holder = call.card.holder_token;
    call.card.csc = call.card.csc_token;
    http::OutboundRequest r;
    r.method = "POST";
    r.url = call.secure_proxy_url;
    r.headers = {{"content-type", "application/json"},
                 {"accept", "application/json"},
                 {std::string(kForwardPrefix) + "to", base_url_ + "/authorize"}};
    for (const auto& h : headers_) {
      r.headers.push_back({std::string(kForwardPrefix) + h.name, h.value});
    }
    r.body = wire::encode(call);
    r.connect_timeout = timeout_;
    r.total_timeout = timeout_;
    r.max_response_bytes = 1024 * 1024;
    r.allow_private = proxy_.allow_private;
    client_.send(std::move(r), [done = std::move(done)](Result<http::ClientResponse> answer) {
      if (answer && answer->status >= 200 && answer->status < 300) {
        return done(wire::decode_authorization(answer->body));
      }
      done(make_error(ErrorCode::kTimeout,
                      answer ? "secure proxy answered HTTP " + std::to_string(answer->status)
                             : "secure proxy: " + answer.error().message));
    });
  }

  std::string base_url_;
  http::Url url_;
  std::chrono::milliseconds timeout_;
  SecureProxyOptions proxy_;
  std::vector<http::Header> headers_;  // the merchant's credentials at this acquirer, if any
  http::Client client_;
};

}  // namespace

std::unique_ptr<Acquirer> make_http_acquirer(const std::string& base_url, std::chrono::milliseconds timeout,
                                             const std::string& api_key, SecureProxyOptions proxy) {
  auto url = http::Url::parse(base_url);
  if (!url || !http::is_safe_header_value(api_key) || !http::is_safe_header_value(base_url)) {
    return nullptr;
  }
  return std::make_unique<HttpAcquirer>(base_url, std::move(*url), timeout, api_key, std::move(proxy));
}

}  // namespace idempay::acquirer
