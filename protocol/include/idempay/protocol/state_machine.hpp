#pragma once

#include <optional>
#include <string_view>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"

namespace idempay {

/// Lifecycle of a payment (G3). `kProcessing` means the intent is durable and the
/// acquirer's answer is not yet recorded; `kOrphaned` that reconciling it with the acquirer
/// failed repeatedly (it is retried whenever the gateway asks again).
enum class PaymentState : uint8_t {
  kProcessing,
  kUndefined,
  kApproved,
  kDenied,
  kCancelled,
  kSettled,
  kRefunded,
  kOrphaned,
};

std::string_view to_string(PaymentState s);
std::optional<PaymentState> payment_state_from_string(std::string_view s);

/// True when `from -> to` is a legal transition. Partial settles (`settled -> settled`) and
/// partial refunds (`refunded -> refunded`) count as transitions.
bool is_legal_transition(PaymentState from, PaymentState to);

/// Running totals of a payment, in cents.
struct Amounts {
  Cents authorized = 0;
  Cents settled = 0;
  Cents refunded = 0;
  /// The most the acquirer lets be settled (the answer's maxValue, after order changes);
  /// 0: the authorized amount.
  Cents max_value = 0;

  /// What the settlements may add up to: the larger of authorized and max_value.
  Cents settle_limit() const { return max_value > authorized ? max_value : authorized; }
};

/// Checks a settlement of `amount`: state approved or settled, 0 < amount and
/// settled + amount <= settle_limit(). kIllegalState or kInvalidArgument otherwise.
Status check_settle(PaymentState state, const Amounts& totals, Cents amount);

/// Checks a refund of `amount`: state settled or refunded, 0 < amount and
/// refunded + amount <= settled.
Status check_refund(PaymentState state, const Amounts& totals, Cents amount);

/// Checks a cancellation: only undefined or approved (not yet settled) payments.
Status check_cancel(PaymentState state);

/// The `status` a Create Payment answer shows for a state (approved, denied or undefined).
std::string_view create_payment_status(PaymentState state);

}  // namespace idempay
