#include "idempay/base/settings_fields.hpp"

#include <algorithm>
#include <cstdlib>

#include "idempay/base/private_files.hpp"

namespace idempay::settings {

Error invalid(const std::string& where, const std::string& what) {
  return Error{ErrorCode::kInvalidArgument, where + ": " + what};
}

Result<std::string> optional_string(const JsonValue& m, std::string_view name, const std::string& where) {
  const JsonValue* v = m.find(name);
  if (v == nullptr) {
    return std::string();
  }
  if (v->type() != JsonValue::Type::kString || v->text().empty()) {
    return tl::unexpected(invalid(where, std::string(name) + " must be a non-empty string"));
  }
  return v->text();
}

Result<std::vector<std::string>> strings(const JsonValue& v, std::string_view name, const std::string& where) {
  std::vector<std::string> out;
  if (v.type() == JsonValue::Type::kString) {
    out.push_back(v.text());
  } else if (v.type() == JsonValue::Type::kArray) {
    for (const JsonValue& item : v.items()) {
      if (item.type() != JsonValue::Type::kString) {
        return tl::unexpected(invalid(where, std::string(name) + " must hold strings only"));
      }
      out.push_back(item.text());
    }
  }
  if (out.empty() || std::any_of(out.begin(), out.end(), [](const std::string& s) { return s.empty(); })) {
    return tl::unexpected(invalid(where, std::string(name) + " must be a non-empty string or array of them"));
  }
  return out;
}

Result<std::string> secret(const JsonValue& m, const std::string& name, const std::string& where) {
  auto inline_value = optional_string(m, name, where);
  auto file = optional_string(m, name + "File", where);
  auto env = optional_string(m, name + "Env", where);
  for (auto* r : {&inline_value, &file, &env}) {
    if (!*r) {
      return tl::unexpected(r->error());
    }
  }
  if (!inline_value->empty() + !file->empty() + !env->empty() > 1) {
    return tl::unexpected(invalid(where, "give " + name + " one way only (inline, File or Env)"));
  }
  if (!file->empty()) {
    auto text = read_secret_file(*file);
    if (!text) {
      return tl::unexpected(invalid(where, name + "File: " + text.error().message));
    }
    if (text->empty()) {
      return tl::unexpected(invalid(where, name + "File " + *file + " is empty"));
    }
    return *text;
  }
  if (!env->empty()) {
    const char* value = std::getenv(env->c_str());
    if (value == nullptr || *value == '\0') {
      return tl::unexpected(invalid(where, name + "Env: environment variable " + *env + " is not set"));
    }
    return std::string(value);
  }
  return *inline_value;
}

Result<bool> optional_bool(const JsonValue& m, std::string_view name, const std::string& where) {
  const JsonValue* v = m.find(name);
  if (v == nullptr) {
    return false;
  }
  if (v->type() != JsonValue::Type::kBool) {
    return tl::unexpected(invalid(where, std::string(name) + " must be true or false"));
  }
  return v->boolean();
}

Status only_known_fields(const JsonValue& m, std::initializer_list<std::string_view> known, const std::string& where) {
  for (const auto& [field, unused] : m.members()) {
    if (std::find(known.begin(), known.end(), field) == known.end()) {
      return tl::unexpected(invalid(where, "unknown field \"" + field + "\""));
    }
  }
  return {};
}

}  // namespace idempay::settings
