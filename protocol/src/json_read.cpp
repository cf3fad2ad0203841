#include "idempay/protocol/json_read.hpp"

#include <algorithm>

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

struct JsonBuilder {
  bool duplicate_key = false;

  JsonValue build(simdjson::dom::element e) {
    JsonValue v;
    switch (e.type()) {
      case simdjson::dom::element_type::ARRAY:
        v.type_ = JsonValue::Type::kArray;
        for (simdjson::dom::element item : simdjson::dom::array(e)) {
          v.items_.push_back(build(item));
        }
        break;
      case simdjson::dom::element_type::OBJECT:
        v.type_ = JsonValue::Type::kObject;
        for (simdjson::dom::key_value_pair field : simdjson::dom::object(e)) {
          v.members_.emplace_back(std::string(field.key), build(field.value));
        }
        duplicate_key |= v.members_.size() > 1 && has_duplicate_keys(v.members_);
        break;
      case simdjson::dom::element_type::STRING:
        v.type_ = JsonValue::Type::kString;
        v.text_ = std::string(std::string_view(e));
        break;
      case simdjson::dom::element_type::INT64:
        v.type_ = JsonValue::Type::kNumber;
        v.text_ = std::to_string(int64_t(e));
        break;
      case simdjson::dom::element_type::UINT64:
        v.type_ = JsonValue::Type::kNumber;
        v.text_ = std::to_string(uint64_t(e));
        break;
      case simdjson::dom::element_type::DOUBLE:
        v.type_ = JsonValue::Type::kNumber;
        v.text_ = simdjson::minify(e);
        break;
      case simdjson::dom::element_type::BOOL:
        v.type_ = JsonValue::Type::kBool;
        v.boolean_ = bool(e);
        break;
      case simdjson::dom::element_type::NULL_VALUE:
        break;
    }
    return v;
  }
};

Result<JsonValue> JsonValue::parse(std::string_view json) {
  if (json.empty()) {  // also a null data pointer, which simdjson must not be handed (found by fuzz_webhook)
    return make_error(ErrorCode::kInvalidArgument, "invalid JSON: empty");
  }
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  auto err = parser.parse(json.data(), json.size(), true).get(root);
  if (err != simdjson::SUCCESS) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("invalid JSON: ") + simdjson::error_message(err));
  }
  JsonBuilder builder;
  JsonValue value = builder.build(root);
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
