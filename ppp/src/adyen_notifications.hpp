#pragma once
// Adyen's standard notifications (Webhooks v1) for a merchant's adyen acquirer: every item's
// HMAC signature checked before anything else, then each applied through the inbox: an
// AUTHORISATION or an OFFER_CLOSED (a boleto expired unpaid) decides a payment still undefined
// (never one decided already), a report on a capture, refund or cancellation goes into the
// payment's trail — a failure where operators look. Answered "[accepted]" once every item is
// durable.
#include <string>

#include "idempay/actors/payment_service.hpp"
#include "idempay/config/acquirers.hpp"
#include "idempay/http/server.hpp"

namespace idempay::ppp {

/// Verifies and applies the notification in `request` for `merchant`'s adyen acquirer `entry`:
/// its items reach only payments that merchant created through that entry.
void take_adyen_notification(actors::PaymentService& service, const std::string& merchant,
                             const config::AcquirerEntry& entry, const http::Request& request,
                             const http::Responder& respond);

}  // namespace idempay::ppp
