#pragma once

#include <memory>

#include "idempay/acquirer/acquirer.hpp"
#include "idempay/http/server.hpp"

namespace idempay::acquirer {

/// Serves a StubAcquirer over the stub's JSON/HTTP protocol (see wire.hpp), plus GET /ledger.
class StubHandler final : public http::Handler {
public:
  explicit StubHandler(StubAcquirer& stub) : stub_(stub) {}
  void handle(http::Request request, http::Responder respond) override;

private:
  StubAcquirer& stub_;
};

}  // namespace idempay::acquirer
