#include "idempay/acquirer/acquirer.hpp"
#include "idempay/http/client.hpp"
#include "wire.hpp"

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

class HttpAcquirer final : public Acquirer {
public:
  HttpAcquirer(http::Url url, std::chrono::milliseconds timeout, const std::string& api_key)
      : url_(std::move(url)), timeout_(timeout) {
    if (!api_key.empty()) {
      headers_.push_back({"authorization", "Bearer " + api_key});
    }
  }

  void authorize(AuthorizeCall call, Callback<Authorization> done) override {
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
  http::Url url_;
  std::chrono::milliseconds timeout_;
  std::vector<http::Header> headers_;  // the merchant's credentials at this acquirer, if any
  http::Client client_;
};

}  // namespace

std::unique_ptr<Acquirer> make_http_acquirer(const std::string& base_url, std::chrono::milliseconds timeout,
                                             const std::string& api_key) {
  auto url = http::Url::parse(base_url);
  if (!url || !http::is_safe_header_value(api_key)) {
    return nullptr;
  }
  return std::make_unique<HttpAcquirer>(std::move(*url), timeout, api_key);
}

}  // namespace idempay::acquirer
