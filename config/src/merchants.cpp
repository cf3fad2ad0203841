#include "idempay/config/merchants.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "idempay/http/url.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/private_files.hpp"
#include "idempay/base/settings_fields.hpp"

namespace idempay::config {

using namespace settings;

namespace {

const std::set<std::string, std::less<>> kMerchantFields = {
    "name", "appKey", "appToken", "appTokenSha256", "acquirer", "acquirerApiKey", "acquirerApiKeyFile",
    "acquirerApiKeyEnv", "callbackAppKey", "callbackAppToken", "callbackAppTokenFile", "callbackAppTokenEnv",
    "testSuite", "requireSecureProxy", "manualOperations", "onboarding", "onboardedAt", "acquirers"};

Result<TestSuitePolicy> test_suite_policy(const JsonValue& m, const std::string& where) {
  const JsonValue* v = m.find("testSuite");
  if (v == nullptr) {
    return TestSuitePolicy::kRoute;
  }
  static constexpr std::pair<std::string_view, TestSuitePolicy> kPolicies[] = {
      {"route", TestSuitePolicy::kRoute}, {"refuse", TestSuitePolicy::kRefuse}, {"only", TestSuitePolicy::kOnly}};
  for (const auto& [name, policy] : kPolicies) {
    if (v->type() == JsonValue::Type::kString && v->text() == name) {
      return policy;
    }
  }
  return tl::unexpected(invalid(where, "testSuite must be \"route\", \"refuse\" or \"only\""));
}


Status read_merchant(const JsonValue& m, size_t index, const AcquirerKinds& kinds, http::Credentials& credentials,
                     MerchantFile& out) {
  std::string where = "merchants[" + std::to_string(index) + "]";
  if (m.type() != JsonValue::Type::kObject) {
    return tl::unexpected(invalid(where, "must be an object"));
  }
  for (const auto& [field, unused] : m.members()) {
    if (kMerchantFields.count(field) == 0) {
      return tl::unexpected(invalid(where, "unknown field \"" + field + "\""));
    }
  }
  auto policy = test_suite_policy(m, where);
  if (!policy) {
    return tl::unexpected(policy.error());
  }
  // The homologation suite's own entry may have an empty pair (the suite's mode without
  // credentials); it then needs a name, and only requests from the suite can use it.
  const bool suite_only = *policy == TestSuitePolicy::kOnly;
  const JsonValue* key_value = m.find("appKey");
  bool empty_pair_allowed = suite_only && key_value != nullptr && key_value->type() == JsonValue::Type::kString;
  auto key = empty_pair_allowed ? Result<std::string>(key_value->text()) : optional_string(m, "appKey", where);
  if (!key || (key->empty() && !empty_pair_allowed)) {
    return tl::unexpected(key ? invalid(where, "appKey is required") : key.error());
  }
  auto name = optional_string(m, "name", where);
  if (!name) {
    return tl::unexpected(name.error());
  }
  if (name->empty() && key->empty()) {
    return tl::unexpected(invalid(where, "an entry with an empty appKey needs a name"));
  }
  std::string merchant = name->empty() ? *key : *name;
  where += " (" + merchant + ")";
  const JsonValue* token = m.find("appToken");
  const JsonValue* hashed = m.find("appTokenSha256");
  if ((token == nullptr) == (hashed == nullptr)) {
    return tl::unexpected(invalid(where, "needs exactly one of appToken and appTokenSha256"));
  }
  std::vector<std::string> tokens;
  if (empty_pair_allowed && token != nullptr && token->type() == JsonValue::Type::kString) {
    tokens.push_back(token->text());
  } else if (auto listed = strings(token ? *token : *hashed, token ? "appToken" : "appTokenSha256", where)) {
    tokens = std::move(*listed);
  } else {
    return tl::unexpected(listed.error());
  }
  auto added = token ? credentials.add(merchant, *key, tokens, suite_only)
                     : credentials.add_hashed(merchant, *key, tokens, suite_only);
  bool guessable = token != nullptr && !suite_only &&
                   std::any_of(tokens.begin(), tokens.end(), [](const std::string& t) { return t.size() < kMinSafeTokenLength; });
  if (guessable) {
    out.warnings.push_back(where + ": an appToken is shorter than " + std::to_string(kMinSafeTokenLength) +
                           " characters and could be guessed; use a long random one (openssl rand -hex 32)");
  }
  if (!added) {
    return tl::unexpected(invalid(where, added.error().message));
  }
  MerchantSettings settings;
  settings.test_suite = *policy;
  auto require_proxy = optional_bool(m, "requireSecureProxy", where);
  if (!require_proxy) {
    return tl::unexpected(require_proxy.error());
  }
  settings.require_secure_proxy = *require_proxy;
  auto onboarding = optional_bool(m, "onboarding", where);
  if (!onboarding) {
    return tl::unexpected(onboarding.error());
  }
  settings.onboarding = *onboarding;
  if (auto s = read_manual_operations(m, where, settings.manual_cancel, settings.manual_refund); !s) {
    return s;
  }
  auto acquirer = optional_string(m, "acquirer", where);
  auto api_key = secret(m, "acquirerApiKey", where);
  auto cb_key = optional_string(m, "callbackAppKey", where);
  auto cb_token = secret(m, "callbackAppToken", where);
  for (auto* r : {&acquirer, &api_key, &cb_key, &cb_token}) {
    if (!*r) {
      return tl::unexpected(r->error());
    }
  }
  if (!acquirer->empty()) {
    if (auto route = check_acquirer_route(*acquirer); !route) {
      return tl::unexpected(invalid(where, route.error().message));
    }
  }
  if (cb_key->empty() != cb_token->empty()) {
    return tl::unexpected(invalid(where, "callbackAppKey and callbackAppToken go together"));
  }
  if (const JsonValue* listed = m.find("acquirers")) {
    auto acquirers = read_acquirers(*listed, where, kinds);
    if (!acquirers) {
      return tl::unexpected(acquirers.error());
    }
    bool claims_the_rest = std::any_of(acquirers->begin(), acquirers->end(),
                                       [](const AcquirerEntry& a) { return a.methods.empty(); });
    if (claims_the_rest && !acquirer->empty()) {
      return tl::unexpected(invalid(where, "\"acquirer\" and an acquirers entry without methods both claim "
                                           "every other method: keep one"));
    }
    settings.acquirers = std::move(*acquirers);
  }
  settings.acquirer = std::move(*acquirer);
  settings.acquirer_api_key = std::move(*api_key);
  settings.callback_app_key = std::move(*cb_key);
  settings.callback_app_token = std::move(*cb_token);
  if (out.first_merchant.empty()) {
    out.first_merchant = merchant;
  }
  out.settings.emplace(std::move(merchant), std::move(settings));
  return {};
}

}  // namespace

Status read_manual_operations(const JsonValue& entry, const std::string& where, bool& cancel, bool& refund) {
  const JsonValue* v = entry.find("manualOperations");
  if (v == nullptr) {
    return {};
  }
  if (v->type() != JsonValue::Type::kArray) {
    return tl::unexpected(invalid(where, "manualOperations must be an array of \"cancel\" and \"refund\""));
  }
  for (const JsonValue& item : v->items()) {
    bool known = item.type() == JsonValue::Type::kString && (item.text() == "cancel" || item.text() == "refund");
    if (!known) {
      return tl::unexpected(invalid(where, "manualOperations may name only \"cancel\" and \"refund\""));
    }
    (item.text() == "cancel" ? cancel : refund) = true;
  }
  return {};
}

Status check_acquirer_route(const std::string& route) {
  if (route == kStubRoute) {
    return {};
  }
  if (auto url = http::Url::parse(route); !url) {
    return make_error(ErrorCode::kInvalidArgument, "acquirer must be 'stub' or an http(s) URL: " + url.error().message);
  }
  return {};
}

namespace {

const std::set<std::string, std::less<>> kOperatorFields = {"name", "token", "tokenFile", "tokenEnv",
                                                            "tokenSha256", "role", "merchants"};

Result<OperatorSettings> operator_scope(const JsonValue& o, const std::string& where) {
  OperatorSettings settings;
  const JsonValue* role = o.find("role");
  if (role == nullptr || role->type() != JsonValue::Type::kString || (role->text() != "read" && role->text() != "act")) {
    return tl::unexpected(invalid(where, "role must be \"read\" or \"act\""));
  }
  settings.can_act = role->text() == "act";
  const JsonValue* merchants = o.find("merchants");
  if (merchants == nullptr) {
    return tl::unexpected(invalid(where, "merchants is required: [\"*\"] or the merchants' names"));
  }
  auto names = strings(*merchants, "merchants", where);
  if (!names) {
    return tl::unexpected(names.error());
  }
  for (auto& name : *names) {
    if (name == "*") {
      settings.all_merchants = true;
    } else {
      settings.merchants.insert(std::move(name));
    }
  }
  return settings;
}

// One operator: a bearer token (inline, file, environment or SHA-256) under its name.
Status read_operator(const JsonValue& o, size_t index, http::Credentials& tokens, MerchantFile& out) {
  std::string where = "operators[" + std::to_string(index) + "]";
  if (o.type() != JsonValue::Type::kObject) {
    return tl::unexpected(invalid(where, "must be an object"));
  }
  for (const auto& [field, unused] : o.members()) {
    if (kOperatorFields.count(field) == 0) {
      return tl::unexpected(invalid(where, "unknown field \"" + field + "\""));
    }
  }
  auto name = optional_string(o, "name", where);
  auto token = secret(o, "token", where);
  auto hashed = optional_string(o, "tokenSha256", where);
  for (auto* r : {&name, &token, &hashed}) {
    if (!*r) {
      return tl::unexpected(r->error());
    }
  }
  if (name->empty()) {
    return tl::unexpected(invalid(where, "name is required"));
  }
  where += " (" + *name + ")";
  if (token->empty() == hashed->empty()) {
    return tl::unexpected(invalid(where, "needs exactly one of token (or tokenFile, tokenEnv) and tokenSha256"));
  }
  if (!token->empty() && token->size() < 16) {
    return tl::unexpected(invalid(where, "token must be at least 16 characters"));
  }
  auto scope = operator_scope(o, where);
  if (!scope) {
    return tl::unexpected(scope.error());
  }
  // Keyed by name: a bearer token is looked up by itself (Credentials::authenticate_bearer).
  auto added = !token->empty() ? tokens.add(*name, *name, {*token}) : tokens.add_hashed(*name, *name, {*hashed});
  if (!added) {
    return tl::unexpected(invalid(where, added.error().message));
  }
  if (!token->empty() && tokens.authenticate_bearer(*token) != *name) {
    return tl::unexpected(invalid(where, "token is also another operator's"));
  }
  out.operators.emplace(*name, std::move(*scope));
  return {};
}

// The merchants of one file, added to `credentials` and `out` (names and appKeys unique across
// both files), and its operators.
Status read_file(const std::string& path, const AcquirerKinds& kinds, http::Credentials& credentials,
                 http::Credentials& operators, MerchantFile& out) {
  auto doc = read_json_file(path);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  const JsonValue* merchants = doc->find("merchants");
  if (doc->type() != JsonValue::Type::kObject || merchants == nullptr ||
      merchants->type() != JsonValue::Type::kArray || merchants->items().empty()) {
    return tl::unexpected(invalid(path, "expected {\"merchants\": [ at least one merchant ]}"));
  }
  for (const auto& [field, unused] : doc->members()) {
    if (field != "merchants" && field != "operators") {
      return tl::unexpected(invalid(path, "unknown field \"" + field + "\""));
    }
  }
  for (size_t i = 0; i < merchants->items().size(); ++i) {
    if (auto s = read_merchant(merchants->items()[i], i, kinds, credentials, out); !s) {
      return tl::unexpected(invalid(path, s.error().message));
    }
  }
  if (const JsonValue* listed = doc->find("operators")) {
    if (listed->type() != JsonValue::Type::kArray) {
      return tl::unexpected(invalid(path, "operators must be an array"));
    }
    for (size_t i = 0; i < listed->items().size(); ++i) {
      if (auto s = read_operator(listed->items()[i], i, operators, out); !s) {
        return tl::unexpected(invalid(path, s.error().message));
      }
    }
  }
  return {};
}

}  // namespace

Result<MerchantFile> load_merchant_file(const std::string& path, const AcquirerKinds& kinds,
                                        const std::string& onboarded_path) {
  auto credentials = std::make_shared<http::Credentials>();
  auto operators = std::make_shared<http::Credentials>();
  MerchantFile out;
  if (auto s = read_file(path, kinds, *credentials, *operators, out); !s) {
    return tl::unexpected(s.error());
  }
  if (!onboarded_path.empty()) {
    auto s = read_file(onboarded_path, kinds, *credentials, *operators, out);
    if (!s && s.error().code != ErrorCode::kNotFound) {
      return tl::unexpected(s.error());
    }
  }
  out.credentials = std::move(credentials);
  out.operator_credentials = std::move(operators);
  return out;
}

}  // namespace idempay::config
