#pragma once
// Sends the spans idempay records to an OpenTelemetry collector over OTLP/HTTP (protobuf), from
// a thread of its own: it takes up to a batch of ended spans from tracing's bounded queue, posts
// them, and waits for the answer before the next batch, so a slow or absent collector only
// fills the queue — and a full queue drops spans (counted), never a payment's time.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "idempay/base/error.hpp"

namespace idempay::observability {

struct TraceExportOptions {
  /// The collector's URL: http(s)://host:port — spans go to its /v1/traces — or a full URL
  /// with a path of its own, used as it is.
  std::string endpoint;
  double sample_ratio = 1.0;            ///< of new traces; a continued trace follows its parent
  size_t queue_spans = 8192;            ///< ended spans waiting, at most; more are dropped
  size_t batch_spans = 512;             ///< spans per request, at most
  std::chrono::milliseconds timeout{5'000};  ///< per export request
  std::string service_version;
  std::string instance;                 ///< service.instance.id
};

class TraceExporter {
public:
  /// Turns tracing on and starts the thread; kInvalidArgument for a URL that is not one.
  static Result<std::unique_ptr<TraceExporter>> start(const TraceExportOptions& options);
  /// Stops recording, sends what is queued (one try) and stops the thread: within one
  /// timeout, counted from the call, even if a batch was in flight to a silent collector.
  ~TraceExporter();

  uint64_t exported() const { return exported_.load(); }
  /// Spans lost: the queue was full, or the collector refused or never answered their batch.
  uint64_t dropped() const;

  struct Impl;

private:
  explicit TraceExporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<uint64_t> exported_{0};
  std::atomic<uint64_t> failed_{0};
  std::thread thread_;
};

}  // namespace idempay::observability
