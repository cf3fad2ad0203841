#include "idempay/protocol/json_writer.hpp"

namespace idempay {

void append_json_string(std::string& out, std::string_view v) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  // Characters that need no escape are copied in runs, not one by one.
  size_t run = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    auto u = static_cast<unsigned char>(v[i]);
    if (u >= 0x20 && u != '"' && u != '\\') {
      continue;
    }
    out.append(v.data() + run, i - run);
    run = i + 1;
    switch (u) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out.push_back(kHex[u >> 4]);
        out.push_back(kHex[u & 0xf]);
    }
  }
  out.append(v.data() + run, v.size() - run);
  out.push_back('"');
}

void JsonWriter::separate() {
  if (need_comma_) {
    out_.push_back(',');
  }
  need_comma_ = true;
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_.push_back('{');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_.push_back('}');
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_.push_back('[');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_.push_back(']');
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  append_json_string(out_, k);
  out_.push_back(':');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view v) {
  separate();
  append_json_string(out_, v);
  return *this;
}

JsonWriter& JsonWriter::number(int64_t v) {
  separate();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::raw_number(std::string_view v) {
  separate();
  out_ += v;
  return *this;
}

JsonWriter& JsonWriter::boolean(bool v) {
  separate();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::string_or_null(std::string_view v) {
  return v.empty() ? null() : string(v);
}

}  // namespace idempay
