#pragma once
// The operator's view of one payment as a JSON document (`idempay inspect --json`, the operator
// API's GET /admin/v1/payments/{id}; its schema: docs/operator-api.json).
#include <string>

#include "idempay/domain/inspection.hpp"

namespace idempay::answers {

/// The report as one JSON document: what `GET /admin/v1/payments/{id}` answers and
/// `idempay inspect --json` prints (docs/operator-api.json, PaymentDetail). Amounts are decimals.
std::string payment_report_json(const domain::PaymentReport& report);

}  // namespace idempay::answers
