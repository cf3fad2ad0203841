#include "idempay/acquirers/extension.hpp"

#include <algorithm>

#include "idempay/base/settings_fields.hpp"
#include "idempay/http/url.hpp"

namespace idempay::acquirer {

http::ClientOptions proxy_client_options(const SecureProxyOptions& proxy) {
  http::ClientOptions options;
  options.extra_ca_file = proxy.extra_ca_file;
  return options;
}

Status only_known_fields(const JsonValue& entry, std::initializer_list<std::string_view> own, const std::string& where) {
  for (const auto& [field, unused] : entry.members()) {
    bool common = std::find(std::begin(kCommonFields), std::end(kCommonFields), field) != std::end(kCommonFields);
    if (!common && std::find(own.begin(), own.end(), field) == own.end()) {
      return tl::unexpected(settings::invalid(where, "unknown field \"" + field + "\""));
    }
  }
  return {};
}

Status check_url(const std::string& url, std::string_view field, const std::string& where) {
  if (url.empty()) {
    return tl::unexpected(settings::invalid(where, std::string(field) + " is required"));
  }
  if (auto parsed = http::Url::parse(url); !parsed) {
    return tl::unexpected(
        settings::invalid(where, std::string(field) + " must be an http(s) URL: " + parsed.error().message));
  }
  return {};
}

Status read_timeout(const JsonValue& entry, std::chrono::milliseconds& out, const std::string& where) {
  if (entry.find("timeoutMs") == nullptr) {
    return {};
  }
  int64_t ms = entry.int_or("timeoutMs", -1);
  if (ms < 100 || ms > 120'000) {
    return tl::unexpected(
        settings::invalid(where, "timeoutMs must be a whole number of milliseconds from 100 to 120000"));
  }
  out = std::chrono::milliseconds(ms);
  return {};
}

}  // namespace idempay::acquirer
