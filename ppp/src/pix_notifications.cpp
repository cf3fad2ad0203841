#include "pix_notifications.hpp"

#include <atomic>
#include <memory>
#include <set>

#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/http/problem.hpp"

namespace idempay::ppp {

namespace {

bool is_txid(std::string_view s) {
  return !s.empty() && s.size() <= 35 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

// What every txid of one notification came to.
struct Tally {
  Tally(size_t n, http::Responder r) : left(n), respond(std::move(r)) {}
  std::atomic<size_t> left;
  std::atomic<size_t> unconfirmed{0};
  http::Responder respond;

  void add(const actors::Reply& reply) {
    bool settled = reply.outcome == actors::Outcome::kNotFound;  // not one of ours: nothing to do
    if (reply.outcome == actors::Outcome::kDone) {
      auto answer = JsonValue::parse(reply.body);
      settled = answer && answer->string_or("status") != "undefined";
    }
    if (!settled) {
      ++unconfirmed;
    }
    if (--left == 0) {
      finish();
    }
  }

  void finish() {
    if (unconfirmed > 0) {
      auto r = http::problem(503, "Service Unavailable",
                             "not every charge could be confirmed with the PSP yet; send the notification again");
      r.headers.push_back({"retry-after", "30"});
      return respond(std::move(r));
    }
    respond(http::Response(200, R"({"status":"received"})"));
  }
};

}  // namespace

Result<std::vector<std::string>> read_pix_notification(std::string_view body) {
  auto doc = JsonValue::parse(body);
  const JsonValue* list = doc ? doc->find("pix") : nullptr;
  if (list == nullptr || list->type() != JsonValue::Type::kArray) {
    return make_error(ErrorCode::kInvalidArgument, "a Pix notification is {\"pix\": [ ... ]}");
  }
  std::set<std::string> seen;
  std::vector<std::string> txids;
  for (const JsonValue& pix : list->items()) {
    if (pix.type() != JsonValue::Type::kObject) {
      return make_error(ErrorCode::kInvalidArgument, "each Pix of a notification is an object");
    }
    std::string txid = pix.string_or("txid");
    if (!is_txid(txid) || !seen.insert(txid).second) {
      continue;  // no txid (not a charge's), a malformed one, or named twice
    }
    if (txids.size() == kMaxHintsPerNotification) {
      return make_error(ErrorCode::kInvalidArgument, "a notification may name at most 100 charges");
    }
    txids.push_back(std::move(txid));
  }
  return txids;
}

void confirm_pix_notification(actors::PaymentService& service, const std::string& merchant,
                              std::vector<std::string> txids, const http::Responder& respond) {
  if (txids.empty()) {
    return respond(http::Response(200, R"({"status":"received"})"));
  }
  auto tally = std::make_shared<Tally>(txids.size(), respond);
  for (auto& txid : txids) {
    service.hint_by_reference(acquirer::pix_reference(txid), merchant,
                                 [tally](actors::Reply reply) { tally->add(reply); });
  }
}

}  // namespace idempay::ppp
