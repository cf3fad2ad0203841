#include "idempay/observability/trace_export.hpp"

#include <future>

#include <spdlog/spdlog.h>

#include "idempay/http/client.hpp"
#include "idempay/tracing/otlp.hpp"

namespace idempay::observability {

struct TraceExporter::Impl {
  TraceExportOptions options;
  std::string url;
  tracing::Resource resource;
  http::Client client;
  std::atomic<bool> stopping{false};
  // Set before `stopping`: a stop waits one timeout at most, whatever batch was in flight.
  std::chrono::steady_clock::time_point stop_deadline;

  // One batch, posted and waited for (this thread's own wait: no I/O thread or actor waits).
  bool post(const std::vector<tracing::SpanData>& spans, std::chrono::milliseconds timeout) {
    http::OutboundRequest r;
    r.method = "POST";
    r.url = url;
    r.headers = {{"content-type", "application/x-protobuf"}};
    r.body = tracing::encode_export_request(resource, spans);
    r.connect_timeout = timeout;
    r.total_timeout = timeout;
    r.allow_private = true;  // the operator's collector, often on the same host
    std::promise<bool> answered;
    auto result = answered.get_future();
    client.send(std::move(r), [&answered](Result<http::ClientResponse> response) {
      answered.set_value(response && response->status >= 200 && response->status < 300);
    });
    return result.get();  // the client calls back exactly once, by its timeout at the latest
  }

  std::chrono::milliseconds time_left_to_stop() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(stop_deadline - std::chrono::steady_clock::now());
  }
};

namespace {

// OTLP/HTTP's rule: a base URL gets the signal's path; a URL with a path is used as it is.
Result<std::string> traces_url(const std::string& endpoint) {
  auto url = http::Url::parse(endpoint);
  if (!url) {
    return make_error(ErrorCode::kInvalidArgument, "--otlp-endpoint: " + url.error().message);
  }
  return url->target == "/" ? std::string(url->tls ? "https://" : "http://") + url->host_header() + "/v1/traces"
                            : endpoint;
}

}  // namespace

Result<std::unique_ptr<TraceExporter>> TraceExporter::start(const TraceExportOptions& options) {
  auto url = traces_url(options.endpoint);
  if (!url) {
    return tl::unexpected(url.error());
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->url = std::move(*url);
  impl->resource.attributes = {{"service.name", "idempay", 0, false},
                               {"service.version", options.service_version, 0, false},
                               {"service.instance.id", options.instance, 0, false}};
  tracing::configure(tracing::TracerOptions{options.sample_ratio, options.queue_spans});
  std::unique_ptr<TraceExporter> exporter(new TraceExporter(std::move(impl)));
  return exporter;
}

TraceExporter::TraceExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "otlp-export");
    bool warned = false;
    for (;;) {
      bool last = impl_->stopping.load();
      auto spans = tracing::take(impl_->options.batch_spans, std::chrono::seconds(1));
      auto timeout = last ? impl_->time_left_to_stop() : impl_->options.timeout;
      bool sent = true;
      if (!spans.empty()) {
        sent = timeout.count() > 0 && impl_->post(spans, timeout);
        if (sent) {
          exported_ += spans.size();
          warned = false;
        } else {
          failed_ += spans.size();
          if (!warned) {  // once per outage, not once per batch
            spdlog::warn("traces: the collector at {} did not take a batch of {} spans; they are dropped",
                         impl_->url, spans.size());
            warned = true;
          }
        }
      }
      if (last && (spans.empty() || !sent)) {
        return;  // stopping: what is queued gets one try, not a wait per batch
      }
    }
  });
}

TraceExporter::~TraceExporter() {
  tracing::disable();
  impl_->stop_deadline = std::chrono::steady_clock::now() + impl_->options.timeout;
  impl_->stopping = true;
  tracing::stop_waiting();
  thread_.join();
}

uint64_t TraceExporter::dropped() const { return failed_.load() + tracing::counters().dropped_full; }

}  // namespace idempay::observability
