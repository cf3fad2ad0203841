#include "idempay/acquirers/stub_server.hpp"

#include <algorithm>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/acquirers/wire.hpp"

namespace idempay::acquirer {

namespace {
http::Response bad_request(const Error& e) {
  JsonWriter w;
  w.begin_object().key("error").string(e.message).end_object();
  return http::Response(400, std::move(w).take());
}
}  // namespace

bool StubHandler::authorized(const http::Request& request) const {
  if (api_keys_.empty()) {
    return true;
  }
  std::string_view presented = request.header("authorization");
  return std::any_of(api_keys_.begin(), api_keys_.end(),
                     [presented](const std::string& key) { return presented == "Bearer " + key; });
}

void StubHandler::handle(http::Request request, http::Responder respond) {
  const std::string& path = request.path;
  if (request.method == "GET" && path == "/ledger") {
    return respond(http::Response(200, stub_.ledger_json()));
  }
  if (request.method == "GET" && path == "/traceparents") {
    JsonWriter w;
    traceparents_.write(w);
    return respond(http::Response(200, std::move(w).take()));
  }
  bool acquirer_route = path == "/authorize" || path == "/operations" || path.rfind("/authorizations/", 0) == 0;
  if (acquirer_route && !authorized(request)) {
    return respond(http::Response(401, R"({"error":"missing or unknown API key"})"));
  }
  if (acquirer_route) {
    traceparents_.note(request.method + " " + path, request.header("traceparent"));
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
  if (request.method == "POST" && path == "/trigger") {
    auto doc = JsonValue::parse(request.body);
    std::string key = doc ? doc->string_or("paymentId") : "";
    std::string outcome = doc ? doc->string_or("outcome") : "";
    TriggerOutcome o = outcome == "deny" ? TriggerOutcome::kDeny
                       : outcome == "expire" ? TriggerOutcome::kExpire : TriggerOutcome::kApprove;
    if (key.empty() || (outcome != "approve" && outcome != "deny" && outcome != "expire")) {
      return respond(http::Response(400, R"({"error":"need paymentId and outcome approve|deny|expire"})"));
    }
    bool done = stub_.trigger(key, o);
    return respond(done ? http::Response(200, R"({"triggered":true})")
                        : http::Response(409, R"({"error":"unknown or not pending"})"));
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
