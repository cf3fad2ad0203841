#pragma once

#include <string_view>

#include "idempay/http/server.hpp"

namespace idempay::http {

/// An RFC 7807 answer (application/problem+json): for routes outside the PPP, whose errors
/// have the protocol's own shape.
Response problem(unsigned status, std::string_view title, std::string_view detail);

}  // namespace idempay::http
