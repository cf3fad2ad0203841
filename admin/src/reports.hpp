#pragma once
// What the operator API reads and how it writes it: payment search pages and payment details
// (never card data: the stored summary's BIN and last four digits only).
#include <functional>
#include <string>
#include <vector>

#include "idempay/admin/operator_api.hpp"
#include "idempay/domain/inspection.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::admin {

struct SearchFilter {
  std::string merchant;  ///< empty: any the operator sees
  std::string state;     ///< empty: any
  size_t limit = 50;     ///< matches per page
  size_t scan_budget = 5'000;  ///< records read at most per page
};

struct PaymentSummary {
  std::string payment_id;
  std::string owner;
  std::string state;
  std::string payment_method;
  std::string currency;
  Cents authorized = 0;
  Cents settled = 0;
  Cents refunded = 0;
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

struct PaymentsPage {
  std::vector<PaymentSummary> payments;
  std::string next_after;  ///< the last key read; empty: the end was reached
};

/// Payments after key `after` that match `filter` and that `visible` (given a stored owner)
/// allows, in paymentId order. Blocking: for a store reader thread.
Result<PaymentsPage> search_payments(storage::Store& store, const SearchFilter& filter, const std::string& after,
                                     const std::function<bool(const std::string& owner)>& visible);

/// A search page, `next_cursor` as its nextCursor (empty: null, the end).
std::string payments_page_json(const PaymentsPage& page, const std::function<std::string(const std::string&)>& owner_of,
                               const std::string& next_cursor);
std::string operator_json(const std::string& name, const OperatorScope& scope);

}  // namespace idempay::admin
