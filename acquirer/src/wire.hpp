#pragma once
// The stub's JSON/HTTP protocol, shared by the HTTP client and the stub server.
//   POST /authorize                  AuthorizeCall      -> Authorization
//   POST /operations                 OperationCall      -> OperationOutcome
//   GET  /authorizations/{key}       -                  -> Authorization | 404
//   GET  /ledger                     -                  -> ledger JSON
#include <string>

#include "idempay/acquirer/acquirer.hpp"
#include "idempay/protocol/json_read.hpp"

namespace idempay::acquirer::wire {

std::string encode(const AuthorizeCall& call);
std::string encode(const OperationCall& call);
std::string encode(const Authorization& a);
std::string encode(const OperationOutcome& o);

Result<AuthorizeCall> decode_authorize_call(std::string_view json);
Result<OperationCall> decode_operation_call(std::string_view json);
Result<Authorization> decode_authorization(std::string_view json);
Result<OperationOutcome> decode_operation_outcome(std::string_view json);

}  // namespace idempay::acquirer::wire
