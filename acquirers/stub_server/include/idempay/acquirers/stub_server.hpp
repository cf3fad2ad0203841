#pragma once

#include <memory>

#include "idempay/acquirers/stub.hpp"
#include "idempay/http/server.hpp"
#include "idempay/tracing/recent.hpp"

namespace idempay::acquirer {

/// Serves a StubAcquirer over the stub's JSON/HTTP protocol (see wire.hpp), plus GET /ledger and
/// GET /traceparents (the W3C traceparent each acquirer call came with, the latest 1,000).
/// With `api_keys`, the acquirer's own routes (authorize, operations, status) answer 401
/// unless `Authorization: Bearer KEY` names one of them, as a real acquirer checks its
/// merchants' credentials; /ledger and /trigger stay open for tests.
class StubHandler final : public http::Handler {
public:
  explicit StubHandler(StubAcquirer& stub, std::vector<std::string> api_keys = {})
      : stub_(stub), api_keys_(std::move(api_keys)) {}
  void handle(http::Request request, http::Responder respond) override;

private:
  bool authorized(const http::Request& request) const;

  StubAcquirer& stub_;
  std::vector<std::string> api_keys_;
  tracing::RecentTraceparents traceparents_;
};

}  // namespace idempay::acquirer
