#include "idempay/config/acquirers.hpp"

#include <algorithm>
#include <set>

#include "idempay/protocol/methods.hpp"
#include "idempay/base/settings_fields.hpp"

namespace idempay::config {

using namespace settings;

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

Result<const acquirer::Kind*> kind_of(const JsonValue& entry, const AcquirerKinds& kinds, const std::string& where) {
  auto kind = optional_string(entry, "kind", where);
  if (!kind) {
    return tl::unexpected(kind.error());
  }
  std::string names;
  for (const acquirer::Kind* k : kinds) {
    if (*kind == k->name) {
      return k;
    }
    names += (names.empty() ? "\"" : ", \"") + k->name + "\"";
  }
  return tl::unexpected(invalid(where, "kind must be one of " + names));
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

Result<AcquirerEntry> read_entry(const JsonValue& entry, const AcquirerKinds& kinds, const std::string& where) {
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
  auto kind = kind_of(entry, kinds, place);
  if (!kind) {
    return tl::unexpected(kind.error());
  }
  out.kind = *kind;
  if (auto methods = read_methods(entry, out, place); !methods) {
    return tl::unexpected(methods.error());
  }
  auto read = out.kind->read(entry, out.methods, place);
  if (!read) {
    return tl::unexpected(read.error());
  }
  out.settings = std::move(*read);
  return out;
}

}  // namespace

Result<std::vector<AcquirerEntry>> read_acquirers(const JsonValue& list, const std::string& where,
                                                  const AcquirerKinds& kinds) {
  if (list.type() != JsonValue::Type::kArray) {
    return tl::unexpected(invalid(where, "acquirers must be an array"));
  }
  std::vector<AcquirerEntry> out;
  std::set<std::string, std::less<>> names;
  std::set<std::string, std::less<>> methods;
  bool has_default = false;
  for (size_t i = 0; i < list.items().size(); ++i) {
    std::string place = where + ": acquirers[" + std::to_string(i) + "]";
    auto entry = read_entry(list.items()[i], kinds, place);
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
