#pragma once
// The merchants in force (reloaded on SIGHUP) and what follows from them: which acquirer a
// payment goes to, with which credentials, and which credentials its callbacks carry.
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "idempay/acquirers/http_acquirer.hpp"
#include "idempay/acquirers/stub.hpp"
#include "idempay/actors/payment_service.hpp"
#include "idempay/admin/operator_api.hpp"
#include "idempay/config/merchants.hpp"

namespace idempay::app {

struct AcquirerDefaults {
  std::string route = "stub";  ///< --acquirer: for merchants that name none
  std::chrono::milliseconds timeout{10'000};
  acquirer::StubOptions stub;
  acquirer::SecureProxyOptions secure_proxy;
};

class MerchantDirectory final : public actors::AcquirerRoutes {
public:
  MerchantDirectory(config::MerchantFile file, AcquirerDefaults defaults);
  ~MerchantDirectory() override;

  /// The merchants of a reloaded file; payments already created keep their acquirer.
  void replace(config::MerchantFile file);
  std::shared_ptr<const config::MerchantFile> current() const;

  std::string route_for(const std::string& merchant, const std::string& method, bool test_suite) override;
  /// The merchant's policy flags in force (defaults for a name not in the file); no string is
  /// copied, so the routes may ask on every request.
  config::MerchantPolicy policy_of(const std::string& merchant) const;
  domain::Acquirer& acquirer(const std::string& route, const std::string& merchant) override;

  /// The acquirer `name` of `merchant` in the file in force; null if it has none of that name.
  std::shared_ptr<const config::AcquirerEntry> acquirer_entry(const std::string& merchant, std::string_view name) const;

  /// The merchant's own VTEX credentials for callbacks, if it has them.
  std::optional<std::pair<std::string, std::string>> callback_credentials(const std::string& merchant) const;

  /// The operator of that name as the file in force has it; nullopt for one no longer listed.
  std::optional<admin::OperatorScope> operator_scope(const std::string& name) const;

  /// The in-process stub, created on first use; `webhook_url`/`key` where it reports.
  acquirer::StubAcquirer& stub();
  /// Resolves a payment pending at the in-process stub: "approve", "deny" or "expire"; false
  /// if the stub has no such pending payment.
  bool stub_trigger(const std::string& payment_id, const std::string& outcome);
  void enable_stub_webhooks(std::string url, std::string key);
  /// True if the default or any merchant routes payments to the in-process stub.
  bool uses_stub() const;

private:
  std::string route_in(const config::MerchantFile& file, const std::string& merchant) const;
  acquirer::StubAcquirer& stub_locked();
  domain::Acquirer& named_locked(const std::string& merchant, std::string_view name);
  std::shared_ptr<domain::Acquirer> make_named(const config::AcquirerEntry& entry);

  AcquirerDefaults defaults_;
  std::shared_ptr<const config::MerchantFile> file_;  // read and replaced with atomic_load/store
  mutable std::mutex mutex_;                  // guards what follows
  std::shared_ptr<acquirer::StubAcquirer> stub_;
  std::optional<acquirer::StubWebhookOptions> stub_webhooks_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<domain::Acquirer>> http_;  // (url, key)
  // A merchant's named acquirers, by merchant, name and a digest of their settings: a reload
  // that changes them makes a new one, and payments in flight keep the one they hold.
  std::map<std::string, std::shared_ptr<domain::Acquirer>> named_;
  std::unique_ptr<domain::Acquirer> unreachable_;
};

}  // namespace idempay::app
