#pragma once
// An acquirer kind as an extension: the merchants file's "kind" of an acquirer entry. Each
// adapter's folder owns how its entries' settings are read, how its acquirer is made from
// them and, if it takes notifications, its webhook route; it hands them to the connector as a
// Kind (as an Envoy extension owns its config.cc). app/ lists the kinds; config/ reads the
// entries through them and ppp/ routes notifications to them, neither knowing any one kind.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/domain/acquirer.hpp"
#include "idempay/domain/acquirer_events.hpp"
#include "idempay/http/client.hpp"
#include "idempay/http/server.hpp"

namespace idempay::acquirer {

/// An entry's own settings, as its kind read them: opaque to everyone but its kind.
class Settings {
public:
  virtual ~Settings() = default;
  /// What makes two entries the same acquirer (secrets as a digest): a reload that changes it
  /// makes a new acquirer, and payments in flight keep the one they hold.
  virtual std::string identity() const = 0;
};

/// How authorizations with card tokens reach the acquirer through the gateway's Secure Proxy.
struct SecureProxyOptions {
  /// The proxy may be on loopback or a private network, over plain http (tests only; the
  /// proxy URL's host was checked against --secure-proxy-allowed-hosts). Default: false
  bool allow_private = false;
  /// Extra PEM CA trusted for the proxy's TLS, besides the system store. Default: none
  std::string extra_ca_file;
};

/// The HTTP client settings of an acquirer reached through the Secure Proxy: its extra CA
/// trusted, no client certificate of idempay's own presented.
http::ClientOptions proxy_client_options(const SecureProxyOptions& proxy);

/// What an acquirer is made with besides its settings: the connector's own.
struct Environment {
  std::chrono::milliseconds timeout{10'000};  ///< one exchange, for kinds without a timeout of their own
  SecureProxyOptions secure_proxy;
  /// The in-process stub, one for every entry of the stub's kind.
  std::function<std::shared_ptr<domain::Acquirer>()> stub;
};

/// A notification posted to an entry's webhook route, with what it acts through.
struct Notification {
  const std::string& merchant;  ///< the path's merchant
  const std::string& route;     ///< the entry's route as payments store it ("@" + its name)
  const http::Request& request;
  const http::Responder& respond;
  domain::AcquirerEvents& events;
};

struct Kind {
  std::string name;  ///< the merchants file's "kind"
  /// Reads an entry's own fields (its name, kind and methods are read already, and every
  /// field of the entry must be known to the kind: `common` are the merchants file's own);
  /// kInvalidArgument naming `where`.
  std::function<Result<std::shared_ptr<const Settings>>(const JsonValue& entry, const std::vector<std::string>& methods,
                                                        const std::string& where)>
      read;
  /// The acquirer of an entry; null if the settings cannot make one (the calls then fail).
  std::function<std::shared_ptr<domain::Acquirer>(const Settings& settings, const Environment& env)> make;
  /// Takes a notification POSTed to /webhooks/{name}/{merchant}/{acquirer} (and to that path
  /// followed by one of `suffixes`); null: the kind takes none.
  std::function<void(const Settings& settings, const Notification& notification)> notify;
  std::vector<std::string> suffixes;
};

/// The fields every entry has, which every kind's `read` accepts besides its own.
inline constexpr std::string_view kCommonFields[] = {"name", "kind", "methods"};

/// Every member of `entry` is one of kCommonFields or `own`, else an error naming the first that is not.
Status only_known_fields(const JsonValue& entry, std::initializer_list<std::string_view> own, const std::string& where);
/// An http(s) URL, required: kInvalidArgument naming `field` and `where` otherwise.
Status check_url(const std::string& url, std::string_view field, const std::string& where);
/// "timeoutMs", when present, into `out`: one HTTP exchange with the acquirer at most (100 ms
/// to 120 s).
Status read_timeout(const JsonValue& entry, std::chrono::milliseconds& out, const std::string& where);

}  // namespace idempay::acquirer
