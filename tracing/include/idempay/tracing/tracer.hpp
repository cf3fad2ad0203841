#pragma once
// Spans, and the bounded queue they wait in for the exporter. Tracing is off until configure()
// turns it on (the CLI's --otlp-endpoint): then a span is recorded when its trace is sampled —
// parent-based, a root by the configured ratio — and, once ended, handed to the queue without
// waiting. A full queue drops the span and counts it: no payment ever waits for a collector.
// Off, starting a span costs two random ids and records nothing; contexts still propagate.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/tracing/context.hpp"

namespace idempay::tracing {

/// OTLP's SpanKind.
enum class Kind : uint8_t { kInternal = 1, kServer = 2, kClient = 3, kProducer = 4, kConsumer = 5 };

struct Attribute {
  std::string key;
  std::string text;   ///< a string value (when !is_int)
  int64_t number = 0;
  bool is_int = false;
};

struct Link {
  TraceId trace_id{};
  SpanId span_id{};
};

/// An ended span, as exported.
struct SpanData {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  ///< all zeros: a root
  std::string trace_state;
  std::string name;
  Kind kind = Kind::kInternal;
  uint64_t start_unix_nanos = 0;
  uint64_t end_unix_nanos = 0;
  std::vector<Attribute> attributes;
  std::vector<Link> links;
  bool error = false;          ///< OTLP status ERROR (else UNSET)
  std::string status_message;  ///< with an error: its kind, never request data
};

/// A span in progress. Movable; ended by end() or when destroyed. A span that is not recorded
/// still has a context to hand on (propagation), and its setters do nothing.
class Span {
public:
  Span() = default;
  Span(Span&&) noexcept = default;
  Span& operator=(Span&& other) noexcept;
  ~Span();

  const TraceContext& context() const { return context_; }
  bool recording() const { return data_ != nullptr; }

  Span& rename(std::string name);
  Span& set(std::string key, std::string value);
  Span& set(std::string key, int64_t value);
  Span& link(const TraceContext& to);
  /// Marks the span failed; `kind` is a short fixed name (error.type), never request data.
  Span& fail(std::string kind);
  void end();

private:
  friend struct SpanAccess;
  TraceContext context_;
  std::unique_ptr<SpanData> data_;
};

/// A child of `parent` when it is valid (sampled as the parent is), else the root of a new trace
/// (sampled by the ratio).
Span start_span(std::string_view name, Kind kind, const TraceContext& parent = current());
/// A new trace's root, whatever the thread's current context; `sampled`: recorded whatever the
/// ratio (work done for sampled requests, linked to them), else sampled by the ratio.
Span start_root_span(std::string_view name, Kind kind, bool sampled = false);

struct TracerOptions {
  double sample_ratio = 1.0;     ///< roots sampled, 0..1; children follow their parent
  size_t queue_capacity = 8192;  ///< ended spans waiting for the exporter, at most
};

/// Turns recording on. Spans started before it are not recorded.
void configure(const TracerOptions& options);
/// Turns it off again (tests); spans already queued stay until taken.
void disable();
bool enabled();

/// Up to `max` ended spans: as soon as `max` wait, else what waits after `wait` (possibly none)
/// — a full batch per export, not one per span. At once after stop_waiting(). For the
/// exporter's own thread.
std::vector<SpanData> take(size_t max, std::chrono::milliseconds wait);
/// Wakes take() at once (the exporter stopping).
void stop_waiting();

struct Counters {
  uint64_t dropped_full = 0; ///< dropped because the queue was full
  size_t queued = 0;
};
Counters counters();

}  // namespace idempay::tracing
