#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace idempay {

/// Minimal streaming JSON writer producing compact output. The caller is responsible for
/// well-formed nesting; keys and strings are escaped (RFC 8259), so any input bytes are safe.
class JsonWriter {
public:
  JsonWriter() = default;
  /// Room for `capacity` bytes from the start: a document of about that size is written
  /// without the string growing (and copying itself) at every doubling on the way.
  explicit JsonWriter(size_t capacity) { out_.reserve(capacity); }

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& string(std::string_view v);
  JsonWriter& number(int64_t v);
  /// A decimal written verbatim (the caller guarantees it is a valid JSON number).
  JsonWriter& raw_number(std::string_view v);
  JsonWriter& boolean(bool v);
  JsonWriter& null();
  /// `string(v)` when `v` is non-empty, `null()` otherwise.
  JsonWriter& string_or_null(std::string_view v);

  const std::string& str() const& { return out_; }
  std::string take() && { return std::move(out_); }

private:
  void separate();
  std::string out_;
  bool need_comma_ = false;
};

/// Appends `v` to `out` as a quoted, escaped JSON string.
void append_json_string(std::string& out, std::string_view v);

}  // namespace idempay
