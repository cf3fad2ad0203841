#pragma once
// OTLP's trace export request in protobuf (opentelemetry/proto/collector/trace/v1, the body of
// a POST to a collector's /v1/traces with Content-Type application/x-protobuf). Written by
// hand against the published .proto files: only the fields idempay sets, each a few bytes of
// wire format; the tests decode it with an OpenTelemetry implementation of their own.
#include <string>
#include <vector>

#include "idempay/tracing/tracer.hpp"

namespace idempay::tracing {

struct Resource {
  std::vector<Attribute> attributes;  ///< service.name, service.version, service.instance.id
};

/// ExportTraceServiceRequest{ResourceSpans{resource, ScopeSpans{scope "idempay", spans}}}.
std::string encode_export_request(const Resource& resource, const std::vector<SpanData>& spans);

}  // namespace idempay::tracing
