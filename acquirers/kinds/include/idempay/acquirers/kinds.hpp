#pragma once
// Every acquirer kind the connector knows, as the merchants file names them: the composition
// root's list (app/, cli/), so that nothing below them needs to know any one kind.
#include <vector>

#include "idempay/acquirers/extension.hpp"

namespace idempay::acquirer {

/// stub, http, bcb-pix and adyen (docs/acquirers.md).
const std::vector<const Kind*>& acquirer_kinds();

}  // namespace idempay::acquirer
