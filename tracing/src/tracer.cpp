#include "idempay/tracing/tracer.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>

namespace idempay::tracing {

namespace {

uint64_t unix_nanos() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// The queue of ended spans between the threads that end them and the exporter's.
struct Queue {
  std::mutex mutex;
  std::condition_variable ready;
  std::vector<SpanData> spans;
  size_t capacity = 0;
  size_t wake_at = SIZE_MAX;  // take()'s batch: the exporter is woken once this many wait
  bool stopping = false;
  uint64_t dropped_full = 0;
};

Queue& queue() {
  static Queue q;
  return q;
}

std::atomic<bool> on{false};
// The root sampling threshold over a trace id's last 8 bytes: sampled when below it (the same
// decision for the same trace id, as OpenTelemetry's TraceIdRatioBased sampler makes it).
std::atomic<uint64_t> root_threshold{~uint64_t{0}};
std::atomic<bool> sample_all{true};

bool sample_root(const TraceId& id) {
  if (sample_all.load(std::memory_order_relaxed)) {
    return true;
  }
  uint64_t low = 0;
  for (size_t i = 8; i < 16; ++i) {
    low = low << 8 | id[i];
  }
  return low < root_threshold.load(std::memory_order_relaxed);
}

void hand_over(SpanData&& span) {
  auto& q = queue();
  std::lock_guard lock(q.mutex);
  if (q.spans.size() >= q.capacity) {
    ++q.dropped_full;
    return;
  }
  q.spans.push_back(std::move(span));
  if (q.spans.size() == q.wake_at) {
    q.ready.notify_one();
  }
}

}  // namespace

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    end();
    context_ = std::move(other.context_);
    data_ = std::move(other.data_);
  }
  return *this;
}

Span::~Span() { end(); }

Span& Span::rename(std::string name) {
  if (data_) {
    data_->name = std::move(name);
  }
  return *this;
}

Span& Span::set(std::string key, std::string value) {
  if (data_) {
    data_->attributes.push_back(Attribute{std::move(key), std::move(value), 0, false});
  }
  return *this;
}

Span& Span::set(std::string key, int64_t value) {
  if (data_) {
    data_->attributes.push_back(Attribute{std::move(key), {}, value, true});
  }
  return *this;
}

Span& Span::link(const TraceContext& to) {
  if (data_ && to.valid()) {
    data_->links.push_back(Link{to.trace_id, to.span_id});
  }
  return *this;
}

Span& Span::fail(std::string kind) {
  if (data_) {
    data_->error = true;
    data_->attributes.push_back(Attribute{"error.type", kind, 0, false});
    data_->status_message = std::move(kind);
  }
  return *this;
}

void Span::end() {
  if (!data_) {
    return;
  }
  data_->end_unix_nanos = unix_nanos();
  hand_over(std::move(*data_));
  data_.reset();
}

// What starts a span: the only code that fills a Span's context and data.
struct SpanAccess {
  static Span start(std::string_view name, Kind kind, const TraceContext& parent, bool force_sampled);
};

Span start_span(std::string_view name, Kind kind, const TraceContext& parent) {
  return SpanAccess::start(name, kind, parent, false);
}

Span start_root_span(std::string_view name, Kind kind, bool sampled) {
  return SpanAccess::start(name, kind, TraceContext{}, sampled);
}

// Off, or not sampled: two random ids and the context, nothing else (no name, no attributes).
Span SpanAccess::start(std::string_view name, Kind kind, const TraceContext& parent, bool force_sampled) {
  Span s;
  SpanId parent_id{};
  if (parent.valid()) {
    s.context_.trace_id = parent.trace_id;
    s.context_.sampled = parent.sampled;
    s.context_.trace_state = parent.trace_state;
    parent_id = parent.span_id;
  } else {
    s.context_.trace_id = new_trace_id();
    s.context_.sampled = on.load(std::memory_order_relaxed) && (force_sampled || sample_root(s.context_.trace_id));
  }
  s.context_.span_id = new_span_id();
  if (s.context_.sampled && on.load(std::memory_order_relaxed)) {
    s.data_ = std::make_unique<SpanData>();
    s.data_->trace_id = s.context_.trace_id;
    s.data_->span_id = s.context_.span_id;
    s.data_->parent_span_id = parent_id;
    s.data_->trace_state = s.context_.trace_state;
    s.data_->name = std::string(name);
    s.data_->kind = kind;
    s.data_->start_unix_nanos = unix_nanos();
  }
  return s;
}

void configure(const TracerOptions& options) {
  double ratio = std::clamp(options.sample_ratio, 0.0, 1.0);
  sample_all.store(ratio >= 1.0);
  // 2^64 itself is no uint64_t (converting it is undefined): a ratio of 1 is `sample_all`.
  root_threshold.store(ratio >= 1.0 ? UINT64_MAX : static_cast<uint64_t>(std::ldexp(ratio, 64)));
  {
    auto& q = queue();
    std::lock_guard lock(q.mutex);
    q.capacity = options.queue_capacity;
    q.stopping = false;
  }
  on.store(true);
}

void disable() { on.store(false); }
bool enabled() { return on.load(std::memory_order_relaxed); }

std::vector<SpanData> take(size_t max, std::chrono::milliseconds wait) {
  auto& q = queue();
  std::unique_lock lock(q.mutex);
  q.wake_at = max;
  q.ready.wait_for(lock, wait, [&q, max] { return q.spans.size() >= max || q.stopping; });
  q.wake_at = SIZE_MAX;
  std::vector<SpanData> out;
  if (q.spans.size() <= max) {
    out.swap(q.spans);
  } else {
    out.assign(std::make_move_iterator(q.spans.begin()), std::make_move_iterator(q.spans.begin() + max));
    q.spans.erase(q.spans.begin(), q.spans.begin() + max);
  }
  return out;
}

void stop_waiting() {
  auto& q = queue();
  std::lock_guard lock(q.mutex);
  q.stopping = true;
  q.ready.notify_all();
}

Counters counters() {
  auto& q = queue();
  std::lock_guard lock(q.mutex);
  return Counters{q.dropped_full, q.spans.size()};
}

}  // namespace idempay::tracing
