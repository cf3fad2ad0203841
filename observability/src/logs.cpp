#include "idempay/observability/logs.hpp"

#include <chrono>
#include <ctime>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "idempay/metrics/metrics.hpp"
#include "idempay/tracing/context.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/visible_text.hpp"

namespace idempay::observability {

namespace {

// Lines are appended to a buffer under a mutex (no system call, no wake-up on the I/O
// thread) and written in batches by a thread of its own every 200 ms: spdlog's asynchronous
// logger woke its thread for every line and cost a quarter of the replay rate on 2 cores.
// Past 8 MiB waiting, lines are dropped and counted rather than blocking anyone.
class LineBatcher {
public:
  explicit LineBatcher(int fd) : fd_(fd), thread_([this] { run(); }) {}
  ~LineBatcher() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
    if (fd_ > 2) {
      ::close(fd_);
    }
  }
  void add(std::string_view line) {
    std::lock_guard lock(mutex_);
    if (pending_.size() + line.size() > kMaxPending) {
      drops_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    pending_.append(line).push_back('\n');
  }
  size_t drops() const { return drops_.load(std::memory_order_relaxed); }

private:
  static constexpr size_t kMaxPending = 8 << 20;
  void run() {
    std::string batch;
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; });
      batch.swap(pending_);
      bool last = stopping_;
      lock.unlock();
      for (size_t done = 0; done < batch.size();) {
        ssize_t n = ::write(fd_, batch.data() + done, batch.size() - done);
        if (n <= 0) {
          break;  // a failing log must not stop the service; its lines are lost
        }
        done += static_cast<size_t>(n);
      }
      batch.clear();
      if (last) {
        return;
      }
      lock.lock();
    }
  }
  int fd_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string pending_;
  bool stopping_ = false;
  std::atomic<size_t> drops_{0};
  std::thread thread_;
};

std::shared_ptr<LineBatcher> batcher;

Result<std::shared_ptr<LineBatcher>> open_batcher(const std::string& destination, std::string_view option) {
  int fd = destination == "-" ? STDERR_FILENO : ::open(destination.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) {
    return make_error(ErrorCode::kInvalidArgument, std::string(option) + " " + destination + ": " + std::strerror(errno));
  }
  return std::make_shared<LineBatcher>(fd);
}

struct RouteMatch {
  std::string_view route;       // a template, static
  std::string_view payment_id;  // from the path
};

// How many '/'-separated segments `path` has, or 0 when one of them is empty.
size_t nonempty_segments(std::string_view path) {
  size_t count = 0;
  for (;;) {
    size_t slash = path.find('/');
    if (slash == 0 || path.empty()) {
      return 0;
    }
    ++count;
    if (slash == std::string_view::npos) {
      return count;
    }
    path.remove_prefix(slash + 1);
  }
}

RouteMatch match(std::string_view path) {
  static constexpr std::string_view kStatic[] = {
      "/manifest", "/payment-methods", "/health", "/health/live", "/health/ready", "/payments",
      "/webhooks/acquirer", "/stub/trigger", "/authorization/token", "/authorization/redirect",
      "/authorization/credentials"};
  for (auto route : kStatic) {
    if (path == route) {
      return {route, {}};
    }
  }
  if (path.substr(0, 10) == "/admin/v1/") {
    return {"/admin/v1/*", {}};
  }
  if (path == "/admin" || path.substr(0, 7) == "/admin/") {
    return {"/admin/*", {}};
  }
  auto id_then = [&](std::string_view prefix) -> std::pair<std::string_view, std::string_view> {
    if (path.substr(0, prefix.size()) != prefix) {
      return {};
    }
    std::string_view rest = path.substr(prefix.size());
    auto slash = rest.find('/');
    return slash == std::string_view::npos ? std::make_pair(std::string_view(), std::string_view())
                                           : std::make_pair(rest.substr(0, slash), rest.substr(slash + 1));
  };
  // An acquirer kind's notifications: /webhooks/{kind}/{merchant}/{acquirer}, and that path with
  // one suffix (the kind's). Templates only: none of the caller's segments reaches a log line,
  // a metric's label or a span's name.
  if (path.substr(0, 10) == "/webhooks/") {
    std::string_view rest = path.substr(10);
    if (!rest.empty() && rest.back() == '/') {
      rest.remove_suffix(1);  // one trailing slash, as the router ignores it
    }
    switch (nonempty_segments(rest)) {
      case 3: return {"/webhooks/{kind}/{merchant}/{acquirer}", {}};
      case 4: return {"/webhooks/{kind}/{merchant}/{acquirer}/{suffix}", {}};
      default: return {"unknown", {}};
    }
  }
  auto [pos_id, pos_rest] = id_then("/pos/");
  if (!pos_id.empty() && pos_rest == "terminal") {
    return {"/pos/{paymentId}/terminal", pos_id};
  }
  auto [id, rest] = id_then("/payments/");
  if (id.empty()) {
    return {"unknown", {}};
  }
  static constexpr std::pair<std::string_view, std::string_view> kOperations[] = {
      {"cancellations", "/payments/{paymentId}/cancellations"},
      {"settlements", "/payments/{paymentId}/settlements"},
      {"refunds", "/payments/{paymentId}/refunds"}};
  for (auto [op, route] : kOperations) {
    if (rest == op) {
      return {route, id};
    }
  }
  if (rest.substr(0, 8) == "inbound/") {
    return {"/payments/{paymentId}/inbound/{action}", id};
  }
  if (rest.substr(0, 16) == "inbound-request/") {
    return {"/payments/{paymentId}/inbound-request/{action}", id};
  }
  return {"unknown", {}};
}

