#pragma once
// The PPP's optional configuration flow (docs/ppp-surface.md#the-configuration-flow): the gateway asks for a token, the
// merchant's browser comes to a consent page with it and goes back to the gateway with an
// authorization code, and the gateway exchanges the code for the merchant's new AppKey and
// AppToken. The new merchant is written (token as its SHA-256 only) to a file of its own in
// the data directory and activated at once; codes and tokens live in memory for minutes.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "idempay/http/url.hpp"
#include "idempay/base/error.hpp"

namespace idempay::ppp {

struct OnboardingOptions {
  std::string issued_path;                  ///< the onboarded merchants' file (mode 0600)
  http::DestinationRules return_urls;       ///< what a returnUrl must satisfy
  std::string provider_name = "idempay";    ///< shown on the consent page
  std::chrono::seconds lifetime{900};       ///< of a token and of a code
  std::function<void()> activate;           ///< reloads the merchants once one was added
  // Bounds, so that the flow's own credentials cannot exhaust memory or the merchants file.
  size_t max_return_url_bytes = 2'048;
  size_t max_pending = 1'000;               ///< live tokens in all
  size_t max_pending_per_caller = 100;      ///< live tokens per credential that asked for them
  size_t max_merchants = 1'000;             ///< merchants the onboarded file may hold
  double onboardings_burst = 20;            ///< new merchants at once, then...
  double onboardings_per_second = 1.0 / 3;  ///< ...this many more per second
};

struct IssuedCredentials {
  std::string app_key;
  std::string app_token;
};

class Onboarding {
public:
  explicit Onboarding(OnboardingOptions options);
  ~Onboarding();
  Onboarding(const Onboarding&) = delete;
  Onboarding& operator=(const Onboarding&) = delete;

  /// A token for a merchant about to be sent to the consent page, asked for by `caller` (the
  /// flow's credentials); kInvalidArgument for a returnUrl that is not an allowed https URL
  /// (or too long), kUnavailable while too many flows are pending (for the caller or in all).
  Result<std::string> issue_token(const std::string& caller, std::string_view return_url);
  /// The consent page for a live token (the same code each time it is shown); kNotFound for
  /// an unknown or expired one.
  Result<std::string> consent_page(std::string_view token);
  /// The credentials a live code stands for, issued and activated on first use (off the
  /// caller's thread: the file is written and synced) and the same on every repeat while the
  /// code lives. kNotFound for an unknown or expired code; kUnavailable when merchants are
  /// being onboarded faster than the configured rate (the code stays valid: retry) or the
  /// file holds max_merchants already; `done` is called exactly once.
  void exchange(std::string code, std::function<void(Result<IssuedCredentials>)> done);

private:
  struct Grant {
    std::string caller;
    std::string return_url;
    std::string code;  // once the consent page was shown
    std::chrono::steady_clock::time_point expires;
  };
  struct Exchange {
    IssuedCredentials credentials;
    std::chrono::steady_clock::time_point expires;
  };
  void forget_expired();
  bool take_onboarding_slot();
  size_t onboarded_count() const;
  Result<IssuedCredentials> issue(const std::string& code);
  void run();

  OnboardingOptions options_;
  std::mutex mutex_;
  std::map<std::string, Grant> tokens_;                         // token -> grant
  std::map<std::string, std::chrono::steady_clock::time_point> codes_;  // code -> expiry
  std::map<std::string, Exchange> issued_;                      // code -> what it gave
  double onboarding_tokens_;  // the rate limit's bucket, refilled as time passes
  std::chrono::steady_clock::time_point bucket_at_;
  std::deque<std::function<void()>> work_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread worker_;  // file writes, never on an I/O thread
};

}  // namespace idempay::ppp
