// The kind "http": an acquirer speaking idempay's own acquirer protocol, at `url`, with an API
// key when it asks for one (docs/acquirers.md).
#include "idempay/acquirers/http_acquirer.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/settings_fields.hpp"

namespace idempay::acquirer {

namespace {

struct HttpSettings final : Settings {
  std::string url;
  std::string api_key;
  std::string identity() const override { return "http " + crypto::to_hex(crypto::sha256(url + '\n' + api_key)); }
};

Result<std::shared_ptr<const Settings>> read(const JsonValue& entry, const std::vector<std::string>&,
                                             const std::string& where) {
  if (auto known = only_known_fields(entry, {"url", "apiKey", "apiKeyFile", "apiKeyEnv"}, where); !known) {
    return tl::unexpected(known.error());
  }
  auto url = settings::optional_string(entry, "url", where);
  auto key = settings::secret(entry, "apiKey", where);
  for (auto* r : {&url, &key}) {
    if (!*r) {
      return tl::unexpected(r->error());
    }
  }
  if (auto checked = check_url(*url, "url", where); !checked) {
    return tl::unexpected(checked.error());
  }
  auto out = std::make_shared<HttpSettings>();
  out->url = std::move(*url);
  out->api_key = std::move(*key);
  return out;
}

}  // namespace

const Kind& http_kind() {
  static const Kind kind{"http", read,
                         [](const Settings& s, const Environment& env) -> std::shared_ptr<domain::Acquirer> {
                           const auto& h = dynamic_cast<const HttpSettings&>(s);
                           return make_http_acquirer(h.url, env.timeout, h.api_key, env.secure_proxy);
                         },
                         nullptr,
                         {}};
  return kind;
}

}  // namespace idempay::acquirer