// ISO 8601 UTC with milliseconds into `out` (32 bytes); the date and time of day formatted
// once a second per thread.
std::string_view utc_now(char (&out)[32]) {
  auto now = std::chrono::system_clock::now();
  auto seconds = std::chrono::system_clock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  thread_local std::time_t formatted_second = -1;
  thread_local char prefix[24];
  if (seconds != formatted_second) {
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    std::strftime(prefix, sizeof prefix, "%Y-%m-%dT%H:%M:%S", &tm);
    formatted_second = seconds;
  }
  int n = std::snprintf(out, sizeof out, "%s.%03lldZ", prefix, static_cast<long long>(millis));
  return std::string_view(out, n > 0 ? static_cast<size_t>(n) : 0);
}

// Ids are logged only when they look like ids: a path segment is caller-chosen text.
std::string_view loggable_id(std::string_view id) {
  bool ok = !id.empty() && id.size() <= 128;
  for (char c : id) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-');
  }
  return ok ? id : std::string_view();
}

// A line built field by field into one buffer per thread: no allocation once it has grown.
class Line {
public:
  Line() : out_(buffer()) { out_.assign(1, '{'); }
  Line& field(std::string_view name, std::string_view value) {
    separate(name);
    append_json_string(out_, value);
    return *this;
  }
  Line& number(std::string_view name, std::string_view digits) {
    separate(name);
    out_ += digits;
    return *this;
  }
  std::string_view done() {
    out_ += '}';
    return out_;
  }

private:
  static std::string& buffer() {
    thread_local std::string line;
    return line;
  }
  void separate(std::string_view name) {
    if (out_.size() > 1) {
      out_ += ',';
    }
    append_json_string(out_, name);
    out_ += ':';
  }
  std::string& out_;
};

}  // namespace

std::string route_template(std::string_view path) { return std::string(match(path).route); }

size_t access_log_drops() { return batcher ? batcher->drops() : 0; }

Result<http::AccessLog> make_access_log(const std::string& destination) {
  auto opened = open_batcher(destination, "--access-log");
  if (!opened) {
    return tl::unexpected(opened.error());
  }
  batcher = std::move(*opened);
  return http::AccessLog([lines = batcher](const http::AccessRecord& r) {
    RouteMatch route = match(r.path);
    char time[32];
    char latency[32];
    std::snprintf(latency, sizeof latency, "%lld.%lld", static_cast<long long>(r.micros / 1000),
                  static_cast<long long>(r.micros % 1000 / 100));
    char status[8];
    std::snprintf(status, sizeof status, "%u", r.status);
    Line line;
    line.field("time", utc_now(time)).field("requestId", r.request_id);
    if (!r.trace_id.empty()) {
      line.field("traceId", r.trace_id);
    }
    line.field("source", r.source);
    line.field("method", r.method).field("route", route.route);
    if (std::string_view id = loggable_id(route.payment_id); !id.empty()) {
      line.field("paymentId", id);
    }
    line.number("status", status).number("latencyMs", latency);
    if (!r.principal.empty()) {
      line.field("merchant", r.principal);
    }
    for (const auto& [name, value] : *r.fields) {
      line.field(name, value);
    }
    lines->add(line.done());
  });
}

