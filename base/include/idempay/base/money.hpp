#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idempay/base/error.hpp"

namespace idempay {

/// An amount in hundredths of the currency unit (PPP sends decimals such as `31.9`).
/// Integer arithmetic only: floating point never touches money.
using Cents = int64_t;

/// Largest accepted amount: 10^13 units, far above any card payment, far below overflow.
inline constexpr Cents kMaxCents = 1'000'000'000'000'000;

/// Parses a decimal amount exactly from its text (`31.9`, `2300`, `0.05`, `1e2`, or the
/// comma-decimal `29,90` some guides send). More than two significant fractional digits,
/// negatives, and amounts above kMaxCents are kInvalidArgument.
Result<Cents> parse_decimal_amount(std::string_view text);

/// Formats as a JSON number with no trailing zeros: 3190 -> `31.9`, 100 -> `1`, 5 -> `0.05`.
std::string format_amount(Cents cents);

/// Formats with exactly two decimals, as amounts are printed and signed: 3190 -> `31.90`,
/// 100 -> `1.00`, 5 -> `0.05`.
std::string format_amount_fixed(Cents cents);

}  // namespace idempay
