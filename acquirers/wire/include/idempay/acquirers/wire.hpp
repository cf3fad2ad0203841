#pragma once
// idempay's own acquirer protocol (docs/acquirer-protocol.md), JSON over HTTP: what the HTTP
// acquirer client sends and the stub server answers, and the outcome webhooks the stub sends.
//   POST /authorize                  AuthorizeCall      -> Authorization
//   POST /operations                 OperationCall      -> OperationOutcome
//   GET  /authorizations/{key}       -                  -> Authorization | 404
//   GET  /ledger                     -                  -> ledger JSON
#include <string>

#include "idempay/domain/acquirer.hpp"
#include "idempay/base/json_read.hpp"

namespace idempay::acquirer {

/// An outcome the acquirer reports by webhook ("authorization.updated"): the authorization
/// under `key` (the paymentId) as it stands now.
struct AuthorizationEvent {
  std::string key;
  Authorization authorization;
};

/// The webhook body, both ways: the stub writes it, the connector reads it once its signature
/// has been verified. kInvalidArgument for a body that is not such an event (unknown status,
/// no key, malformed or duplicated JSON members).
std::string encode_event(const AuthorizationEvent& event);
Result<AuthorizationEvent> decode_event(std::string_view body);

namespace wire {

std::string encode(const AuthorizeCall& call);
std::string encode(const OperationCall& call);
std::string encode(const Authorization& a);
std::string encode(const OperationOutcome& o);

Result<AuthorizeCall> decode_authorize_call(std::string_view json);
Result<OperationCall> decode_operation_call(std::string_view json);
Result<Authorization> decode_authorization(std::string_view json);
Result<OperationOutcome> decode_operation_outcome(std::string_view json);

}  // namespace wire
}  // namespace idempay::acquirer