http::AccessLog observe_requests(http::AccessLog log, bool with_metrics) {
  if (!with_metrics && !tracing::enabled()) {
    return log;
  }
  return [log = std::move(log), with_metrics](const http::AccessRecord& r) {
    if (with_metrics) {
      metrics::observe_request(match(r.path).route, r.status, static_cast<double>(r.micros) / 1e6);
    }
    if (r.span && r.span->recording()) {  // named by its route, as the conventions ask
      RouteMatch route = match(r.path);
      r.span->rename(std::string(r.method) + " " + std::string(route.route)).set("http.route", std::string(route.route));
      if (std::string_view id = loggable_id(route.payment_id); !id.empty()) {
        r.span->set("idempay.payment_id", std::string(id));
      }
      if (!r.principal.empty()) {
        r.span->set("idempay.merchant", std::string(r.principal));
      }
    }
    if (log) {
      log(r);
    }
  };
}

namespace {

// Repeats of one kind: a token bucket, and how many lines it held back since the last one.
class RepeatLimiter {
public:
  // True if a line of `kind` may be written now; `suppressed` gets the count held back before it.
  bool admit(const std::string& kind, uint64_t& suppressed) {
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    Bucket& b = buckets_[kind];
    double elapsed = std::chrono::duration<double>(now - b.refilled).count();
    b.tokens = std::min(kRepeatLinesPerSecond, b.tokens + elapsed * kRepeatLinesPerSecond);
    b.refilled = now;
    if (b.tokens < 1) {
      ++b.suppressed;
      return false;
    }
    b.tokens -= 1;
    suppressed = std::exchange(b.suppressed, 0);
    return true;
  }

private:
  struct Bucket {
    double tokens = kRepeatLinesPerSecond;
    std::chrono::steady_clock::time_point refilled = std::chrono::steady_clock::now();
    uint64_t suppressed = 0;
  };
  std::mutex mutex_;
  std::map<std::string, Bucket> buckets_;  // a few kinds (domain::is_repeat)
};

}  // namespace

Result<EventLog> make_event_log(const std::string& destination) {
  auto opened = open_batcher(destination, "--event-log");
  if (!opened) {
    return tl::unexpected(opened.error());
  }
  auto limiter = std::make_shared<RepeatLimiter>();
  return EventLog([lines = std::move(*opened), limiter](const std::string& payment_id, const domain::AuditEntry& e) {
    uint64_t suppressed = 0;
    const std::string_view kind = domain::to_string(e.kind);
    if (domain::is_repeat(e.kind) && !limiter->admit(std::string(kind), suppressed)) {
      metrics::count_event_log_suppressed(kind);
      return;
    }
    std::string_view id = loggable_id(payment_id);
    char time[32];
    if (suppressed > 0) {
      JsonWriter w;
      w.begin_object().key("time").string(utc_now(time)).key("event").string("events_suppressed");
      w.key("kind").string(kind).key("count").number(static_cast<int64_t>(suppressed)).end_object();
      lines->add(std::move(w).take());
    }
    JsonWriter w(512);  // a line is a few hundred bytes
    w.begin_object().key("time").string(utc_now(time)).key("event").string(kind).key("paymentId").string(id);
    w.key("ref").string(loggable_id(e.ref));
    if (const auto& trace = tracing::current(); trace.valid()) {  // the actor's: the work it is doing
      w.key("traceId").string(trace.trace_id_hex());
    }
    if (!e.before.empty() || !e.after.empty()) {
      w.key("before").string(e.before).key("after").string(e.after);
    }
    if (!e.merchant.empty()) {
      w.key("actor").string(e.merchant);
    }
    if (!e.detail.empty() && e.kind != domain::AuditKind::kArrivalsCounted) {
      w.key("detail").string(e.detail.substr(0, 512));
    }
    w.end_object();
    // The detail and the actor may carry outside text (a PSP's reason, an operator's): the
    // JSON escapes its C0 controls, this the rest of what could drive a terminal.
    lines->add(terminal_safe_json(std::move(w).take()));
  });
}

}  // namespace idempay::observability
