#include "idempay/metrics/metrics.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace idempay::metrics {

namespace {

using prometheus::Counter;
using prometheus::Histogram;

const Histogram::BucketBoundaries kLatency = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,  0.5,    1,     2.5,   5,     10};
const Histogram::BucketBoundaries kGroupSizes = {1, 2, 4, 8, 16, 32, 64, 128, 256};

struct Gauge {
  std::string name;
  std::string help;
  std::function<double()> read;
};

struct State {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<Counter>& requests = prometheus::BuildCounter()
      .Name("idempay_http_requests_total").Help("Requests answered, by route template and status").Register(*registry);
  prometheus::Family<Histogram>& request_seconds = prometheus::BuildHistogram()
      .Name("idempay_http_request_duration_seconds").Help("From the end of a request's headers to its answer")
      .Register(*registry);
  prometheus::Family<Counter>& auth_failures = prometheus::BuildCounter()
      .Name("idempay_auth_failures_total").Help("Wrong credentials presented, and requests refused as throttled")
      .Register(*registry);
  prometheus::Family<Counter>& events = prometheus::BuildCounter()
      .Name("idempay_payment_events_total")
      .Help("Payment events by audit-trail kind (event_processed, event_duplicate_reused, event_orphaned, ...)")
      .Register(*registry);
  prometheus::Family<Counter>& suppressed = prometheus::BuildCounter()
      .Name("idempay_event_log_suppressed_total").Help("Event log lines not written: repeats over their rate")
      .Register(*registry);
  prometheus::Family<Counter>& acquirer_calls = prometheus::BuildCounter()
      .Name("idempay_acquirer_calls_total").Help("Acquirer calls by operation and outcome").Register(*registry);
  prometheus::Family<Histogram>& acquirer_seconds = prometheus::BuildHistogram()
      .Name("idempay_acquirer_call_duration_seconds").Help("Acquirer call latency by operation").Register(*registry);
  prometheus::Family<Histogram>& group_sizes = prometheus::BuildHistogram()
      .Name("idempay_store_commit_group_batches").Help("Batches per store group commit (one sync each)")
      .Register(*registry);
  prometheus::Family<Histogram>& group_seconds = prometheus::BuildHistogram()
      .Name("idempay_store_commit_group_duration_seconds").Help("Time to make one group commit durable")
      .Register(*registry);
  prometheus::Family<Counter>& group_failures = prometheus::BuildCounter()
      .Name("idempay_store_commit_group_failures_total").Help("Group commits that failed (a full disk, a lost database)")
      .Register(*registry);
  prometheus::Family<Counter>& reconnections = prometheus::BuildCounter()
      .Name("idempay_store_reconnections_total").Help("The store's connections opened again, by result")
      .Register(*registry);
  prometheus::Family<Counter>& callbacks = prometheus::BuildCounter()
      .Name("idempay_callback_attempts_total").Help("Callback delivery attempts by result").Register(*registry);
  prometheus::Family<Counter>& webhooks = prometheus::BuildCounter()
      .Name("idempay_webhook_verifications_total").Help("Acquirer webhooks by verification result").Register(*registry);
  std::mutex gauges_mutex;
  std::vector<Gauge> gauges;
};

std::atomic<State*> state{nullptr};

// Since when the store has had no writable database (0: it has one), and the milliseconds
// of the stretches that ended.
std::atomic<int64_t> unwritable_since_ms{0};
std::atomic<int64_t> unwritable_ended_ms{0};

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One metric per label set, resolved once per thread: Family::Add locks and hashes.
template <class Metric, class Make>
Metric& cached(std::string_view key, Make make) {
  thread_local std::unordered_map<std::string, Metric*> cache;
  std::string k(key);
  auto found = cache.find(k);
  if (found != cache.end()) {
    return *found->second;
  }
  Metric& m = make();
  cache.emplace(std::move(k), &m);
  return m;
}

std::string joined(std::string_view a, std::string_view b = {}, std::string_view c = {}) {
  std::string out(a);
  out.append(1, '\x1f').append(b).append(1, '\x1f').append(c);
  return out;
}

// Collects the registry and the gauges read now.
class Everything final : public prometheus::Collectable {
public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    State* s = state.load();
    if (s == nullptr) {
      return {};
    }
    auto families = s->registry->Collect();
    std::vector<Gauge> gauges;
    {
      std::lock_guard lock(s->gauges_mutex);
      gauges = s->gauges;
    }
    for (const auto& g : gauges) {
      prometheus::MetricFamily f;
      f.name = g.name;
      f.help = g.help;
      f.type = prometheus::MetricType::Gauge;
      prometheus::ClientMetric m;
      m.gauge.value = g.read();
      f.metric.push_back(std::move(m));
      families.push_back(std::move(f));
    }
    return families;
  }
};

// A counter with one label, resolved once per thread, family and label value, and found
// again without building a key (payment events are counted on the actors' worker).
void increment(prometheus::Family<Counter>& family, std::string_view label, std::string_view value) {
  thread_local std::unordered_map<const void*, std::map<std::string, Counter*, std::less<>>> by_family;
  auto& counters = by_family[&family];
  auto found = counters.find(value);
  if (found == counters.end()) {
    found = counters.emplace(std::string(value), &family.Add({{std::string(label), std::string(value)}})).first;
  }
  found->second->Increment();
}

}  // namespace

