#pragma once
// The deterministic acquirer stub, in process: what tests and a newcomer's first payments go to.
#include <chrono>
#include <memory>
#include <string>

#include "idempay/acquirers/extension.hpp"
#include "idempay/domain/acquirer.hpp"

namespace idempay::acquirer {

struct StubOptions {
  /// Added before every answer. Default: 0
  std::chrono::milliseconds latency{0};
  /// How long a pending authorization (cards 4222222222222224/5) stays pending. Default: 2 s
  std::chrono::milliseconds pending_delay{2000};
  /// Approved authorizations may be captured up to this much more than their amount (their
  /// maxValue), in percent; 0: no more than the amount. Default: 0
  int over_capture_percent = 0;
  /// How long a refund stays pending after it is accepted; 0: refunds complete at once.
  /// Default: 0
  std::chrono::milliseconds refund_delay{0};
  /// Operations this acquirer cannot do by API: answered `manual`, nothing moved. Default: none
  bool manual_cancel = false;
  bool manual_refund = false;
};

/// Where the stub reports outcomes: signed Standard Webhooks POSTed to `url`, retried with
/// backoff until a 2xx acknowledges them.
struct StubWebhookOptions {
  std::string url;
  std::string key;  ///< raw secret bytes (decode "whsec_..." with webhooks::decode_secret)
  std::chrono::milliseconds retry_base{200};
  int max_attempts = 60;
};

enum class TriggerOutcome : uint8_t { kApprove, kDeny, kExpire };

/// The deterministic acquirer stub, idempotent per key, with a ledger of calls and charges.
/// Cards: 4444333322221111 approved, 4444333322221112 denied, 4222222222222224 pending then
/// approved, 4222222222222225 pending then denied, any other Luhn-valid card approved, an
/// invalid one denied; 4000000000003220 / 4000000000003238 ask for a 3-D Secure challenge
/// (pending, with the challenge page's URL) and are then approved / denied. No card number
/// (tokenized or non-card methods): approved.
class StubAcquirer final : public Acquirer {
public:
  explicit StubAcquirer(StubOptions options = {});
  ~StubAcquirer() override;

  void authorize(AuthorizeCall call, Callback<Authorization> done) override;
  void operate(OperationCall call, Callback<OperationOutcome> done) override;
  void status(std::string key, Callback<std::optional<Authorization>> done) override;

  /// Reports every later change of a pending authorization as a signed webhook.
  void enable_webhooks(StubWebhookOptions options);

  /// Resolves a pending authorization now (approve, deny, or expire = deny with code
  /// "expired"); false if the key is unknown or no longer pending.
  bool trigger(const std::string& key, TriggerOutcome outcome);

  /// The ledger as JSON: {"authorizations":{key:{calls,charges,tid,status}}, "captures":...,
  /// "cancellations":..., "refunds":...}. Card data is never part of it.
  std::string ledger_json() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The kind "stub" (extension.hpp): an entry with no settings, served by the in-process stub
/// the environment holds.
const Kind& stub_kind();

}  // namespace idempay::acquirer
