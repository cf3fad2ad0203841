#include "onboarding.hpp"

#include <spdlog/spdlog.h>

#include "idempay/protocol/crypto.hpp"
#include "idempay/protocol/json_read.hpp"
#include "idempay/protocol/json_writer.hpp"
#include "private_files.hpp"

namespace idempay::app {

namespace {

using Clock = std::chrono::steady_clock;

std::string random_hex(size_t bytes) {
  std::string raw = crypto::random_bytes(bytes);
  return crypto::to_hex(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

// The onboarded merchants' file with one more entry; the token only as its digest.
Result<std::string> with_merchant(const std::string& path, const std::string& name, const IssuedCredentials& c) {
  JsonWriter w;
  w.begin_object().key("merchants").begin_array();
  auto existing = read_json_file(path);
  if (existing) {
    if (const JsonValue* list = existing->find("merchants"); list != nullptr) {
      for (const JsonValue& m : list->items()) {
        w.begin_object();
        // Only what this file ever holds: strings, whole numbers, booleans (an entry edited
        // by hand keeps its flags).
        for (const auto& [field, value] : m.members()) {
          w.key(field);
          if (value.type() == JsonValue::Type::kNumber) {
            w.raw_number(value.text());
          } else if (value.type() == JsonValue::Type::kBool) {
            w.boolean(value.boolean());
          } else {
            w.string(value.text());
          }
        }
        w.end_object();
      }
    }
  } else if (existing.error().code != ErrorCode::kNotFound) {
    return tl::unexpected(existing.error());
  }
  auto digest = crypto::sha256(c.app_token);
  w.begin_object().key("name").string(name).key("appKey").string(c.app_key);
  w.key("appTokenSha256").string(crypto::to_hex(digest.data(), digest.size()));
  w.key("onboardedAt").number(std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::system_clock::now().time_since_epoch()).count());
  w.end_object();
  w.end_array().end_object();
  return std::move(w).take();
}

}  // namespace

Onboarding::Onboarding(OnboardingOptions options) : options_(std::move(options)), worker_([this] { run(); }) {}

Onboarding::~Onboarding() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void Onboarding::forget_expired() {
  auto now = Clock::now();
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    it = it->second.expires <= now ? tokens_.erase(it) : std::next(it);
  }
  for (auto it = codes_.begin(); it != codes_.end();) {
    it = it->second <= now ? codes_.erase(it) : std::next(it);
  }
  for (auto it = issued_.begin(); it != issued_.end();) {
    it = it->second.expires <= now ? issued_.erase(it) : std::next(it);
  }
}

Result<std::string> Onboarding::issue_token(std::string_view return_url) {
  if (auto url = http::check_destination(return_url, options_.return_urls); !url) {
    return make_error(ErrorCode::kInvalidArgument, "returnUrl: " + url.error().message);
  }
  std::lock_guard lock(mutex_);
  forget_expired();
  if (tokens_.size() >= 10'000) {
    return make_error(ErrorCode::kUnavailable, "too many configuration flows in progress; retry later");
  }
  std::string token = random_hex(16);
  tokens_[token] = Grant{std::string(return_url), {}, Clock::now() + options_.lifetime};
  return token;
}

Result<std::string> Onboarding::consent_page(std::string_view token) {
  std::string target;
  {
    std::lock_guard lock(mutex_);
    forget_expired();
    auto it = tokens_.find(std::string(token));
    if (it == tokens_.end()) {
      return make_error(ErrorCode::kNotFound, "unknown or expired token");
    }
    Grant& grant = it->second;
    if (grant.code.empty()) {
      grant.code = random_hex(16);
      codes_[grant.code] = Clock::now() + options_.lifetime;
    }
    bool has_query = grant.return_url.find('?') != std::string::npos;
    target = grant.return_url + (has_query ? "&" : "?") + "authorizationCode=" + grant.code;
  }
  std::string name = html_escape(options_.provider_name);
  return "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Connect " + name +
         "</title></head><body><main><h1>Connect " + name + " to your store</h1>"
         "<p>Your store will take payments through " + name + ". New credentials are issued for it; "
         "you can revoke them at any time by asking the connector's operators.</p>"
         "<p><a id=\"accept\" href=\"" + html_escape(target) + "\">Accept and connect</a></p></main></body></html>";
}

void Onboarding::exchange(std::string code, std::function<void(Result<IssuedCredentials>)> done) {
  std::lock_guard lock(mutex_);
  work_.push_back([this, code = std::move(code), done = std::move(done)] { done(issue(code)); });
  wake_.notify_one();
}

// Runs on the worker only, so exchanges are serialised; the file is written without the lock,
// which the I/O threads' token and page requests take.
Result<IssuedCredentials> Onboarding::issue(const std::string& code) {
  Clock::time_point expires;
  {
    std::lock_guard lock(mutex_);
    forget_expired();
    if (auto it = issued_.find(code); it != issued_.end()) {
      return it->second.credentials;  // the gateway's retry: the same pair
    }
    auto live = codes_.find(code);
    if (live == codes_.end()) {
      return make_error(ErrorCode::kNotFound, "unknown or expired authorizationCode");
    }
    expires = live->second;
  }
  IssuedCredentials c{"vtexappkey-" + random_hex(12), random_hex(32)};
  std::string name = "onboarded-" + code.substr(0, 12);
  auto file = with_merchant(options_.issued_path, name, c);
  if (file) {
    file = write_private_file(options_.issued_path, *file).map([&] { return std::string(); });
  }
  if (!file) {
    spdlog::error("configuration flow: cannot write {}: {}", options_.issued_path, file.error().message);
    return make_error(ErrorCode::kUnavailable, "the new credentials could not be stored; retry");
  }
  {
    std::lock_guard lock(mutex_);
    issued_[code] = Exchange{c, expires};
    codes_.erase(code);
  }
  if (options_.activate) {
    options_.activate();
  }
  spdlog::info("configuration flow: merchant {} onboarded (appKey {})", name, c.app_key);
  return c;
}

void Onboarding::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !work_.empty(); });
    if (work_.empty()) {
      return;
    }
    auto job = std::move(work_.front());
    work_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace idempay::app
