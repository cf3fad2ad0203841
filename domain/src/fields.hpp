#pragma once
// One mechanism for the stored records' JSON: a record lists its fields once, as a table of
// (name, accessor) pairs, and the same table writes and reads it, in the table's order. A
// member's type says how it is written (Codec<V>): strings, integers, and the types a record
// file specialises Codec for (enums, nested objects). Reading is by name, so a record written
// by an older version, with fewer or reordered fields, still reads: a missing field keeps its
// default.
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"

namespace idempay::domain::fields {

/// How a value of type V is written, and read from member `name` of an object; `read` returns
/// false for a value that cannot be one (an unknown enum name).
template <class V, class = void>
struct Codec;

template <>
struct Codec<std::string> {
  static void write(JsonWriter& w, const std::string& v) { w.string(v); }
  static bool read(const JsonValue& object, std::string_view name, std::string& v) {
    v = object.string_or(name);
    return true;
  }
};

template <class I>
struct Codec<I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>>> {
  static void write(JsonWriter& w, I v) { w.number(static_cast<int64_t>(v)); }
  static bool read(const JsonValue& object, std::string_view name, I& v) {
    v = static_cast<I>(object.int_or(name));
    return true;
  }
};

template <class C, class = void>
struct HasIsDefault : std::false_type {};
template <class C>
struct HasIsDefault<C, std::void_t<decltype(&C::is_default)>> : std::true_type {};

/// A field: its JSON name and how to reach the member (a generic lambda returning a reference,
/// so that one accessor serves both writing and reading, nested members included).
/// `kOmitDefault`: not written while the member holds its default value.
template <class Access, bool kOmitDefault = false>
struct Field {
  std::string_view name;
  Access access;
};

template <class Access>
constexpr Field<Access> field(std::string_view name, Access access) {
  return {name, access};
}

template <class Access>
constexpr Field<Access, true> field_unless_default(std::string_view name, Access access) {
  return {name, access};
}

/// The format version a record is written in, as its first member: a record without it is
/// version 1; a record of a newer version than this code knows is refused, never misread.
struct Version {
  std::string_view name;
  int64_t current;
};

constexpr Version version(std::string_view name, int64_t current) { return {name, current}; }

/// True when `value` is its type's default: equal to V{}, or, for a nested record, every one
/// of its fields at its default.
template <class V>
bool is_default(const V& value) {
  if constexpr (HasIsDefault<Codec<V>>::value) {
    return Codec<V>::is_default(value);
  } else {
    return value == V{};
  }
}

/// Writes one field of `record`.
template <class T, class Access, bool kOmitDefault>
void write_field(JsonWriter& w, const T& record, const Field<Access, kOmitDefault>& f) {
  const auto& value = f.access(record);
  using V = std::decay_t<decltype(value)>;
  if constexpr (kOmitDefault) {
    if (is_default(value)) {
      return;
    }
  }
  w.key(f.name);
  Codec<V>::write(w, value);
}

template <class T>
void write_field(JsonWriter& w, const T&, const Version& v) {
  w.key(v.name).number(v.current);
}

template <class T, class Access, bool kOmitDefault>
bool read_field(const JsonValue& object, T& record, const Field<Access, kOmitDefault>& f) {
  auto& value = f.access(record);
  using V = std::decay_t<decltype(value)>;
  return Codec<V>::read(object, f.name, value);
}

template <class T>
bool read_field(const JsonValue& object, T&, const Version& v) {
  return object.int_or(v.name, 1) <= v.current;
}

/// Writes every field of `table` of `record` as members of the object being written.
template <class T, class Table>
void write(JsonWriter& w, const T& record, const Table& table) {
  std::apply([&](const auto&... f) { (write_field(w, record, f), ...); }, table);
}

/// Reads every field of `table` into `record`; false if one holds an impossible value.
template <class T, class Table>
bool read(const JsonValue& object, T& record, const Table& table) {
  return std::apply([&](const auto&... f) { return (read_field(object, record, f) && ...); }, table);
}

/// What a stored record's JSON usually takes: a payment with its embedded answer is one to
/// two kilobytes, an audit entry a few hundred bytes.
constexpr size_t kTypicalRecordBytes = 1024;

/// The whole record as one JSON object.
template <class T, class Table>
std::string encode_object(const T& record, const Table& table) {
  JsonWriter w(kTypicalRecordBytes);
  w.begin_object();
  write(w, record, table);
  w.end_object();
  return std::move(w).take();
}

/// A record from one JSON object; kInternal naming `what` if a field holds an impossible value.
template <class T, class Table>
Result<T> decode_object(std::string_view json, const Table& table, std::string_view what) {
  auto doc = JsonValue::parse(json);
  if (!doc) {
    return tl::unexpected(doc.error());
  }
  T record;
  if (!read(*doc, record, table)) {
    return make_error(ErrorCode::kInternal, "stored " + std::string(what) + " holds an unknown value");
  }
  return record;
}

/// Codec for a nested record with a table of its own, written as an object.
template <class T, const auto& kTable>
struct NestedCodec {
  static void write(JsonWriter& w, const T& v) {
    w.begin_object();
    fields::write(w, v, kTable);
    w.end_object();
  }
  static bool read(const JsonValue& object, std::string_view name, T& v) {
    const JsonValue* nested = object.find(name);
    return nested == nullptr || fields::read(*nested, v, kTable);
  }
  static bool is_default(const T& v) {
    return std::apply([&](const auto&... f) { return (fields::is_default(f.access(v)) && ...); }, kTable);
  }
};

}  // namespace idempay::domain::fields

/// A field named `json_name` for member path `member` of the record (`amounts.settled` works).
#define IDEMPAY_FIELD(json_name, member) \
  ::idempay::domain::fields::field(json_name, [](auto& r) -> auto& { return r.member; })
#define IDEMPAY_FIELD_UNLESS_DEFAULT(json_name, member) \
  ::idempay::domain::fields::field_unless_default(json_name, [](auto& r) -> auto& { return r.member; })
