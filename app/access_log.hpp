#pragma once
// The access log (--access-log): one JSON line per answered request — time, request id,
// source, method, route template, paymentId, status, latency, merchant, and what the handler
// adds (operationRequestId, outcome) — never a body, a query string or a credential. Lines
// are buffered and written in batches by a thread of the log's own: an I/O thread never waits
// for the disk, and past 8 MiB waiting lines are dropped and counted instead.
#include <string>

#include "idempay/http/server.hpp"
#include "idempay/protocol/error.hpp"

namespace idempay::app {

/// "-" (stderr) or a file path (appended); kInvalidArgument if the file cannot be opened.
Result<http::AccessLog> make_access_log(const std::string& destination);

/// The route a path matches, with its ids as placeholders ("/payments/{paymentId}/refunds");
/// "unknown" for any other path, so that the log holds no caller-chosen text.
std::string route_template(std::string_view path);

/// Lines dropped because the log could not keep up, since the start.
size_t access_log_drops();

}  // namespace idempay::app
