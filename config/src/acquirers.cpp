#include "idempay/config/acquirers.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "idempay/http/url.hpp"
#include "idempay/protocol/methods.hpp"
#include "json_fields.hpp"

namespace idempay::config {

std::string_view to_string(AcquirerKind kind) {
  switch (kind) {
    case AcquirerKind::kStub: return "stub";
    case AcquirerKind::kHttp: return "http";
    case AcquirerKind::kBcbPix: return "bcb-pix";
    case AcquirerKind::kAdyen: return "adyen";
  }
  return "stub";
}

std::string named_route(std::string_view name) { return "@" + std::string(name); }

std::string_view route_name(std::string_view route) {
  return !route.empty() && route.front() == '@' ? route.substr(1) : std::string_view();
}

namespace {

bool is_plain_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

Result<AcquirerKind> kind_of(const JsonValue& entry, const std::string& where) {
  auto kind = optional_string(entry, "kind", where);
  if (!kind) {
    return tl::unexpected(kind.error());
  }
  for (auto k : {AcquirerKind::kStub, AcquirerKind::kHttp, AcquirerKind::kBcbPix, AcquirerKind::kAdyen}) {
    if (*kind == to_string(k)) {
      return k;
    }
  }
  return tl::unexpected(invalid(where, "kind must be \"stub\", \"http\", \"bcb-pix\" or \"adyen\""));
}

Status check_url(const std::string& url, std::string_view field, const std::string& where) {
  if (url.empty()) {
    return tl::unexpected(invalid(where, std::string(field) + " is required"));
  }
  if (auto parsed = http::Url::parse(url); !parsed) {
    return tl::unexpected(invalid(where, std::string(field) + " must be an http(s) URL: " + parsed.error().message));
  }
  return {};
}

// "timeoutMs", when present, into `out`: one HTTP exchange with the acquirer at most.
Status read_timeout(const JsonValue& entry, std::chrono::milliseconds& out, const std::string& where) {
  if (entry.find("timeoutMs") == nullptr) {
    return {};
  }
  int64_t ms = entry.int_or("timeoutMs", -1);
  if (ms < 100 || ms > 120'000) {
    return tl::unexpected(invalid(where, "timeoutMs must be a whole number of milliseconds from 100 to 120000"));
  }
  out = std::chrono::milliseconds(ms);
  return {};
}

Status read_methods(const JsonValue& entry, AcquirerEntry& out, const std::string& where) {
  const JsonValue* methods = entry.find("methods");
  if (methods == nullptr) {
    return {};
  }
  auto names = strings(*methods, "methods", where);
  if (!names) {
    return tl::unexpected(names.error());
  }
  for (const auto& name : *names) {
    if (!ppp::method_family(name)) {
      return tl::unexpected(invalid(where, "methods: \"" + name + "\" is not a payment method idempay knows"));
    }
  }
  out.methods = std::move(*names);
  return {};
}

Status read_http(const JsonValue& entry, AcquirerEntry& out, const std::string& where) {
  if (auto known = only_known_fields(entry, {"name", "kind", "methods", "url", "apiKey", "apiKeyFile", "apiKeyEnv"}, where);
      !known) {
    return known;
  }
  auto url = optional_string(entry, "url", where);
  auto key = secret(entry, "apiKey", where);
  for (auto* r : {&url, &key}) {
    if (!*r) {
      return tl::unexpected(r->error());
    }
  }
  if (auto checked = check_url(*url, "url", where); !checked) {
    return checked;
  }
  out.url = std::move(*url);
  out.api_key = std::move(*key);
  return {};
}

// Certificate fingerprints as `openssl x509 -fingerprint -sha256` prints them (colons and
// capitals allowed) or plain hex; kept as lower-case hex.
Result<std::vector<std::string>> fingerprints(const JsonValue& entry, const std::string& where) {
  const JsonValue* listed = entry.find("webhookCertificateSha256");
  if (listed == nullptr) {
    return std::vector<std::string>{};
  }
  auto texts = strings(*listed, "webhookCertificateSha256", where);
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

Status read_bcb_pix(const JsonValue& entry, AcquirerEntry& out, const std::string& where) {
  if (auto known = only_known_fields(entry,
                                     {"name", "kind", "methods", "baseUrl", "tokenUrl", "clientId", "clientSecret",
                                      "clientSecretFile", "clientSecretEnv", "scope", "certificateFile", "keyFile",
                                      "caFile", "pixKey", "timeoutMs", "webhookUrl", "webhookCertificateSha256"},
                                     where);
      !known) {
    return known;
  }
  for (const auto& method : out.methods) {
    if (ppp::method_family(method) != ppp::MethodFamily::kPix) {
      return tl::unexpected(invalid(where, "a bcb-pix acquirer serves Pix only, not \"" + method + "\""));
    }
  }
  auto& pix = out.pix;
  std::pair<std::string_view, std::string*> fields[] = {
      {"baseUrl", &pix.base_url},          {"tokenUrl", &pix.token_url},   {"clientId", &pix.client_id},
      {"scope", &pix.scope},               {"certificateFile", &pix.tls.client_cert_file},
      {"keyFile", &pix.tls.client_key_file}, {"caFile", &pix.tls.extra_ca_file}, {"pixKey", &pix.pix_key},
      {"webhookUrl", &out.pix_webhook.url}};
  for (auto& [name, target] : fields) {
    auto value = optional_string(entry, name, where);
    if (!value) {
      return tl::unexpected(value.error());
    }
    *target = std::move(*value);
  }
  auto client_secret = secret(entry, "clientSecret", where);
  if (!client_secret) {
    return tl::unexpected(client_secret.error());
  }
  pix.client_secret = std::move(*client_secret);
  for (auto [url, name] : {std::pair{&pix.base_url, "baseUrl"}, std::pair{&pix.token_url, "tokenUrl"}}) {
    if (auto checked = check_url(*url, name, where); !checked) {
      return checked;
    }
  }
  if (!out.pix_webhook.url.empty()) {
    if (auto checked = check_url(out.pix_webhook.url, "webhookUrl", where); !checked) {
      return checked;
    }
  }
  if (pix.client_id.empty() || pix.client_secret.empty()) {
    return tl::unexpected(invalid(where, "clientId and clientSecret (or clientSecretFile, clientSecretEnv) are required"));
  }
  if (pix.pix_key.empty() || pix.pix_key.size() > 77) {
    return tl::unexpected(invalid(where, "pixKey is required: the receiver's Pix key, at most 77 characters"));
  }
  if (auto timeout = read_timeout(entry, pix.timeout, where); !timeout) {
    return timeout;
  }
  if (auto loaded = http::check_client_options(pix.tls); !loaded) {
    return tl::unexpected(invalid(where, loaded.error().message));
  }
  auto pinned = fingerprints(entry, where);
  if (!pinned) {
    return tl::unexpected(pinned.error());
  }
  out.pix_webhook.certificate_sha256 = std::move(*pinned);
  return {};
}

bool is_hex_key(const std::string& key) {
  return !key.empty() && key.size() % 2 == 0 && key.size() <= 256 &&
         std::all_of(key.begin(), key.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

Status read_adyen(const JsonValue& entry, AcquirerEntry& out, const std::string& where) {
  if (auto known = only_known_fields(entry,
                                     {"name", "kind", "methods", "baseUrl", "apiKey", "apiKeyFile", "apiKeyEnv",
                                      "merchantAccount", "returnUrl", "timeoutMs", "hmacKey", "hmacKeyFile", "hmacKeyEnv",
                                      "previousHmacKey", "previousHmacKeyFile", "previousHmacKeyEnv",
                                      "notificationUsername", "notificationPassword", "notificationPasswordFile",
                                      "notificationPasswordEnv"},
                                     where);
      !known) {
    return known;
  }
  if (out.methods.empty()) {
    return tl::unexpected(
        invalid(where, "an adyen acquirer names the card methods (and BankInvoice) it serves (methods)"));
  }
  for (const auto& method : out.methods) {
    auto family = ppp::method_family(method);
    if (family != ppp::MethodFamily::kCard && family != ppp::MethodFamily::kBankInvoice) {
      return tl::unexpected(invalid(
          where, "an adyen acquirer serves cards and boleto (BankInvoice) only, not \"" + method + "\""));
    }
  }
  auto& a = out.adyen;
  auto& n = out.adyen_notifications;
  std::pair<std::string_view, std::string*> fields[] = {{"baseUrl", &a.base_url}, {"merchantAccount", &a.merchant_account},
                                                        {"returnUrl", &a.return_url}, {"notificationUsername", &n.username}};
  for (auto& [name, target] : fields) {
    auto value = optional_string(entry, name, where);
    if (!value) {
      return tl::unexpected(value.error());
    }
    *target = std::move(*value);
  }
  auto key = secret(entry, "apiKey", where);
  auto hmac = secret(entry, "hmacKey", where);
  auto previous = secret(entry, "previousHmacKey", where);
  auto password = secret(entry, "notificationPassword", where);
  for (auto* r : {&key, &hmac, &previous, &password}) {
    if (!*r) {
      return tl::unexpected(r->error());
    }
  }
  for (auto [url, name] : {std::pair{&a.base_url, "baseUrl"}, std::pair{&a.return_url, "returnUrl"}}) {
    if (auto checked = check_url(*url, name, where); !checked) {
      return checked;
    }
  }
  if (key->empty() || a.merchant_account.empty() || a.merchant_account.size() > 80) {
    return tl::unexpected(invalid(where, "apiKey (or apiKeyFile, apiKeyEnv) and merchantAccount are required"));
  }
  if (!is_hex_key(*hmac) || (!previous->empty() && !is_hex_key(*previous))) {
    return tl::unexpected(invalid(where, "hmacKey (or hmacKeyFile, hmacKeyEnv) is required: the notifications' HMAC key, in hex"));
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
    return timeout;
  }
  return {};
}

Result<AcquirerEntry> read_entry(const JsonValue& entry, const std::string& where) {
  if (entry.type() != JsonValue::Type::kObject) {
    return tl::unexpected(invalid(where, "must be an object"));
  }
  AcquirerEntry out;
  auto name = optional_string(entry, "name", where);
  if (!name) {
    return tl::unexpected(name.error());
  }
  if (!is_plain_name(*name)) {
    return tl::unexpected(invalid(where, "name is required: 1 to 64 of [A-Za-z0-9_-]"));
  }
  out.name = std::move(*name);
  std::string place = where + " (" + out.name + ")";
  auto kind = kind_of(entry, place);
  if (!kind) {
    return tl::unexpected(kind.error());
  }
  out.kind = *kind;
  if (auto methods = read_methods(entry, out, place); !methods) {
    return tl::unexpected(methods.error());
  }
  Status read;
  switch (out.kind) {
    case AcquirerKind::kStub:
      read = only_known_fields(entry, {"name", "kind", "methods"}, place);
      break;
    case AcquirerKind::kHttp:
      read = read_http(entry, out, place);
      break;
    case AcquirerKind::kBcbPix:
      read = read_bcb_pix(entry, out, place);
      break;
    case AcquirerKind::kAdyen:
      read = read_adyen(entry, out, place);
      break;
  }
  if (!read) {
    return tl::unexpected(read.error());
  }
  return out;
}

}  // namespace

Result<std::vector<AcquirerEntry>> read_acquirers(const JsonValue& list, const std::string& where) {
  if (list.type() != JsonValue::Type::kArray) {
    return tl::unexpected(invalid(where, "acquirers must be an array"));
  }
  std::vector<AcquirerEntry> out;
  std::set<std::string, std::less<>> names;
  std::set<std::string, std::less<>> methods;
  bool has_default = false;
  for (size_t i = 0; i < list.items().size(); ++i) {
    std::string place = where + ": acquirers[" + std::to_string(i) + "]";
    auto entry = read_entry(list.items()[i], place);
    if (!entry) {
      return tl::unexpected(entry.error());
    }
    if (!names.insert(entry->name).second) {
      return tl::unexpected(invalid(place, "the name \"" + entry->name + "\" is used twice"));
    }
    if (entry->methods.empty() && std::exchange(has_default, true)) {
      return tl::unexpected(invalid(place, "only one acquirer may leave out methods (the one for all the others)"));
    }
    for (const auto& method : entry->methods) {
      if (!methods.insert(method).second) {
        return tl::unexpected(invalid(place, "\"" + method + "\" is served by two acquirers"));
      }
    }
    out.push_back(std::move(*entry));
  }
  return out;
}

const AcquirerEntry* acquirer_for(const std::vector<AcquirerEntry>& entries, std::string_view method) {
  const AcquirerEntry* fallback = nullptr;
  for (const auto& entry : entries) {
    if (std::find(entry.methods.begin(), entry.methods.end(), method) != entry.methods.end()) {
      return &entry;
    }
    if (entry.methods.empty()) {
      fallback = &entry;
    }
  }
  return fallback;
}

const AcquirerEntry* acquirer_named(const std::vector<AcquirerEntry>& entries, std::string_view name) {
  for (const auto& entry : entries) {
    if (entry.name == name) {
      return &entry;
    }
  }
  return nullptr;
}

}  // namespace idempay::config
