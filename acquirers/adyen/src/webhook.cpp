// Adyen's standard notifications (Webhooks v1) for a merchant's adyen acquirer: every item's
// HMAC signature checked before anything else, then each applied through the inbox: an
// AUTHORISATION or an OFFER_CLOSED (a boleto expired unpaid) decides a payment still undefined
// (never one decided already), a report on a capture, refund or cancellation goes into the
// payment's trail — a failure where operators look. Answered "[accepted]" once every item is
// durable.
#include <atomic>
#include <memory>

#include <spdlog/spdlog.h>

#include "idempay/acquirers/adyen.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/webhooks.hpp"
#include "idempay/http/problem.hpp"
#include "idempay/metrics/metrics.hpp"

namespace idempay::acquirer {

namespace {

constexpr size_t kMaxNotificationBytes = 64 * 1024;

// Basic authentication as configured, compared in constant time over digests.
bool basic_auth_matches(const AdyenNotificationSettings& settings, std::string_view header) {
  if (settings.username.empty()) {
    return true;
  }
  std::string given = header.rfind("Basic ", 0) == 0 ? std::string(header.substr(6)) : std::string();
  std::string wanted = webhooks::base64_encode(settings.username + ":" + settings.password);
  return crypto::constant_time_equal(crypto::sha256(given), crypto::sha256(wanted));
}

// Modifications a payment's operations may fail with after Adyen accepted them.
bool reports_failure(const AdyenNotification& n) {
  const std::string& e = n.event_code;
  return n.success != "true" || e == "CAPTURE_FAILED" || e == "REFUND_FAILED" || e == "REFUNDED_REVERSED" ||
         e == "CHARGEBACK" || e == "NOTIFICATION_OF_CHARGEBACK" || e == "SECOND_CHARGEBACK";
}

// What the payment's trail says of a report: the event, its outcome, amount and references.
std::string report_text(const AdyenNotification& n) {
  std::string text = "Adyen " + n.event_code + (n.success == "true" ? "" : " (success false)") + ": " + n.value + " " +
                     n.currency + " minor units, pspReference " + n.psp_reference;
  if (!n.reason.empty()) {
    text += ", reason: " + n.reason.substr(0, 200);
  }
  return text;
}

domain::AcquirerEvent event_of(const AdyenNotification& n, const Notification& from) {
  domain::AcquirerEvent event;
  // Adyen sends an event again until it hears [accepted]: the same event has the same id. It
  // is scoped to the payment the item names, which only its owner's path may reach (the
  // sender below): nobody else's item can take the id first and make this one a duplicate.
  event.event_id =
      "adyen/" + n.merchant_reference + "/" + n.psp_reference + "/" + n.event_code + "/" + n.success;
  event.sender = from.merchant;
  event.sender_route = from.route;
  event.body_hash = crypto::to_hex(crypto::sha256(adyen_signing_payload(n)));
  // An offer closed (a boleto expired unpaid, a redirect abandoned) is a payment that will not
  // be made: it decides an undefined payment as an AUTHORISATION refused does.
  bool closed = n.event_code == "OFFER_CLOSED" && n.success == "true";
  if (n.event_code == "AUTHORISATION" || closed) {
    bool approved = !closed && n.success == "true";
    domain::Authorization& a = event.authorization;
    a.status = approved ? domain::AuthorizationStatus::kApproved : domain::AuthorizationStatus::kDenied;
    a.tid = n.psp_reference;
    a.nsu = n.psp_reference;
    a.authorization_id = n.auth_code;
    a.acquirer = "Adyen";
    a.code = approved ? "Authorised" : closed ? "OFFER_CLOSED" : "Refused";
    a.message = approved ? "authorised (notification)"
                : closed ? "the offer expired unpaid"
                         : (n.reason.empty() ? "refused" : n.reason.substr(0, 200));
    a.revision = 2;  // final, as the answer to /payments that carries a final result
    event.revision = 2;
  } else {
    event.report = report_text(n);
    event.report_is_failure = reports_failure(n);
  }
  return event;
}

// What every item of one notification came to: [accepted] once all are durable (or not ours:
// an unknown payment, or one this path may not reach). An item that could not be recorded,
// or that collides with one recorded under its id with other content, is never acknowledged:
// Adyen sends the notification again.
struct Tally {
  Tally(size_t n, http::Responder r) : left(n), respond(std::move(r)) {}
  std::atomic<size_t> left;
  std::atomic<size_t> unsaved{0};
  std::atomic<size_t> conflicts{0};
  http::Responder respond;

  void add(const domain::Reply& reply) {
    if (reply.outcome == domain::Outcome::kConflict) {
      ++conflicts;
    } else if (reply.outcome != domain::Outcome::kDone && reply.outcome != domain::Outcome::kNotFound) {
      ++unsaved;
    }
    if (--left == 0) {
      finish();
    }
  }

  void finish() {
    if (unsaved > 0) {
      return respond(http::problem(503, "Service Unavailable", "not every item could be recorded; send it again"));
    }
    if (conflicts > 0) {
      metrics::count_webhook("conflict");
      return respond(
          http::problem(409, "Conflict", "an item differs from the one recorded under the same event"));
    }
    respond(http::Response(200, "[accepted]", "text/plain"));
  }
};

}  // namespace

void take_adyen_notification(const AdyenSettings& entry, const Notification& n) {
  const http::Request& request = n.request;
  const http::Responder& respond = n.respond;
  const auto& settings = entry.notifications;
  if (!basic_auth_matches(settings, request.header("authorization"))) {
    metrics::count_webhook("bad-credentials");
    return respond(http::problem(401, "Unauthorized", "notification credentials missing or wrong"));
  }
  if (request.body.size() > kMaxNotificationBytes) {
    metrics::count_webhook("too-large");
    return respond(http::problem(413, "Payload Too Large", "notifications are limited to 64 KiB"));
  }
  auto items = read_adyen_notifications(request.body);
  if (!items) {
    metrics::count_webhook("malformed");
    return respond(http::problem(400, "Bad Request", items.error().message));
  }
  // Every signature first: one forged item and nothing of the notification is taken.
  for (const auto& item : *items) {
    if (!adyen_signature_valid(item, settings.hmac_keys)) {
      metrics::count_webhook("bad-signature");
      return respond(http::problem(401, "Unauthorized", "an item's hmacSignature is missing or invalid"));
    }
  }
  auto tally = std::make_shared<Tally>(items->size(), respond);
  for (const auto& item : *items) {
    if (item.merchant_account != entry.options.merchant_account) {
      metrics::count_webhook("other-account");  // Adyen's, signed, for another account: not ours
      tally->add(domain::Reply{domain::Outcome::kDone, ""});
      continue;
    }
    metrics::count_webhook("verified");
    domain::AcquirerEvent event = event_of(item, n);
    if (event.report_is_failure) {
      spdlog::error("adyen: {} for payment {} of merchant account {}", event.report, item.merchant_reference,
                    item.merchant_account);
    }
    n.events.ingest_by_reference(adyen_reference(item.merchant_account, item.merchant_reference),
                                std::move(event), [tally](domain::Reply reply) { tally->add(reply); });
  }
}

}  // namespace idempay::acquirer
