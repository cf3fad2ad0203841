#include "idempay/tracing/otlp.hpp"

#include <cstring>

#include "idempay/base/visible_text.hpp"

namespace idempay::tracing {

namespace {

// Protocol Buffers' wire format, the few parts OTLP's messages need.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void tag(std::string& out, uint32_t field, WireType type) { varint(out, uint64_t{field} << 3 | type); }

void bytes_field(std::string& out, uint32_t field, const void* data, size_t size) {
  tag(out, field, kLengthDelimited);
  varint(out, size);
  out.append(static_cast<const char*>(data), size);
}

// A protobuf string is UTF-8, and a collector may refuse a whole batch for one that is not:
// text from outside (a request's path) goes in with anything not plain made a visible escape.
void text_field(std::string& out, uint32_t field, std::string_view s) {
  if (is_plain_text(s)) {
    bytes_field(out, field, s.data(), s.size());
  } else {
    std::string shown = visible(s);
    bytes_field(out, field, shown.data(), shown.size());
  }
}

void string_field(std::string& out, uint32_t field, std::string_view s) {
  if (!s.empty()) {
    text_field(out, field, s);
  }
}

void message_field(std::string& out, uint32_t field, const std::string& message) {
  bytes_field(out, field, message.data(), message.size());
}

void fixed64_field(std::string& out, uint32_t field, uint64_t v) {
  tag(out, field, kFixed64);
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>(v >> (8 * i)));
  }
}

// common.v1.KeyValue{key = 1, value = 2: AnyValue{string_value = 1 | int_value = 3}}
std::string key_value(const Attribute& a) {
  std::string value;
  if (a.is_int) {
    tag(value, 3, kVarint);
    varint(value, static_cast<uint64_t>(a.number));
  } else {
    text_field(value, 1, a.text);  // an empty string is still a value
  }
  std::string kv;
  string_field(kv, 1, a.key);
  message_field(kv, 2, value);
  return kv;
}

// trace.v1.Span (field numbers from opentelemetry/proto/trace/v1/trace.proto).
std::string span_message(const SpanData& s) {
  std::string m;
  bytes_field(m, 1, s.trace_id.data(), s.trace_id.size());
  bytes_field(m, 2, s.span_id.data(), s.span_id.size());
  string_field(m, 3, s.trace_state);
  SpanId none{};
  if (s.parent_span_id != none) {
    bytes_field(m, 4, s.parent_span_id.data(), s.parent_span_id.size());
  }
  string_field(m, 5, s.name);
  tag(m, 6, kVarint);
  varint(m, static_cast<uint64_t>(s.kind));
  fixed64_field(m, 7, s.start_unix_nanos);
  fixed64_field(m, 8, s.end_unix_nanos);
  for (const auto& a : s.attributes) {
    message_field(m, 9, key_value(a));
  }
  for (const auto& l : s.links) {  // Link{trace_id = 1, span_id = 2}
    std::string link;
    bytes_field(link, 1, l.trace_id.data(), l.trace_id.size());
    bytes_field(link, 2, l.span_id.data(), l.span_id.size());
    message_field(m, 13, link);
  }
  if (s.error) {  // Status{message = 2, code = 3: STATUS_CODE_ERROR = 2}
    std::string status;
    string_field(status, 2, s.status_message);
    tag(status, 3, kVarint);
    varint(status, 2);
    message_field(m, 15, status);
  }
  return m;
}

}  // namespace

std::string encode_export_request(const Resource& resource, const std::vector<SpanData>& spans) {
  std::string res;  // resource.v1.Resource{attributes = 1}
  for (const auto& a : resource.attributes) {
    message_field(res, 1, key_value(a));
  }
  std::string scope;  // common.v1.InstrumentationScope{name = 1}
  string_field(scope, 1, "idempay");
  std::string scope_spans;  // trace.v1.ScopeSpans{scope = 1, spans = 2}
  message_field(scope_spans, 1, scope);
  for (const auto& s : spans) {
    message_field(scope_spans, 2, span_message(s));
  }
  std::string resource_spans;  // trace.v1.ResourceSpans{resource = 1, scope_spans = 2}
  message_field(resource_spans, 1, res);
  message_field(resource_spans, 2, scope_spans);
  std::string request;  // collector.trace.v1.ExportTraceServiceRequest{resource_spans = 1}
  message_field(request, 1, resource_spans);
  return request;
}

}  // namespace idempay::tracing
