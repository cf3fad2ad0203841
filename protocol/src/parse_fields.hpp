#pragma once
// Streaming readers for PPP request bodies (simdjson On-Demand): typed fields with errors that
// name them, objects whose member names must be unique. Internal to protocol/.
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include <simdjson.h>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"

namespace idempay::ppp::parse {

namespace od = simdjson::ondemand;

// The name of the field being read ("miniCart.items[2].price"), spelled out only when an error
// message needs it: a reader is given its parent's path and its own member name or index, so
// reading a field that is valid (nearly every one) builds no string. A path refers to its
// parent and to the text it was made from, so it lives only as a reader's argument or local.
class FieldPath {
public:
  FieldPath(const char* name) : name_(name) {}
  FieldPath(std::string_view name) : name_(name) {}
  FieldPath(const FieldPath& parent, std::string_view member) : parent_(&parent), name_(member) {}
  FieldPath(const FieldPath& parent, size_t index) : parent_(&parent), index_(index), indexed_(true) {}

  std::string str() const {
    std::string out = parent_ ? parent_->str() : std::string();
    if (indexed_) {
      out.append("[").append(std::to_string(index_)).append("]");
    } else {
      out.append(parent_ ? "." : "").append(name_);
    }
    return out;
  }

private:
  const FieldPath* parent_ = nullptr;
  std::string_view name_;
  size_t index_ = 0;
  bool indexed_ = false;
};

inline Error field_error(const FieldPath& field, std::string_view what) {
  return Error{ErrorCode::kInvalidArgument, field.str() + " " + std::string(what)};
}

inline Error json_error(simdjson::error_code e) {
  return Error{ErrorCode::kInvalidArgument,
               std::string("malformed JSON body: ") + simdjson::error_message(e)};
}

inline Status read_string(od::value v, const FieldPath& field, std::string& out, bool nullable) {
  od::json_type type;
  if (auto e = v.type().get(type)) {
    return tl::unexpected(json_error(e));
  }
  if (type == od::json_type::null && nullable) {
    out.clear();
    return {};
  }
  std::string_view s;
  if (type != od::json_type::string || v.get_string().get(s) != simdjson::SUCCESS) {
    return tl::unexpected(field_error(field, nullable ? "must be a string or null" : "must be a string"));
  }
  out.assign(s);
  return {};
}

// A number's raw text (or a string's, for numbers the gateway's guides send quoted), so that
// decimals stay exact; empty for null.
inline Status read_number_text(od::value v, const FieldPath& field, std::string_view& text) {
  od::json_type type;
  if (auto e = v.type().get(type)) {
    return tl::unexpected(json_error(e));
  }
  text = {};
  if (type == od::json_type::number) {
    text = v.raw_json_token();
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
      text.remove_suffix(1);
    }
  } else if (type != od::json_type::null &&
             (type != od::json_type::string || v.get_string().get(text) != simdjson::SUCCESS)) {
    return tl::unexpected(field_error(field, "must be a number"));
  }
  return {};
}

// Amounts are read from their raw text so that they stay exact; strings such as "29,90" are
// accepted because the gateway's guides send them.
inline Status read_amount(od::value v, const FieldPath& field, Cents& out) {
  std::string_view text;
  if (auto s = read_number_text(v, field, text); !s) {
    return s;
  }
  auto cents = parse_decimal_amount(text);
  if (!cents) {
    return tl::unexpected(field_error(field, "must be a non-negative amount with at most 2 decimals"));
  }
  out = *cents;
  return {};
}

inline Status read_integer(od::value v, const FieldPath& field, int64_t& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) {
    return tl::unexpected(json_error(e));
  }
  Cents cents = 0;
  if (type == od::json_type::number || type == od::json_type::string) {
    if (read_amount(v, field, cents) && cents % 100 == 0) {
      out = cents / 100;
      return {};
    }
  }
  return tl::unexpected(field_error(field, "must be a whole number"));
}

inline Status read_bool(od::value v, const FieldPath& field, bool& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) {
    return tl::unexpected(json_error(e));
  }
  if (type == od::json_type::null) {
    out = false;
    return {};
  }
  if (type != od::json_type::boolean || v.get_bool().get(out) != simdjson::SUCCESS) {
    return tl::unexpected(field_error(field, "must be a boolean"));
  }
  return {};
}

