#include "idempay/domain/lifecycle.hpp"

#include <array>

namespace idempay {

namespace {
constexpr std::array<std::string_view, 8> kNames = {
    "processing", "undefined", "approved", "denied", "cancelled", "settled", "refunded", "orphaned"};

}  // namespace

std::string_view to_string(PaymentState s) { return kNames[static_cast<size_t>(s)]; }

std::optional<PaymentState> payment_state_from_string(std::string_view s) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == s) {
      return static_cast<PaymentState>(i);
    }
  }
  return std::nullopt;
}

bool is_legal_transition(PaymentState from, PaymentState to) {
  using S = PaymentState;
  switch (from) {
    case S::kProcessing:
      return to == S::kUndefined || to == S::kApproved || to == S::kDenied || to == S::kOrphaned;
    case S::kOrphaned:
      return to == S::kUndefined || to == S::kApproved || to == S::kDenied;
    case S::kUndefined:
      return to == S::kApproved || to == S::kDenied || to == S::kCancelled;
    case S::kApproved:
      return to == S::kSettled || to == S::kCancelled;
    case S::kSettled:
      return to == S::kSettled || to == S::kRefunded;
    case S::kRefunded:
      return to == S::kRefunded;
    case S::kDenied:
    case S::kCancelled:
      return false;
  }
  return false;
}

}  // namespace idempay

namespace idempay::domain {

namespace {

std::string cannot(std::string_view verb, PaymentState state) {
  return "cannot " + std::string(verb) + " a payment whose state is " + std::string(to_string(state));
}

std::string exceeds(std::string_view noun, Cents amount, std::string_view what, Cents remaining) {
  return std::string(noun) + " of " + format_amount(amount) + " exceeds what remains " + std::string(what) + " (" +
         format_amount(remaining) + ")";
}

}  // namespace

// One guard line per rule, in the order the rules are checked.
std::optional<Refused> settle_refusal(PaymentState state, const Amounts& totals, Cents amount) {
  if (!is_legal_transition(state, PaymentState::kSettled)) return Refused{Refusal::kInvalidState, cannot("settle", state)};
  if (amount <= 0) return Refused{Refusal::kAmountNotPositive, "settlement value must be positive"};
  Cents remaining = totals.settle_limit() - totals.settled;
  if (amount > remaining) return Refused{Refusal::kOverSettleLimit, exceeds("settlement", amount, "authorized", remaining)};
  return std::nullopt;
}

std::optional<Refused> refund_refusal(PaymentState state, const Amounts& totals, Cents amount) {
  if (!is_legal_transition(state, PaymentState::kRefunded)) return Refused{Refusal::kInvalidState, cannot("refund", state)};
  if (amount <= 0) return Refused{Refusal::kAmountNotPositive, "refund value must be positive"};
  Cents remaining = totals.settled - totals.refunded;
  if (amount > remaining) return Refused{Refusal::kOverSettled, exceeds("refund", amount, "settled", remaining)};
  return std::nullopt;
}

std::optional<Refused> cancel_refusal(PaymentState state) {
  if (!is_legal_transition(state, PaymentState::kCancelled)) return Refused{Refusal::kInvalidState, cannot("cancel", state)};
  return std::nullopt;
}

}  // namespace idempay::domain

namespace idempay {

std::string_view create_payment_status(PaymentState state) {
  switch (state) {
    case PaymentState::kProcessing:
    case PaymentState::kOrphaned:
    case PaymentState::kUndefined:
      return "undefined";
    case PaymentState::kDenied:
    case PaymentState::kCancelled:  // only written for a payment cancelled before it was authorized
      return "denied";
    default:
      return "approved";
  }
}

}  // namespace idempay
