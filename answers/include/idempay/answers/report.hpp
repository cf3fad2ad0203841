#pragma once
// The operator's view of one payment as a JSON document (`idempay inspect --json`, the operator
// API's GET /admin/v1/payments/{id}; its schema: docs/operator-api.json).
#include <string>

#include "idempay/domain/inspection.hpp"

namespace idempay::answers {

/// The report as one JSON document: what `GET /admin/v1/payments/{id}` answers and
/// `idempay inspect --json` prints (docs/operator-api.json, PaymentDetail). Amounts are decimals.
std::string payment_report_json(const domain::PaymentReport& report);

/// A receipt as the operator API answers it and `idempay receipt --json` prints it: the compact
/// JWS, the id of the key that signed it, and its claims (`claims_json`: the JWS's payload) to
/// read without decoding (docs/operator-api.json, Receipt).
std::string receipt_json(std::string_view jws, std::string_view kid, std::string_view claims_json);

}  // namespace idempay::answers
