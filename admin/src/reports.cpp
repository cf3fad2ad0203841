#include "reports.hpp"

#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/money.hpp"

namespace idempay::admin {

namespace {

constexpr size_t kScanChunk = 500;

void amounts(JsonWriter& w, Cents authorized, Cents settled, Cents refunded) {
  w.key("authorized").raw_number(format_amount(authorized));
  w.key("settled").raw_number(format_amount(settled));
  w.key("refunded").raw_number(format_amount(refunded));
}

}  // namespace

Result<PaymentsPage> search_payments(storage::Store& store, const SearchFilter& filter, const std::string& after,
                                     const std::function<bool(const std::string& owner)>& visible) {
  PaymentsPage page;
  std::string from = after;
  size_t read = 0;
  while (page.payments.size() < filter.limit && read < filter.scan_budget) {
    auto chunk = store.scan_after(domain::Space::kPayments, from, std::min(kScanChunk, filter.scan_budget - read));
    if (!chunk) {
      return tl::unexpected(chunk.error());
    }
    if (chunk->empty()) {
      return page;  // the end: no cursor
    }
    for (const auto& [key, versioned] : *chunk) {
      ++read;
      from = key;
      auto r = domain::decode_payment(versioned.value);
      if (!r || !visible(r->owner) || (!filter.state.empty() && filter.state != to_string(r->state))) {
        continue;
      }
      if (!filter.merchant.empty() && filter.merchant != r->owner) {
        continue;
      }
      page.payments.push_back(PaymentSummary{key, r->owner, std::string(to_string(r->state)), r->payment_method,
                                             r->currency, r->amounts.authorized, r->amounts.settled,
                                             r->amounts.refunded, r->created_at, r->updated_at});
      if (page.payments.size() == filter.limit) {
        break;
      }
    }
  }
  page.next_after = from;
  return page;
}

std::string payments_page_json(const PaymentsPage& page, const std::function<std::string(const std::string&)>& owner_of,
                               const std::string& next_cursor) {
  JsonWriter w;
  w.begin_object().key("payments").begin_array();
  for (const auto& p : page.payments) {
    w.begin_object().key("paymentId").string(p.payment_id).key("merchant").string(owner_of(p.owner));
    w.key("state").string(p.state).key("paymentMethod").string(p.payment_method).key("currency").string(p.currency);
    amounts(w, p.authorized, p.settled, p.refunded);
    w.key("createdAt").number(p.created_at).key("updatedAt").number(p.updated_at).end_object();
  }
  w.end_array().key("nextCursor");
  if (next_cursor.empty()) {
    w.null();
  } else {
    w.string(next_cursor);
  }
  w.end_object();
  return std::move(w).take();
}

std::string operator_json(const std::string& name, const OperatorScope& scope) {
  JsonWriter w;
  w.begin_object().key("name").string(name).key("role").string(scope.can_act ? "act" : "read");
  w.key("merchants").begin_array();
  if (scope.all_merchants) {
    w.string("*");
  }
  for (const auto& m : scope.merchants) {
    w.string(m);
  }
  w.end_array().end_object();
  return std::move(w).take();
}

}  // namespace idempay::admin