// The member names of one object, to refuse a name seen twice: readers that keep the first
// and readers that keep the last would see two different requests in the same bytes. Up to
// 48 names live in a small open-addressing table on the stack, hashed by their length and
// their first and last bytes (a general string hash cost more than the rest of the check;
// names that collide are only compared, and at most 48 live here); beyond that, a hash set.
class MemberNames {
public:
  // False if `name` was inserted before.
  bool insert(std::string_view name) {
    if (overflow_) {
      return overflow_->insert(name).second;
    }
    if (count_ == kInline) {
      overflow_.emplace(slots_.begin(), slots_.end());
      return overflow_->insert(name).second;
    }
    size_t h = slot_of(name);
    while ((used_ >> h) & 1) {
      if (slots_[h] == name) {
        return false;
      }
      h = (h + 1) & (kSlots - 1);
    }
    used_ |= uint64_t{1} << h;
    slots_[h] = name;
    ++count_;
    return true;
  }

private:
  static size_t slot_of(std::string_view name) {
    if (name.empty()) {
      return 0;
    }
    auto first = static_cast<unsigned char>(name.front());
    auto last = static_cast<unsigned char>(name.back());
    auto middle = static_cast<unsigned char>(name[name.size() / 2]);
    return (name.size() * 7 + first * 3 + middle * 5 + last) & (kSlots - 1);
  }

  static constexpr size_t kSlots = 64;
  static constexpr size_t kInline = 48;
  std::array<std::string_view, kSlots> slots_{};
  uint64_t used_ = 0;
  size_t count_ = 0;
  std::optional<std::unordered_set<std::string_view>> overflow_;
};

// Iterates an object's fields, calling on_field(key, value) for each; stops at the first error.
// A member name given twice is an error.
template <class OnField>
inline Status for_each_field(od::object object, OnField&& on_field) {
  MemberNames names;
  for (auto field : object) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) {
      return tl::unexpected(json_error(e));
    }
    if (!names.insert(key)) {
      return make_error(ErrorCode::kInvalidArgument, "member \"" + std::string(key) + "\" appears twice");
    }
    od::value value;
    if (auto e = field.value().get(value)) {
      return tl::unexpected(json_error(e));
    }
    if (auto s = on_field(key, value); !s) {
      return s;
    }
  }
  return {};
}

// Reads an object-or-null member; null leaves the target untouched.
template <class OnField>
inline Status read_object(od::value v, const FieldPath& field, OnField&& on_field) {
  od::json_type type;
  if (auto e = v.type().get(type)) {
    return tl::unexpected(json_error(e));
  }
  if (type == od::json_type::null) {
    return {};
  }
  od::object object;
  if (type != od::json_type::object || v.get_object().get(object) != simdjson::SUCCESS) {
    return tl::unexpected(field_error(field, "must be an object"));
  }
  return for_each_field(object, on_field);
}

// Reads an array-or-null member, calling on_item(index, value) for each of at most
// `max_items` elements.
template <class OnItem>
inline Status read_array(od::value v, const FieldPath& field, size_t max_items, OnItem&& on_item) {
  od::json_type type;
  if (auto e = v.type().get(type)) {
    return tl::unexpected(json_error(e));
  }
  if (type == od::json_type::null) {
    return {};
  }
  od::array array;
  if (type != od::json_type::array || v.get_array().get(array) != simdjson::SUCCESS) {
    return tl::unexpected(field_error(field, "must be an array"));
  }
  size_t index = 0;
  for (auto element : array) {
    od::value item;
    if (auto e = element.get(item)) {
      return tl::unexpected(json_error(e));
    }
    if (index == max_items) {
      return tl::unexpected(field_error(field, "has more than " + std::to_string(max_items) + " elements"));
    }
    if (auto s = on_item(index++, item); !s) {
      return s;
    }
  }
  return {};
}

// A text field of at most `max_size` bytes (personal and order data: bounded before it is
// passed on).
inline Status read_text(od::value v, const FieldPath& field, std::string& out, size_t max_size = 256) {
  if (auto s = read_string(v, field, out, true); !s) {
    return s;
  }
  if (out.size() > max_size) {
    return tl::unexpected(field_error(field, "is longer than " + std::to_string(max_size) + " characters"));
  }
  return {};
}

}  // namespace idempay::ppp::parse
