#include "idempay/base/json_read.hpp"

#include <algorithm>
#include <cctype>

#include <simdjson.h>

namespace idempay {

// Duplicate member names are refused: readers that keep the first and readers that keep the
// last would otherwise see two different documents in the same bytes.
bool has_duplicate_keys(const std::vector<std::pair<std::string, JsonValue>>& members) {
  std::vector<std::string_view> names;
  names.reserve(members.size());
  for (const auto& m : members) {
    names.push_back(m.first);
  }
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) != names.end();
}

namespace {

namespace od = simdjson::ondemand;

constexpr int kMaxDepth = 64;

// The JSON number grammar (RFC 8259 §6): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view t) {
  size_t i = 0;
  auto digits = [&] {
    size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.' && (++i, !digits())) {
    return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) {
      return false;
    }
  }
  return i == t.size();
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A number's text as written (a value hands it out directly, the document as a result).
simdjson::error_code raw_token(od::value& v, std::string_view& out) {
  out = v.raw_json_token();
  return simdjson::SUCCESS;
}
simdjson::error_code raw_token(od::document& d, std::string_view& out) { return d.raw_json_token().get(out); }

}  // namespace

// Builds the tree with simdjson On-Demand, which keeps every number's text as written (a DOM
// parser would hand back a binary double: 1.999999999999999999999 read as 2).
struct JsonBuilder {
  bool duplicate_key = false;

  // T is an od::value, or the od::document itself for the root.
  template <class T>
  simdjson::error_code build(T& v, JsonValue& out, int depth) {
    if (depth > kMaxDepth) {
      return simdjson::DEPTH_ERROR;
    }
    od::json_type type;
    SIMDJSON_TRY(v.type().get(type));
    switch (type) {
      case od::json_type::array: {
        out.type_ = JsonValue::Type::kArray;
        od::array array;
        SIMDJSON_TRY(v.get_array().get(array));
        for (auto element : array) {
          od::value item;
          SIMDJSON_TRY(element.get(item));
          out.items_.emplace_back();
          SIMDJSON_TRY(build(item, out.items_.back(), depth + 1));
        }
        return simdjson::SUCCESS;
      }
      case od::json_type::object: {
        out.type_ = JsonValue::Type::kObject;
        od::object object;
        SIMDJSON_TRY(v.get_object().get(object));
        for (auto field : object) {
          std::string_view key;
          od::value value;
          SIMDJSON_TRY(field.unescaped_key().get(key));
          SIMDJSON_TRY(field.value().get(value));
          out.members_.emplace_back(std::string(key), JsonValue());
          SIMDJSON_TRY(build(value, out.members_.back().second, depth + 1));
        }
        duplicate_key |= out.members_.size() > 1 && has_duplicate_keys(out.members_);
        return simdjson::SUCCESS;
      }
      case od::json_type::number: {
        std::string_view text;
        SIMDJSON_TRY(raw_token(v, text));
        text = trimmed(text);
        if (!is_json_number(text)) {
          return simdjson::NUMBER_ERROR;
        }
        out.type_ = JsonValue::Type::kNumber;
        out.text_ = std::string(text);
        return simdjson::SUCCESS;
      }
      case od::json_type::string: {
        std::string_view text;
        SIMDJSON_TRY(v.get_string().get(text));
        out.type_ = JsonValue::Type::kString;
        out.text_ = std::string(text);
        return simdjson::SUCCESS;
      }
      case od::json_type::boolean:
        out.type_ = JsonValue::Type::kBool;
        return v.get_bool().get(out.boolean_);
      case od::json_type::null: {
        bool null = false;
        SIMDJSON_TRY(v.is_null().get(null));
        return null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
      }
    }
    return simdjson::INCORRECT_TYPE;
  }
};

Result<JsonValue> JsonValue::parse(std::string_view json) {
  if (json.empty()) {  // also a null data pointer, which simdjson must not be handed (found by fuzz_webhook)
    return make_error(ErrorCode::kInvalidArgument, "invalid JSON: empty");
  }
  thread_local od::parser parser;
  simdjson::padded_string padded(json);
  od::document doc;
  JsonBuilder builder;
  JsonValue value;
  auto err = parser.iterate(padded).get(doc);
  if (!err) {
    err = builder.build(doc, value, 1);
  }
  // Nothing may follow the document. A number at the root is only looked at, not consumed:
  // its text must then be the whole input.
  const char* location = nullptr;
  if (!err && (value.type_ == Type::kNumber ? trimmed(json) != value.text_
                                            : doc.current_location().get(location) != simdjson::OUT_OF_BOUNDS)) {
    err = simdjson::TRAILING_CONTENT;
  }
  if (err != simdjson::SUCCESS) {
    return make_error(ErrorCode::kInvalidArgument, std::string("invalid JSON: ") + simdjson::error_message(err));
  }
  if (builder.duplicate_key) {
    return make_error(ErrorCode::kInvalidArgument, "invalid JSON: an object has a member name twice");
  }
  return value;
}

const JsonValue* JsonValue::find(std::string_view name) const {
  for (const auto& [key, value] : members_) {
    if (key == name) {
      return &value;
    }
  }
  return nullptr;
}

std::string JsonValue::string_or(std::string_view name, std::string fallback) const {
  const JsonValue* v = find(name);
  return v != nullptr && v->type_ == Type::kString ? v->text_ : fallback;
}

int64_t JsonValue::int_or(std::string_view name, int64_t fallback) const {
  const JsonValue* v = find(name);
  if (v == nullptr || v->type_ != Type::kNumber) {
    return fallback;
  }
  try {
    size_t used = 0;
    int64_t n = std::stoll(v->text_, &used);
    return used == v->text_.size() ? n : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

bool JsonValue::bool_or(std::string_view name, bool fallback) const {
  const JsonValue* v = find(name);
  return v != nullptr && v->type_ == Type::kBool ? v->boolean_ : fallback;
}

}  // namespace idempay
