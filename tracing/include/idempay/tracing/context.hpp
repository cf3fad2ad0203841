#pragma once
// W3C Trace Context (Level 1): the `traceparent` and `tracestate` headers, read strictly and
// written back, and the context a thread is working for. A request's context is set on the
// thread that handles it (Scope) and carried by value wherever its work continues (an actor's
// command, an outbox entry), so that every outbound call it causes names the same trace.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idempay::tracing {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

struct TraceContext {
  TraceId trace_id{};
  SpanId span_id{};   ///< the span this context names (the parent of what it starts)
  bool sampled = false;
  std::string trace_state;  ///< a valid `tracestate` as received, or empty

  /// Neither id is all zeros (the specification's invalid values): a context to continue.
  bool valid() const;
  /// "00-<trace id>-<span id>-<flags>"; empty for an invalid context.
  std::string traceparent() const;
  std::string trace_id_hex() const;
  std::string span_id_hex() const;
};

/// A `traceparent` header's context, or nothing when it is malformed: wrong length or case,
/// a version of "ff", all-zero ids, or for version 00 anything after the flags. Later versions
/// are read by their first four fields, as the specification says.
std::optional<TraceContext> parse_traceparent(std::string_view header);

/// `header` if it is a valid `tracestate` (at most 32 list members of the specification's
/// keys and values, at most 512 characters); otherwise empty. What is kept can be written into
/// a header as it is: it holds no control character, comma or equals sign out of place.
std::string valid_tracestate(std::string_view header);

/// Fresh random ids, never all zeros.
TraceId new_trace_id();
SpanId new_span_id();

std::string to_hex(const uint8_t* bytes, size_t size);

/// The context the calling thread works for; invalid when none.
const TraceContext& current();

/// Makes `context` the calling thread's current one until the scope ends (nested scopes
/// restore the one before).
class Scope {
public:
  explicit Scope(TraceContext context);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

private:
  TraceContext previous_;
};

}  // namespace idempay::tracing
