#include "idempay/acquirer/stub_server.hpp"

#include "wire.hpp"

namespace idempay::acquirer {

namespace {
http::Response bad_request(const Error& e) {
  return http::Response(400, R"({"error":)" + std::string(e.code == ErrorCode::kInvalidArgument ? "\"invalid request\"" : "\"error\"") + "}");
}
}  // namespace

void StubHandler::handle(http::Request request, http::Responder respond) {
  const std::string& path = request.path;
  if (request.method == "GET" && path == "/ledger") {
    return respond(http::Response(200, stub_.ledger_json()));
  }
  if (request.method == "POST" && path == "/authorize") {
    auto call = wire::decode_authorize_call(request.body);
    if (!call) {
      return respond(bad_request(call.error()));
    }
    return stub_.authorize(std::move(*call), [respond](Result<Authorization> r) {
      respond(r ? http::Response(200, wire::encode(*r)) : http::Response(503, "{}"));
    });
  }
  if (request.method == "POST" && path == "/operations") {
    auto call = wire::decode_operation_call(request.body);
    if (!call) {
      return respond(bad_request(call.error()));
    }
    return stub_.operate(std::move(*call), [respond](Result<OperationOutcome> r) {
      respond(r ? http::Response(200, wire::encode(*r)) : http::Response(503, "{}"));
    });
  }
  constexpr std::string_view kStatusPrefix = "/authorizations/";
  if (request.method == "GET" && path.rfind(kStatusPrefix, 0) == 0) {
    return stub_.status(path.substr(kStatusPrefix.size()),
                        [respond](Result<std::optional<Authorization>> r) {
                          if (!r) return respond(http::Response(503, "{}"));
                          if (!*r) return respond(http::Response(404, R"({"error":"unknown key"})"));
                          respond(http::Response(200, wire::encode(**r)));
                        });
  }
  respond(http::Response(404, R"({"error":"no such route"})"));
}

}  // namespace idempay::acquirer
