#pragma once
// An API Pix PSP's notifications (POST {webhookUrl}/pix, body {"pix": [{txid, endToEndId,
// valor, horario, devolucoes?}]}). The document protects them only with mutual TLS, so each is
// a hint: the payment a txid names is asked of the PSP itself (GET /cob/{txid}), and nothing
// in the body — amount, status — is believed.
#include <string>
#include <string_view>
#include <vector>

#include "idempay/actors/payment_service.hpp"
#include "idempay/base/error.hpp"
#include "idempay/http/server.hpp"

namespace idempay::ppp {

/// A charge a notification names, and whether it names devolucoes of its Pix too (a
/// devolucao that ended is notified with the Pix it returns).
struct PixHint {
  std::string txid;
  bool devolucoes = false;
  bool operator==(const PixHint& o) const { return txid == o.txid && devolucoes == o.devolucoes; }
};

/// The distinct charges a notification names, at most kMaxHintsPerNotification of them; a Pix
/// without a txid is none of the connector's charges. kInvalidArgument for a body that is not
/// {"pix": [objects]}.
Result<std::vector<PixHint>> read_pix_notification(std::string_view body);
inline constexpr size_t kMaxHintsPerNotification = 100;

/// Has the payment of every txid of `merchant` confirmed with its PSP, then answers: 200 when
/// each is known final (or is not one of the connector's charges), 503 while any is not yet
/// confirmed or could not be asked (the PSP tries again later). A charge named with
/// devolucoes has the refunds still in flight of its payment asked of the PSP too, so that
/// each is recorded done as soon as the PSP says so (the gateway's retry then hears it).
void confirm_pix_notification(actors::PaymentService& service, const std::string& merchant,
                              std::vector<PixHint> hints, const http::Responder& respond);

}  // namespace idempay::ppp
