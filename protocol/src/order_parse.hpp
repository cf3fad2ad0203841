#pragma once
// The order data and split recipients of PPP requests (docs/ppp-surface.md#order-data, #split-payments).
// Internal to protocol/.
#include <optional>
#include <string_view>
#include <vector>

#include "idempay/protocol/ppp.hpp"
#include "parse_fields.hpp"

namespace idempay::ppp::parse {

/// Reads a Create Payment member that belongs to the order (installment terms, device,
/// miniCart, merchantSettings, totalCartValue) into `order`; nullopt if `key` is not one.
std::optional<Status> read_order_member(std::string_view key, od::value v, OrderData& order);

/// Reads `recipients` (an array of at most 100).
Status read_recipients(od::value v, std::vector<Recipient>& out);

}  // namespace idempay::ppp::parse
