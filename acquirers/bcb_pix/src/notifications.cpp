// An API Pix PSP's notifications (POST {webhookUrl}/pix, body {"pix": [{txid, endToEndId,
// valor, horario, devolucoes?}]}). The document protects them only with mutual TLS, so each is
// a hint: the payment a txid names is asked of the PSP itself (GET /cob/{txid}), and nothing
// in the body — amount, status — is believed.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>

#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/http/problem.hpp"
#include "idempay/metrics/metrics.hpp"

namespace idempay::acquirer {

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

  void add(const domain::Reply& reply) {
    bool settled = reply.outcome == domain::Outcome::kNotFound;  // not one of ours: nothing to do
    if (reply.outcome == domain::Outcome::kDone) {
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

namespace {

// Has the payment of every txid of `merchant` confirmed with its PSP, then answers: 200 when
// each is known final (or is not one of the connector's charges), 503 while any is not yet
// confirmed or could not be asked (the PSP tries again later). A charge named with devolucoes
// has the refunds still in flight of its payment asked of the PSP too, so that each is
// recorded done as soon as the PSP says so (the gateway's retry then hears it).
void confirm(domain::AcquirerEvents& events, const std::string& merchant, std::vector<PixHint> hints,
             const http::Responder& respond) {
  if (hints.empty()) {
    return respond(http::Response(200, R"({"status":"received"})"));
  }
  auto tally = std::make_shared<Tally>(hints.size(), respond);
  for (auto& hint : hints) {
    std::string reference = pix_reference(hint.txid);
    if (hint.devolucoes) {
      events.resume_refunds_by_reference(reference, merchant);
    }
    events.hint_by_reference(std::move(reference), merchant, [tally](domain::Reply reply) { tally->add(reply); });
  }
}

}  // namespace

// From the PSP's pinned client certificate when the entry names any, bounded, and only hints.
void take_pix_notification(const BcbPixSettings& settings, const Notification& n) {
  constexpr size_t kMaxNotificationBytes = 64 * 1024;
  const auto& pinned = settings.webhook.certificate_sha256;
  if (!pinned.empty() && std::find(pinned.begin(), pinned.end(), n.request.client_certificate_sha256) == pinned.end()) {
    metrics::count_webhook("bad-certificate");
    return n.respond(http::problem(403, "Forbidden", "this notification needs the PSP's client certificate"));
  }
  if (n.request.body.size() > kMaxNotificationBytes) {
    metrics::count_webhook("too-large");
    return n.respond(http::problem(413, "Payload Too Large", "notifications are limited to 64 KiB"));
  }
  auto hints = read_pix_notification(n.request.body);
  if (!hints) {
    metrics::count_webhook("malformed");
    return n.respond(http::problem(400, "Bad Request", hints.error().message));
  }
  metrics::count_webhook("pix-hint");
  confirm(n.events, n.merchant, std::move(*hints), n.respond);
}

}  // namespace idempay::acquirer
