#pragma once
// The process's metrics in the Prometheus text format, kept with prometheus-cpp's core
// library. Every call is a no-op until enable() has run (tools, unit tests and the stub never
// call it), so that no layer needs to know whether metrics are on; after it, a call is a
// thread-local lookup and an atomic add. Label values come from small fixed sets the caller
// chooses (route templates, outcome names, audit kinds), never from request data.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace idempay::metrics {

void enable();
bool enabled();

/// For durations: seconds since `start`, as histograms take them.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// A request answered: idempay_http_requests_total{route,status} and
/// idempay_http_request_duration_seconds{route}.
void observe_request(std::string_view route, unsigned status, double seconds);
/// Wrong credentials (`throttled`: the source was throttled by them, or is): idempay_auth_failures_total{result}.
void count_auth_failure(bool throttled);
/// A payment event in the audit trail's vocabulary: idempay_payment_events_total{kind}.
void count_event(std::string_view kind);
/// An event line not written because repeats of its kind were over their rate.
void count_event_log_suppressed(std::string_view kind);
/// An acquirer call: idempay_acquirer_calls_total{operation,outcome} and its duration.
void observe_acquirer_call(std::string_view operation, std::string_view outcome, double seconds);
/// A store group commit: its size in batches and the time to make it durable.
void observe_commit_group(size_t batches, double seconds, bool ok);
/// The store opened its connection to the database again (`ok`: it got one):
/// idempay_store_reconnections_total{result}.
void count_store_reconnection(bool ok);
/// Whether the store's last group commit was made durable. From the start of the first group
/// that failed (or whose answer was lost) to the next success the store counts as without a
/// writable database: idempay_store_writable (1 or 0) and idempay_store_unwritable_seconds
/// (every such stretch added up, the current one included), read when scraped. `since`: when
/// the failing group started — a COMMIT left hanging by a dead primary is time without one.
void store_writable(bool ok, std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now());
/// A callback attempt's result (delivered, retry, dead, refused).
void count_callback_attempt(std::string_view result);
/// An acquirer webhook's verification result (valid, bad-signature, stale, malformed, ...).
void count_webhook(std::string_view result);

/// A gauge read when scraped: `read` runs on the scraping thread (never an I/O thread or an
/// actor worker) and may block briefly.
void add_gauge(const std::string& name, const std::string& help, std::function<double()> read);

/// Everything above in the Prometheus text exposition format.
std::string exposition();

/// Serves exposition() at GET /metrics on its own listener and threads (prometheus-cpp's
/// civetweb exposer), so that a scrape never touches the service's I/O threads.
class Endpoint {
public:
  /// "HOST:PORT"; port 0 picks a free one. Throws std::runtime_error if it cannot listen.
  explicit Endpoint(const std::string& listen);
  ~Endpoint();
  int port() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idempay::metrics
