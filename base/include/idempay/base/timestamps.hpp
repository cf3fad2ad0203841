#pragma once
// RFC 3339 timestamps, as JSON APIs write them ("2020-09-09T20:15:00.358Z", or with an offset
// such as "-03:00"), to and from Unix time in milliseconds.
#include <cstdint>
#include <string>
#include <string_view>

#include "idempay/base/error.hpp"

namespace idempay {

/// "YYYY-MM-DDTHH:MM:SS.mmmZ" in UTC.
std::string format_rfc3339(int64_t unix_ms);

/// Unix milliseconds of an RFC 3339 date-time (any fraction, `Z` or an offset; `t`/`z` and a
/// space for `T` too); kInvalidArgument for anything else.
Result<int64_t> parse_rfc3339(std::string_view text);

}  // namespace idempay
