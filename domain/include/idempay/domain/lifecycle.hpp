#pragma once
// A payment's lifecycle (G3): its states, the legal transitions, and the rules an operation
// must keep, decided here and nowhere else.

#include <optional>
#include <string_view>

#include "idempay/base/error.hpp"
#include "idempay/base/money.hpp"
#include "idempay/domain/answers.hpp"

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

}  // namespace idempay

namespace idempay::domain {

/// The lifecycle's rules an operation can break (G3), one guard line each, in the order they
/// are checked; the first broken is the refusal (kInvalidState, kAmountNotPositive,
/// kOverSettleLimit, kOverSettled), with a message that names the facts.
/// A settlement of `amount`: the payment approved or settled, the amount positive, and the
/// settlements within settle_limit().
std::optional<Refused> settle_refusal(PaymentState state, const Amounts& totals, Cents amount);
/// A refund of `amount`: the payment settled or refunded, the amount positive, the refunds
/// within what was settled.
std::optional<Refused> refund_refusal(PaymentState state, const Amounts& totals, Cents amount);
/// A cancellation: only of an undefined or approved (not yet settled) payment.
std::optional<Refused> cancel_refusal(PaymentState state);

}  // namespace idempay::domain

namespace idempay {

/// The `status` a Create Payment answer shows for a state (approved, denied or undefined).
std::string_view create_payment_status(PaymentState state);

}  // namespace idempay
