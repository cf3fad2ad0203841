#include "token_source.hpp"

#include <spdlog/spdlog.h>

#include "idempay/base/json_read.hpp"
#include "idempay/base/webhooks.hpp"

namespace idempay::acquirer {

namespace {


// An OAuth2 token answer (RFC 6749 section 5.1): the token and how long it lasts.
Result<std::pair<std::string, std::chrono::seconds>> read_token(const http::ClientResponse& r) {
  if (r.status != 200) {
    return make_error(ErrorCode::kUnavailable,
                      "the PSP's token endpoint answered HTTP " + std::to_string(r.status) +
                          (r.status == 400 || r.status == 401 ? ": check clientId and clientSecret" : ""));
  }
  auto doc = JsonValue::parse(r.body);
  std::string token = doc ? doc->string_or("access_token") : "";
  std::string type = doc ? doc->string_or("token_type", "Bearer") : "";
  for (auto& c : type) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (token.empty() || type != "bearer" || !http::is_safe_header_value(token)) {
    return make_error(ErrorCode::kUnavailable, "the PSP's token endpoint answered without a bearer access_token");
  }
  // Without expires_in the token lasts until refused (a 401 then fetches another).
  int64_t lifetime = doc->int_or("expires_in", 3600);
  return std::make_pair(std::move(token), std::chrono::seconds(std::max<int64_t>(lifetime, 1)));
}

}  // namespace

void TokenSource::get(Got done) {
  std::unique_lock lock(mutex_);
  if (!token_.empty() && std::chrono::steady_clock::now() < valid_until_) {
    std::string token = token_;
    lock.unlock();
    return done(std::move(token));
  }
  waiting_.push_back(std::move(done));
  if (std::exchange(fetching_, true)) {
    return;  // the request in flight serves this call too
  }
  ++requests_;
  lock.unlock();
  fetch();
}

void TokenSource::forget(const std::string& token) {
  std::lock_guard lock(mutex_);
  if (token_ == token) {
    token_.clear();
  }
}

uint64_t TokenSource::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void TokenSource::fetch() {
  http::OutboundRequest request;
  request.method = "POST";
  request.url = options_.token_url;
  request.headers = {
      {"authorization", "Basic " + webhooks::base64_encode(options_.client_id + ":" + options_.client_secret)},
      {"content-type", "application/x-www-form-urlencoded"},
      {"accept", "application/json"}};
  request.body = "grant_type=client_credentials";
  if (!options_.scope.empty()) {
    request.body += "&scope=" + http::percent_encoded(options_.scope);
  }
  request.connect_timeout = options_.timeout;
  request.total_timeout = options_.timeout;
  request.allow_private = true;  // the PSP is the operator's configuration, not a request's
  client_.send(std::move(request), [this](Result<http::ClientResponse> r) {
    finish(r ? read_token(*r) : tl::unexpected(r.error()));
  });
}

void TokenSource::finish(Result<std::pair<std::string, std::chrono::seconds>> fetched) {
  std::vector<Got> waiting;
  {
    std::lock_guard lock(mutex_);
    fetching_ = false;
    if (fetched) {
      token_ = fetched->first;
      // Renewed `token_margin` early, or halfway through a token shorter than twice that.
      auto lifetime = fetched->second;
      auto margin = std::min<std::chrono::seconds>(options_.token_margin, lifetime / 2);
      valid_until_ = std::chrono::steady_clock::now() + lifetime - margin;
    }
    waiting.swap(waiting_);
  }
  if (!fetched) {
    spdlog::warn("API Pix {}: no access token: {}", options_.token_url, fetched.error().message);
  }
  for (auto& done : waiting) {
    done(fetched ? Result<std::string>(fetched->first) : tl::unexpected(fetched.error()));
  }
}

}  // namespace idempay::acquirer
