#pragma once
// Reading a configuration file's members (the merchants file, an acquirer entry's settings):
// strings, booleans, lists and secrets, each with an error that names the place.
#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay::settings {

/// kInvalidArgument: "`where`: `what`".
Error invalid(const std::string& where, const std::string& what);

/// A member that must be a non-empty string when present; empty when absent.
Result<std::string> optional_string(const JsonValue& m, std::string_view name, const std::string& where);

/// One string or a non-empty array of them, each non-empty (several tokens during rotation).
Result<std::vector<std::string>> strings(const JsonValue& v, std::string_view name, const std::string& where);

/// `<name>` inline, `<name>File` (a path whose content, without a final newline, is the
/// secret) or `<name>Env` (an environment variable); at most one of them; empty when none.
Result<std::string> secret(const JsonValue& m, const std::string& name, const std::string& where);

/// A member that must be true or false when present; false when absent.
Result<bool> optional_bool(const JsonValue& m, std::string_view name, const std::string& where);

/// Every member of `m` is one of `known`, else an error naming the first that is not.
Status only_known_fields(const JsonValue& m, std::initializer_list<std::string_view> known, const std::string& where);

}  // namespace idempay::settings
