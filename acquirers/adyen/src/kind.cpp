// The kind "adyen": an entry's settings read from the merchants file (docs/acquirers.md), its
// acquirer, and its notification route.
#include <algorithm>
#include <cctype>

#include "idempay/acquirers/adyen.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/settings_fields.hpp"
#include "idempay/protocol/methods.hpp"

namespace idempay::acquirer {

namespace {

using settings::invalid;

bool is_hex_key(const std::string& key) {
  return !key.empty() && key.size() % 2 == 0 && key.size() <= 256 &&
         std::all_of(key.begin(), key.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

Status read_methods(const std::vector<std::string>& methods, const std::string& where) {
  if (methods.empty()) {
    return tl::unexpected(
        invalid(where, "an adyen acquirer names the card methods (and BankInvoice) it serves (methods)"));
  }
  for (const auto& method : methods) {
    auto family = ppp::method_family(method);
    if (family != ppp::MethodFamily::kCard && family != ppp::MethodFamily::kBankInvoice) {
      return tl::unexpected(
          invalid(where, "an adyen acquirer serves cards and boleto (BankInvoice) only, not \"" + method + "\""));
    }
  }
  return {};
}

Result<std::shared_ptr<const Settings>> read(const JsonValue& entry, const std::vector<std::string>& methods,
                                             const std::string& where) {
  if (auto known = only_known_fields(entry,
                                     {"baseUrl", "apiKey", "apiKeyFile", "apiKeyEnv", "merchantAccount", "returnUrl",
                                      "timeoutMs", "hmacKey", "hmacKeyFile", "hmacKeyEnv", "previousHmacKey",
                                      "previousHmacKeyFile", "previousHmacKeyEnv", "notificationUsername",
                                      "notificationPassword", "notificationPasswordFile", "notificationPasswordEnv"},
                                     where);
      !known) {
    return tl::unexpected(known.error());
  }
  if (auto served = read_methods(methods, where); !served) {
    return tl::unexpected(served.error());
  }
  auto out = std::make_shared<AdyenSettings>();
  auto& a = out->options;
  auto& n = out->notifications;
  std::pair<std::string_view, std::string*> fields[] = {{"baseUrl", &a.base_url}, {"merchantAccount", &a.merchant_account},
                                                        {"returnUrl", &a.return_url}, {"notificationUsername", &n.username}};
  for (auto& [name, target] : fields) {
    auto value = settings::optional_string(entry, name, where);
    if (!value) {
      return tl::unexpected(value.error());
    }
    *target = std::move(*value);
  }
  auto key = settings::secret(entry, "apiKey", where);
  auto hmac = settings::secret(entry, "hmacKey", where);
  auto previous = settings::secret(entry, "previousHmacKey", where);
  auto password = settings::secret(entry, "notificationPassword", where);
  for (auto* r : {&key, &hmac, &previous, &password}) {
    if (!*r) {
      return tl::unexpected(r->error());
    }
  }
  for (auto [url, name] : {std::pair{&a.base_url, "baseUrl"}, std::pair{&a.return_url, "returnUrl"}}) {
    if (auto checked = check_url(*url, name, where); !checked) {
      return tl::unexpected(checked.error());
    }
  }
  if (key->empty() || a.merchant_account.empty() || a.merchant_account.size() > 80) {
    return tl::unexpected(invalid(where, "apiKey (or apiKeyFile, apiKeyEnv) and merchantAccount are required"));
  }
  if (!is_hex_key(*hmac) || (!previous->empty() && !is_hex_key(*previous))) {
    return tl::unexpected(
        invalid(where, "hmacKey (or hmacKeyFile, hmacKeyEnv) is required: the notifications' HMAC key, in hex"));
  }
  if (n.username.empty() != password->empty()) {
    return tl::unexpected(invalid(where, "notificationUsername and notificationPassword go together"));
  }
  a.api_key = std::move(*key);
  n.hmac_keys = {std::move(*hmac)};
  if (!previous->empty()) {
    n.hmac_keys.push_back(std::move(*previous));
  }
  n.password = std::move(*password);
  if (auto timeout = read_timeout(entry, a.timeout, where); !timeout) {
    return tl::unexpected(timeout.error());
  }
  return out;
}

}  // namespace

std::string AdyenSettings::identity() const {
  // What reaches the Checkout API; the notifications' keys are read at each notification.
  std::string all = options.base_url + '\n' + options.api_key + '\n' + options.merchant_account + '\n' +
                    options.return_url + '\n' + std::to_string(options.timeout.count());
  return "adyen " + crypto::to_hex(crypto::sha256(all));
}

const AdyenSettings* adyen_settings(const Settings& settings) { return dynamic_cast<const AdyenSettings*>(&settings); }

const Kind& adyen_kind() {
  static const Kind kind{"adyen", read,
                         [](const Settings& s, const Environment& env) -> std::shared_ptr<domain::Acquirer> {
                           AdyenOptions options = adyen_settings(s)->options;
                           options.secure_proxy = env.secure_proxy;
                           return make_adyen_acquirer(std::move(options));
                         },
                         [](const Settings& s, const Notification& n) { take_adyen_notification(*adyen_settings(s), n); },
                         {}};
  return kind;
}

}  // namespace idempay::acquirer