void enable() {
  static State* made = [] {
    auto* s = new State();  // never freed: counters are read until the process ends
    s->gauges.push_back({"idempay_store_writable", "1 while the store's last group commit was made durable, else 0",
                         [] { return unwritable_since_ms.load() == 0 ? 1.0 : 0.0; }});
    s->gauges.push_back({"idempay_store_unwritable_seconds",
                         "Seconds without a writable database (a failover, a full disk), the current stretch included",
                         [] {
                           int64_t since = unwritable_since_ms.load();
                           int64_t ms = unwritable_ended_ms.load() + (since == 0 ? 0 : steady_ms() - since);
                           return static_cast<double>(ms) / 1000.0;
                         }});
    return s;
  }();
  state.store(made);
}

bool enabled() { return state.load(std::memory_order_relaxed) != nullptr; }

void observe_request(std::string_view route, unsigned status, double seconds) {
  State* s = state.load(std::memory_order_relaxed);
  if (s == nullptr) {
    return;
  }
  // Per thread and route: found by the route's text without building a key (every request).
  struct Route {
    Histogram* latency = nullptr;
    std::map<unsigned, Counter*> by_status;
  };
  thread_local std::map<std::string, Route, std::less<>> routes;
  auto found = routes.find(route);
  if (found == routes.end()) {
    found = routes.emplace(std::string(route), Route{}).first;
    found->second.latency = &s->request_seconds.Add({{"route", std::string(route)}}, kLatency);
  }
  Counter*& counter = found->second.by_status[status];
  if (counter == nullptr) {
    counter = &s->requests.Add({{"route", std::string(route)}, {"status", std::to_string(status)}});
  }
  counter->Increment();
  found->second.latency->Observe(seconds);
}

void count_auth_failure(bool throttled) {
  if (State* s = state.load(std::memory_order_relaxed)) {
    increment(s->auth_failures, "result", throttled ? "throttled" : "wrong");
  }
}

void count_event(std::string_view kind) {
  if (State* s = state.load(std::memory_order_relaxed)) {
    increment(s->events, "kind", kind);
  }
}

void count_event_log_suppressed(std::string_view kind) {
  if (State* s = state.load(std::memory_order_relaxed)) {
    increment(s->suppressed, "kind", kind);
  }
}

void observe_acquirer_call(std::string_view operation, std::string_view outcome, double seconds) {
  State* s = state.load(std::memory_order_relaxed);
  if (s == nullptr) {
    return;
  }
  cached<Counter>(joined("acq", operation, outcome), [&]() -> Counter& {
    return s->acquirer_calls.Add({{"operation", std::string(operation)}, {"outcome", std::string(outcome)}});
  }).Increment();
  cached<Histogram>(joined("acqlat", operation), [&]() -> Histogram& {
    return s->acquirer_seconds.Add({{"operation", std::string(operation)}}, kLatency);
  }).Observe(seconds);
}

void observe_commit_group(size_t batches, double seconds, bool ok) {
  State* s = state.load(std::memory_order_relaxed);
  if (s == nullptr) {
    return;
  }
  if (!ok) {
    cached<Counter>("group-failed", [&]() -> Counter& { return s->group_failures.Add({}); }).Increment();
    return;
  }
  cached<Histogram>("group-size", [&]() -> Histogram& { return s->group_sizes.Add({}, kGroupSizes); })
      .Observe(static_cast<double>(batches));
  cached<Histogram>("group-lat", [&]() -> Histogram& { return s->group_seconds.Add({}, kLatency); }).Observe(seconds);
}

void count_store_reconnection(bool ok) {
  if (State* s = state.load(std::memory_order_relaxed)) {
    increment(s->reconnections, "result", ok ? "ok" : "failed");
  }
}

void store_writable(bool ok, std::chrono::steady_clock::time_point failing_since) {
  int64_t since = unwritable_since_ms.load(std::memory_order_relaxed);
  if (!ok && since == 0) {
    int64_t at = std::chrono::duration_cast<std::chrono::milliseconds>(failing_since.time_since_epoch()).count();
    unwritable_since_ms.store(std::max<int64_t>(at, 1));
  } else if (ok && since != 0) {
    unwritable_ended_ms.fetch_add(steady_ms() - since);
    unwritable_since_ms.store(0);
  }
}

void count_callback_attempt(std::string_view result) {
  if (State* s = state.load(std::memory_order_relaxed)) {
    increment(s->callbacks, "result", result);
  }
}

void count_webhook(std::string_view result) {
  if (State* s = state.load(std::memory_order_relaxed)) {
    increment(s->webhooks, "result", result);
  }
}

void add_gauge(const std::string& name, const std::string& help, std::function<double()> read) {
  if (State* s = state.load()) {
    std::lock_guard lock(s->gauges_mutex);
    s->gauges.push_back(Gauge{name, help, std::move(read)});
  }
}

std::string exposition() { return prometheus::TextSerializer().Serialize(Everything().Collect()); }

struct Endpoint::Impl {
  std::shared_ptr<Everything> everything = std::make_shared<Everything>();
  prometheus::Exposer exposer;
  explicit Impl(const std::string& listen) : exposer(listen, 1) { exposer.RegisterCollectable(everything, "/metrics"); }
};

Endpoint::Endpoint(const std::string& listen) : impl_(std::make_unique<Impl>(listen)) {}
Endpoint::~Endpoint() = default;
int Endpoint::port() const {
  auto ports = impl_->exposer.GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace idempay::metrics
