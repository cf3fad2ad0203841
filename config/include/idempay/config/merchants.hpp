#pragma once
// The merchants file (--credentials): who may call the PPP routes, and each merchant's own
// settings. See docs/configuration.md for the format.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <set>
#include "idempay/config/acquirers.hpp"
#include "idempay/http/credentials.hpp"
#include "idempay/base/error.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay::config {

/// What a merchant's requests from the gateway's homologation suite (X-VTEX-API-Is-TestSuite)
/// get: the in-process stub, a refusal, or — for an entry made for the suite — the stub, with
/// credentials that nothing else may use.
enum class TestSuitePolicy : uint8_t { kRoute, kRefuse, kOnly };

/// What the PPP routes decide per merchant: flags only, cheap to look up on every request.
struct MerchantPolicy {
  TestSuitePolicy test_suite = TestSuitePolicy::kRoute;
  bool require_secure_proxy = false;
  bool manual_cancel = false;
  bool manual_refund = false;
  bool onboarding = false;
};

/// One merchant's settings beyond its credentials; empty fields mean "the connector's own".
struct MerchantSettings {
  std::string acquirer;          ///< "stub" or an acquirer's base URL; empty: --acquirer
  std::string acquirer_api_key;  ///< sent to that acquirer as `Authorization: Bearer ...`
  /// Acquirers by payment method (docs/acquirers.md); a method none of them serves goes to
  /// `acquirer`.
  std::vector<AcquirerEntry> acquirers;
  std::string callback_app_key;  ///< VTEX credentials for this merchant's callbacks
  std::string callback_app_token;
  TestSuitePolicy test_suite = TestSuitePolicy::kRoute;
  bool require_secure_proxy = false;  ///< a raw card number is refused: tokens only
  bool manual_cancel = false;         ///< cancellations answer 501 cancel-manually
  bool manual_refund = false;         ///< refunds answer 501 refund-manually
  /// The gateway's credentials for the configuration flow (/authorization/token and
  /// /authorization/credentials): they open those routes and nothing else.
  bool onboarding = false;
};

/// One operator as the file lists it: read, or act too, on every merchant's payments or on the
/// listed merchants' only (the operator API applies it).
struct OperatorSettings {
  bool can_act = false;
  bool all_merchants = false;
  std::set<std::string, std::less<>> merchants;
};

struct MerchantFile {
  std::shared_ptr<const http::Credentials> credentials;
  /// The operators' bearer tokens, keyed by operator name (never the merchants').
  std::shared_ptr<const http::Credentials> operator_credentials;
  std::map<std::string, OperatorSettings, std::less<>> operators;  ///< by operator name (role, merchants)
  std::map<std::string, MerchantSettings> settings;  ///< by merchant name
  std::string first_merchant;  ///< owns payments stored before owners were recorded (the file read at start)
  /// What is allowed but unwise (an appToken short enough to be guessed), one line each.
  std::vector<std::string> warnings;
};

/// AppTokens shorter than this draw a warning: the wrong-credentials throttle only slows
/// guessing (a source may always try again later, and a valid token is never refused), so a
/// token must be too long to guess. The gateway's own are far longer.
inline constexpr size_t kMinSafeTokenLength = 32;

/// The route of the in-process acquirer stub.
inline constexpr std::string_view kStubRoute = "stub";

/// `"manualOperations": ["cancel", "refund"]` of a merchant or a method, when present: the
/// kinds done by hand (501) instead of by the acquirer. kInvalidArgument naming `where` else.
Status read_manual_operations(const JsonValue& entry, const std::string& where, bool& cancel, bool& refund);

/// "stub" or a valid http(s) URL: what a merchant's "acquirer" and --acquirer may name.
Status check_acquirer_route(const std::string& route);

/// Reads and checks the whole file: a missing, empty or non-string token, a duplicate appKey
/// or name, a duplicate JSON member, an unknown field or an unreadable secret file is a
/// kInvalidArgument naming the place. Secrets may be given inline, as `...File` (a path) or
/// as `...Env` (an environment variable's name); acquirer entries of `kinds` only. The
/// merchants of `onboarded_path` (written by the configuration flow; absent: none) are added
/// to those of `path`.
Result<MerchantFile> load_merchant_file(const std::string& path, const AcquirerKinds& kinds,
                                        const std::string& onboarded_path = {});

}  // namespace idempay::config
