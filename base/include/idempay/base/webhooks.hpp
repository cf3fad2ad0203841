#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"

namespace idempay::webhooks {

/// Standard Webhooks (v1, symmetric): signature = "v1," + base64(HMAC-SHA256(secret,
/// "{id}.{timestamp}.{body}")), secrets shown as "whsec_" + base64 of 24–64 random bytes.

/// The raw key bytes of a "whsec_..." secret; kInvalidArgument if malformed or too short.
Result<std::string> decode_secret(std::string_view whsec);

/// A new random secret in "whsec_..." form (32 bytes).
std::string generate_secret();

/// The `webhook-signature` value for one secret: "v1,<base64>".
std::string sign(std::string_view key, std::string_view id, int64_t timestamp, std::string_view body);

/// Verifies the three headers over the raw body. Accepts if any space-separated "v1,"
/// signature matches any of `keys` (rotation), compared in constant time, and the timestamp
/// is within `tolerance_seconds` of `now`. kUnauthenticated otherwise, with no detail.
Status verify(const std::vector<std::string>& keys, std::string_view id, std::string_view timestamp,
              std::string_view signatures, std::string_view body, int64_t now,
              int64_t tolerance_seconds = 300);

std::string base64_encode(std::string_view bytes);
Result<std::string> base64_decode(std::string_view text);

}  // namespace idempay::webhooks
