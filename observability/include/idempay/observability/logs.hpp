#pragma once
// The access log (--access-log): one JSON line per answered request — time, request id,
// source, method, route template, paymentId, status, latency, merchant, and what the handler
// adds (operationRequestId, outcome) — never a body, a query string or a credential. Lines
// are buffered and written in batches by a thread of the log's own: an I/O thread never waits
// for the disk, and past 8 MiB waiting lines are dropped and counted instead.
#include <string>

#include "idempay/domain/audit.hpp"
#include "idempay/http/server.hpp"
#include "idempay/base/error.hpp"

namespace idempay::observability {

/// "-" (stderr) or a file path (appended); kInvalidArgument if the file cannot be opened.
Result<http::AccessLog> make_access_log(const std::string& destination);

/// The route a path matches, with its ids as placeholders ("/payments/{paymentId}/refunds");
/// "unknown" for any other path, so that the log holds no caller-chosen text.
std::string route_template(std::string_view path);

/// Lines dropped because the log could not keep up, since the start.
size_t access_log_drops();

/// The event log (--event-log): one JSON line per payment event, in the audit trail's
/// vocabulary (event_received, event_processed, event_duplicate_reused, operation_processed,
/// delivery_written, callback_notified, ...) with the paymentId, the entry's ref, the state
/// before and after and who acted. Written like the access log (never blocking the actor that
/// records the event). Repeats (duplicates and refusals) are limited to kRepeatLinesPerSecond
/// per kind; the rest are counted (idempay_event_log_suppressed_total) and summed up in one
/// `events_suppressed` line when the kind's lines resume.
using EventLog = std::function<void(const std::string& payment_id, const domain::AuditEntry& event)>;
inline constexpr double kRepeatLinesPerSecond = 50;
Result<EventLog> make_event_log(const std::string& destination);

/// The access log and the request metrics together: either may be off.
http::AccessLog observe_requests(http::AccessLog log, bool metrics);

}  // namespace idempay::observability
