#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"

namespace idempay {

/// A small JSON document tree for the connector's own records, the acquirer wire format and
/// configuration files. PPP requests use the streaming parsers in ppp.hpp instead.
class JsonValue {
public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }

  /// Member lookup; nullptr when this is not an object or the member is missing.
  const JsonValue* find(std::string_view name) const;
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }

  /// Typed member access with a fallback for missing or mistyped members.
  std::string string_or(std::string_view name, std::string fallback = {}) const;
  int64_t int_or(std::string_view name, int64_t fallback = 0) const;
  bool bool_or(std::string_view name, bool fallback = false) const;

  const std::string& text() const { return text_; }  ///< string value, or a number's raw text
  bool boolean() const { return boolean_; }

  /// Parses a whole document; trailing content, bad UTF-8, depth > 64 and an object with the
  /// same member name twice are errors.
  static Result<JsonValue> parse(std::string_view json);

private:
  friend struct JsonBuilder;
  Type type_ = Type::kNull;
  bool boolean_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

}  // namespace idempay
