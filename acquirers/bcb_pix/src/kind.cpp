// The kind "bcb-pix": an entry's settings read from the merchants file (docs/acquirers.md), its
// acquirer, and its notification route.
#include <algorithm>

#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/settings_fields.hpp"
#include "idempay/protocol/methods.hpp"

namespace idempay::acquirer {

namespace {

using settings::invalid;
using settings::optional_string;

// Certificate fingerprints as `openssl x509 -fingerprint -sha256` prints them (colons and
// capitals allowed) or plain hex; kept as lower-case hex.
Result<std::vector<std::string>> fingerprints(const JsonValue& entry, const std::string& where) {
  const JsonValue* listed = entry.find("webhookCertificateSha256");
  if (listed == nullptr) {
    return std::vector<std::string>{};
  }
  auto texts = settings::strings(*listed, "webhookCertificateSha256", where);
  if (!texts) {
    return tl::unexpected(texts.error());
  }
  std::vector<std::string> out;
  for (const auto& text : *texts) {
    std::string hex;
    for (char c : text) {
      if (c == ':') {
        continue;
      }
      char lower = c >= 'A' && c <= 'F' ? static_cast<char>(c - 'A' + 'a') : c;
      if (!((lower >= '0' && lower <= '9') || (lower >= 'a' && lower <= 'f'))) {
        hex.clear();
        break;
      }
      hex.push_back(lower);
    }
    if (hex.size() != 64) {
      return tl::unexpected(invalid(where, "webhookCertificateSha256 must hold SHA-256 fingerprints (64 hex digits)"));
    }
    out.push_back(std::move(hex));
  }
  return out;
}

Result<std::shared_ptr<const Settings>> read(const JsonValue& entry, const std::vector<std::string>& methods,
                                             const std::string& where) {
  if (auto known = only_known_fields(entry,
                                     {"baseUrl", "tokenUrl", "clientId", "clientSecret", "clientSecretFile",
                                      "clientSecretEnv", "scope", "certificateFile", "keyFile", "caFile", "pixKey",
                                      "timeoutMs", "webhookUrl", "webhookCertificateSha256"},
                                     where);
      !known) {
    return tl::unexpected(known.error());
  }
  for (const auto& method : methods) {
    if (ppp::method_family(method) != ppp::MethodFamily::kPix) {
      return tl::unexpected(invalid(where, "a bcb-pix acquirer serves Pix only, not \"" + method + "\""));
    }
  }
  auto out = std::make_shared<BcbPixSettings>();
  auto& pix = out->pix;
  std::pair<std::string_view, std::string*> fields[] = {
      {"baseUrl", &pix.base_url},          {"tokenUrl", &pix.token_url},   {"clientId", &pix.client_id},
      {"scope", &pix.scope},               {"certificateFile", &pix.tls.client_cert_file},
      {"keyFile", &pix.tls.client_key_file}, {"caFile", &pix.tls.extra_ca_file}, {"pixKey", &pix.pix_key},
      {"webhookUrl", &out->webhook.url}};
  for (auto& [name, target] : fields) {
    auto value = optional_string(entry, name, where);
    if (!value) {
      return tl::unexpected(value.error());
    }
    *target = std::move(*value);
  }
  auto client_secret = settings::secret(entry, "clientSecret", where);
  if (!client_secret) {
    return tl::unexpected(client_secret.error());
  }
  pix.client_secret = std::move(*client_secret);
  for (auto [url, name] : {std::pair{&pix.base_url, "baseUrl"}, std::pair{&pix.token_url, "tokenUrl"}}) {
    if (auto checked = check_url(*url, name, where); !checked) {
      return tl::unexpected(checked.error());
    }
  }
  if (!out->webhook.url.empty()) {
    if (auto checked = check_url(out->webhook.url, "webhookUrl", where); !checked) {
      return tl::unexpected(checked.error());
    }
  }
  if (pix.client_id.empty() || pix.client_secret.empty()) {
    return tl::unexpected(invalid(where, "clientId and clientSecret (or clientSecretFile, clientSecretEnv) are required"));
  }
  if (pix.pix_key.empty() || pix.pix_key.size() > 77) {
    return tl::unexpected(invalid(where, "pixKey is required: the receiver's Pix key, at most 77 characters"));
  }
  if (auto timeout = read_timeout(entry, pix.timeout, where); !timeout) {
    return tl::unexpected(timeout.error());
  }
  if (auto loaded = http::check_client_options(pix.tls); !loaded) {
    return tl::unexpected(invalid(where, loaded.error().message));
  }
  auto pinned = fingerprints(entry, where);
  if (!pinned) {
    return tl::unexpected(pinned.error());
  }
  out->webhook.certificate_sha256 = std::move(*pinned);
  return out;
}

}  // namespace

std::string BcbPixSettings::identity() const {
  // What reaches the PSP; the webhook's settings are read at each notification, not held.
  std::string all = pix.base_url + '\n' + pix.token_url + '\n' + pix.client_id + '\n' + pix.client_secret + '\n' +
                    pix.scope + '\n' + pix.tls.client_cert_file + '\n' + pix.tls.client_key_file + '\n' +
                    pix.tls.extra_ca_file + '\n' + pix.pix_key + '\n' + std::to_string(pix.timeout.count());
  return "bcb-pix " + crypto::to_hex(crypto::sha256(all));
}

const BcbPixSettings* bcb_pix_settings(const Settings& settings) {
  return dynamic_cast<const BcbPixSettings*>(&settings);
}

const Kind& bcb_pix_kind() {
  static const Kind kind{
      "bcb-pix", read,
      [](const Settings& s, const Environment&) -> std::shared_ptr<domain::Acquirer> {
        return make_bcb_pix_acquirer(bcb_pix_settings(s)->pix);
      },
      [](const Settings& s, const Notification& n) { take_pix_notification(*bcb_pix_settings(s), n); },
      {"pix"}};
  return kind;
}

}  // namespace idempay::acquirer
