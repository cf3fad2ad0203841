#include "merchant_directory.hpp"

#include <spdlog/spdlog.h>

#include "idempay/base/crypto.hpp"

namespace idempay::app {

using config::kStubRoute;
using config::MerchantPolicy;
using config::MerchantSettings;
using config::TestSuitePolicy;

namespace {

// Stands for an acquirer that cannot be built (a stored route no longer valid): every call
// fails as "did not happen", which leaves the payment retryable and charges nothing.
class UnreachableAcquirer final : public domain::Acquirer {
public:
  void authorize(domain::AuthorizeCall, domain::Callback<domain::Authorization> done) override {
    done(fail());
  }
  void operate(domain::OperationCall, domain::Callback<domain::OperationOutcome> done) override {
    done(fail());
  }
  void status(std::string, domain::Callback<std::optional<domain::Authorization>> done) override {
    done(fail());
  }

private:
  static tl::unexpected<Error> fail() {
    return make_error(ErrorCode::kUnavailable, "the payment's acquirer route is not valid");
  }
};
}  // namespace

MerchantDirectory::MerchantDirectory(config::MerchantFile file, AcquirerDefaults defaults)
    : defaults_(std::move(defaults)),
      file_(std::make_shared<const config::MerchantFile>(std::move(file))),
      unreachable_(std::make_unique<UnreachableAcquirer>()) {}

MerchantDirectory::~MerchantDirectory() = default;

void MerchantDirectory::replace(config::MerchantFile file) {
  std::atomic_store(&file_, std::shared_ptr<const config::MerchantFile>(std::make_shared<const config::MerchantFile>(std::move(file))));
}

std::shared_ptr<const config::MerchantFile> MerchantDirectory::current() const { return std::atomic_load(&file_); }

std::string MerchantDirectory::route_in(const config::MerchantFile& file, const std::string& merchant) const {
  auto it = file.settings.find(merchant);
  return it != file.settings.end() && !it->second.acquirer.empty() ? it->second.acquirer : defaults_.route;
}

std::string MerchantDirectory::route_for(const std::string& merchant, const std::string& method, bool test_suite) {
  auto file = current();
  auto it = file->settings.find(merchant);
  bool suite_only = it != file->settings.end() && it->second.test_suite == TestSuitePolicy::kOnly;
  if (test_suite || suite_only) {
    return std::string(kStubRoute);
  }
  if (it != file->settings.end()) {
    if (const auto* entry = config::acquirer_for(it->second.acquirers, method)) {
      return config::named_route(entry->name);
    }
  }
  return route_in(*file, merchant);
}

config::MerchantPolicy MerchantDirectory::policy_of(const std::string& merchant) const {
  auto file = current();
  auto it = file->settings.find(merchant);
  if (it == file->settings.end()) {
    return {};
  }
  const MerchantSettings& s = it->second;
  return MerchantPolicy{s.test_suite, s.require_secure_proxy, s.manual_cancel, s.manual_refund, s.onboarding};
}

domain::Acquirer& MerchantDirectory::acquirer(const std::string& stored_route, const std::string& merchant) {
  const std::string& route = stored_route.empty() ? defaults_.route : stored_route;  // stored before routes
  std::lock_guard lock(mutex_);
  if (route == kStubRoute) {
    return stub_locked();
  }
  if (auto name = config::route_name(route); !name.empty()) {
    return named_locked(merchant, name);
  }
  // The merchant's key goes only to the acquirer it is configured for.
  std::string key;
  auto file = current();
  if (auto it = file->settings.find(merchant); it != file->settings.end() && route_in(*file, merchant) == route) {
    key = it->second.acquirer_api_key;
  }
  auto& slot = http_[{route, key}];
  if (!slot) {
    slot = acquirer::make_http_acquirer(route, defaults_.timeout, key, defaults_.secure_proxy);
    if (!slot) {
      spdlog::error("acquirer route {} is not valid; calls to it fail", route);
      return *unreachable_;
    }
  }
  return *slot;
}

domain::Acquirer& MerchantDirectory::named_locked(const std::string& merchant, std::string_view name) {
  auto file = current();
  auto it = file->settings.find(merchant);
  const config::AcquirerEntry* entry = it == file->settings.end() ? nullptr : config::acquirer_named(it->second.acquirers, name);
  if (entry == nullptr) {
    spdlog::error("merchant {} has no acquirer named {} any more; its payments' calls fail until it is back", merchant,
                  name);
    return *unreachable_;
  }
  // The same merchant, name and settings make the same acquirer; a reload that changes them
  // makes a new one, and payments in flight keep the one they hold.
  auto& slot = named_[merchant + '\n' + entry->name + '\n' + entry->kind->name + '\n' + entry->settings->identity()];
  if (!slot) {
    slot = make_named(*entry);
    if (!slot) {
      spdlog::error("acquirer {} of merchant {} is not valid; calls to it fail", name, merchant);
      return *unreachable_;
    }
  }
  return *slot;
}

// Called with mutex_ held: the stub the environment hands a stub entry is this directory's.
std::shared_ptr<domain::Acquirer> MerchantDirectory::make_named(const config::AcquirerEntry& entry) {
  acquirer::Environment env;
  env.timeout = defaults_.timeout;
  env.secure_proxy = defaults_.secure_proxy;
  env.stub = [this] {
    stub_locked();
    return std::shared_ptr<domain::Acquirer>(stub_);
  };
  return entry.kind->make(*entry.settings, env);
}

std::shared_ptr<const config::AcquirerEntry> MerchantDirectory::acquirer_entry(const std::string& merchant,
                                                                              std::string_view name) const {
  auto file = current();
  auto it = file->settings.find(merchant);
  const config::AcquirerEntry* entry = it == file->settings.end() ? nullptr : config::acquirer_named(it->second.acquirers, name);
  if (entry == nullptr) {
    return nullptr;
  }
  return std::shared_ptr<const config::AcquirerEntry>(file, entry);  // keeps the file it belongs to alive
}

std::optional<std::pair<std::string, std::string>> MerchantDirectory::callback_credentials(
    const std::string& merchant) const {
  auto file = current();
  auto it = file->settings.find(merchant);
  if (it == file->settings.end() || it->second.callback_app_key.empty()) {
    return std::nullopt;
  }
  return std::make_pair(it->second.callback_app_key, it->second.callback_app_token);
}

acquirer::StubAcquirer& MerchantDirectory::stub() {
  std::lock_guard lock(mutex_);
  return stub_locked();
}

acquirer::StubAcquirer& MerchantDirectory::stub_locked() {
  if (!stub_) {
    stub_ = std::make_shared<acquirer::StubAcquirer>(defaults_.stub);
    if (stub_webhooks_) {
      stub_->enable_webhooks(*stub_webhooks_);
    }
  }
  return *stub_;
}

void MerchantDirectory::enable_stub_webhooks(std::string url, std::string key) {
  std::lock_guard lock(mutex_);
  stub_webhooks_ = acquirer::StubWebhookOptions{std::move(url), std::move(key)};
  if (stub_) {
    stub_->enable_webhooks(*stub_webhooks_);
  }
}

bool MerchantDirectory::uses_stub() const {
  if (defaults_.route == kStubRoute) {
    return true;
  }
  auto file = current();
  for (const auto& [name, settings] : file->settings) {
    bool named_stub = std::any_of(settings.acquirers.begin(), settings.acquirers.end(),
                                  [](const config::AcquirerEntry& e) { return e.kind == &acquirer::stub_kind(); });
    if (settings.acquirer == kStubRoute || named_stub) {
      return true;
    }
  }
  return false;
}

std::optional<admin::OperatorScope> MerchantDirectory::operator_scope(const std::string& name) const {
  auto file = current();
  auto found = file->operators.find(name);
  if (found == file->operators.end()) {
    return std::nullopt;
  }
  const config::OperatorSettings& o = found->second;
  return admin::OperatorScope{o.can_act, o.all_merchants, o.merchants};
}

bool MerchantDirectory::stub_trigger(const std::string& payment_id, const std::string& outcome) {
  auto o = outcome == "approve" ? acquirer::TriggerOutcome::kApprove
           : outcome == "deny"  ? acquirer::TriggerOutcome::kDeny
                                : acquirer::TriggerOutcome::kExpire;
  return stub().trigger(payment_id, o);
}

}  // namespace idempay::app
