#include "pix_notifications.hpp"

#include <atomic>
#include <memory>
#include <map>

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

Result<std::vector<PixHint>> read_pix_notification(std::string_view body) {
  auto doc = JsonValue::parse(body);
  const JsonValue* list = doc ? doc->find("pix") : nullptr;
  if (list == nullptr || list->type() != JsonValue::Type::kArray) {
    return make_error(ErrorCode::kInvalidArgument, "a Pix notification is {\"pix\": [ ... ]}");
  }
  std::map<std::string, size_t> seen;
  std::vector<PixHint> hints;
  for (const JsonValue& pix : list->items()) {
    if (pix.type() != JsonValue::Type::kObject) {
      return make_error(ErrorCode::kInvalidArgument, "each Pix of a notification is an object");
    }
    std::string txid = pix.string_or("txid");
    if (!is_txid(txid)) {
      continue;  // no txid (not a charge's) or a malformed one
    }
    const JsonValue* returned = pix.find("devolucoes");
    bool devolucoes =
        returned != nullptr && returned->type() == JsonValue::Type::kArray && !returned->items().empty();
    if (auto named = seen.find(txid); named != seen.end()) {
      hints[named->second].devolucoes |= devolucoes;  // named twice: one hint
      continue;
    }
    if (hints.size() == kMaxHintsPerNotification) {
      return make_error(ErrorCode::kInvalidArgument, "a notification may name at most 100 charges");
    }
    seen.emplace(txid, hints.size());
    hints.push_back(PixHint{std::move(txid), devolucoes});
  }
  return hints;
}

void confirm_pix_notification(actors::PaymentService& service, const std::string& merchant,
                              std::vector<PixHint> hints, const http::Responder& respond) {
  if (hints.empty()) {
    return respond(http::Response(200, R"({"status":"received"})"));
  }
  auto tally = std::make_shared<Tally>(hints.size(), respond);
  for (auto& hint : hints) {
    std::string reference = acquirer::pix_reference(hint.txid);
    if (hint.devolucoes) {
      service.resume_refunds_by_reference(reference, merchant);
    }
    service.hint_by_reference(std::move(reference), merchant,
                              [tally](actors::Reply reply) { tally->add(reply); });
  }
}

}  // namespace idempay::ppp
