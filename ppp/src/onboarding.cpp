#include "idempay/ppp/onboarding.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/private_files.hpp"

namespace idempay::ppp {

using idempay::read_json_file;
using idempay::write_private_file;

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

Onboarding::Onboarding(OnboardingOptions options)
    : options_(std::move(options)),
      onboarding_tokens_(options_.onboardings_burst),
      bucket_at_(Clock::now()),
      worker_([this] { run(); }) {}

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

Result<std::string> Onboarding::issue_token(const std::string& caller, std::string_view return_url) {
  if (return_url.size() > options_.max_return_url_bytes) {
    return make_error(ErrorCode::kInvalidArgument,
                      "returnUrl is longer than " + std::to_string(options_.max_return_url_bytes) + " bytes");
  }
  if (auto url = http::check_destination(return_url, options_.return_urls); !url) {
    return make_error(ErrorCode::kInvalidArgument, "returnUrl: " + url.error().message);
  }
  std::lock_guard lock(mutex_);
  forget_expired();
  size_t from_caller = std::count_if(tokens_.begin(), tokens_.end(),
                                     [&](const auto& t) { return t.second.caller == caller; });
  if (tokens_.size() >= options_.max_pending || from_caller >= options_.max_pending_per_caller) {
    return make_error(ErrorCode::kUnavailable, "too many configuration flows in progress; retry later");
  }
  std::string token = random_hex(16);
  tokens_[token] = Grant{caller, std::string(return_url), {}, Clock::now() + options_.lifetime};
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
    // The code goes into the query, before any #fragment (which never reaches the server).
    std::string_view url = grant.return_url;
    std::string_view fragment = url.substr(std::min(url.find('#'), url.size()));
    url.remove_suffix(fragment.size());
    bool has_query = url.find('?') != std::string_view::npos;
    target = std::string(url) + (has_query ? "&" : "?") + "authorizationCode=" + grant.code + std::string(fragment);
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
    if (!take_onboarding_slot()) {
      return make_error(ErrorCode::kUnavailable, "merchants are being onboarded too fast; retry the same code later");
    }
  }
  if (onboarded_count() >= options_.max_merchants) {
    spdlog::error("configuration flow: {} holds {} merchants already, the most it may; nothing added",
                  options_.issued_path, options_.max_merchants);
    return make_error(ErrorCode::kUnavailable, "no more merchants can be onboarded here; ask the operators");
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

// With mutex_ held: one new merchant's worth of the rate limit, if there is one.
bool Onboarding::take_onboarding_slot() {
  auto now = Clock::now();
  double elapsed = std::chrono::duration<double>(now - bucket_at_).count();
  onboarding_tokens_ = std::min(options_.onboardings_burst, onboarding_tokens_ + elapsed * options_.onboardings_per_second);
  bucket_at_ = now;
  if (onboarding_tokens_ < 1) {
    return false;
  }
  onboarding_tokens_ -= 1;
  return true;
}

size_t Onboarding::onboarded_count() const {
  auto existing = read_json_file(options_.issued_path);
  const JsonValue* list = existing ? existing->find("merchants") : nullptr;
  return list == nullptr ? 0 : list->items().size();
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

}  // namespace idempay::ppp
