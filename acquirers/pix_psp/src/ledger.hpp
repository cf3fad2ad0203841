#pragma once
// What the fake PSP holds: charges, the Pix received for them, their devolucoes, webhooks,
// tokens, and the counts of its ledger. Plain data, guarded by the PSP's mutex.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "idempay/base/money.hpp"

namespace idempay::acquirer::fake {

struct Refund {
  std::string id;
  std::string return_id;  ///< rtrId
  Cents amount = 0;
  std::string status;     ///< EM_PROCESSAMENTO, DEVOLVIDO, NAO_REALIZADO
  int64_t requested_ms = 0;
  int64_t settled_ms = 0;
  std::string reason;
};

struct Received {
  std::string end_to_end_id;
  Cents amount = 0;
  int64_t at_ms = 0;
  std::vector<Refund> refunds;

  Cents refunded_or_pending() const {
    Cents total = 0;
    for (const auto& r : refunds) {
      total += r.status == "NAO_REALIZADO" ? 0 : r.amount;
    }
    return total;
  }
};

struct Charge {
  std::string txid;
  int revision = 0;
  std::string status = "ATIVA";
  int64_t created_ms = 0;
  int64_t expiry_seconds = 86'400;
  Cents amount = 0;
  std::string key;          ///< chave
  std::string debtor_json;  ///< the devedor object as received (validated), or empty
  int64_t location_id = 0;
  std::string location;     ///< without its scheme, as the BR Code carries it
  std::string code;         ///< pixCopiaECola
  std::optional<Received> paid;
  // The ledger: how often it was asked to create (PUT) and to change it.
  int puts = 0;
  int patches = 0;

  bool expired(int64_t now_ms) const { return now_ms > created_ms + expiry_seconds * 1000; }
};

struct WebhookCounts {
  uint64_t sent = 0;       ///< attempts
  uint64_t delivered = 0;  ///< answered 2xx
  uint64_t abandoned = 0;  ///< every attempt failed
};

}  // namespace idempay::acquirer::fake
