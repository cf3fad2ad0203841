#include "idempay/protocol/state_machine.hpp"

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

// One guard line per rule, in the order the rules are checked.
std::optional<Refusal> settle_refusal(PaymentState state, const Amounts& totals, Cents amount) {
  if (!is_legal_transition(state, PaymentState::kSettled)) return Refusal{Rule::kLegalTransition, "settle", state};
  if (amount <= 0) return Refusal{Rule::kPositiveAmount, "settle", state, amount};
  Cents remaining = totals.settle_limit() - totals.settled;
  if (amount > remaining) return Refusal{Rule::kWithinSettleLimit, "settle", state, amount, remaining};
  return std::nullopt;
}

std::optional<Refusal> refund_refusal(PaymentState state, const Amounts& totals, Cents amount) {
  if (!is_legal_transition(state, PaymentState::kRefunded)) return Refusal{Rule::kLegalTransition, "refund", state};
  if (amount <= 0) return Refusal{Rule::kPositiveAmount, "refund", state, amount};
  Cents remaining = totals.settled - totals.refunded;
  if (amount > remaining) return Refusal{Rule::kWithinSettled, "refund", state, amount, remaining};
  return std::nullopt;
}

std::optional<Refusal> cancel_refusal(PaymentState state) {
  if (!is_legal_transition(state, PaymentState::kCancelled)) return Refusal{Rule::kLegalTransition, "cancel", state};
  return std::nullopt;
}

Error to_error(const Refusal& r) {
  std::string noun = r.operation == "settle" ? "settlement" : std::string(r.operation);
  switch (r.rule) {
    case Rule::kLegalTransition:
      return Error{ErrorCode::kIllegalState,
                   "cannot " + std::string(r.operation) + " a payment whose state is " + std::string(to_string(r.state))};
    case Rule::kPositiveAmount:
      return Error{ErrorCode::kInvalidArgument, noun + " value must be positive"};
    case Rule::kWithinSettleLimit:
      return Error{ErrorCode::kInvalidArgument, noun + " of " + format_amount(r.amount) +
                                                    " exceeds what remains authorized (" + format_amount(r.remaining) + ")"};
    case Rule::kWithinSettled:
      return Error{ErrorCode::kInvalidArgument, noun + " of " + format_amount(r.amount) +
                                                    " exceeds what remains settled (" + format_amount(r.remaining) + ")"};
  }
  return Error{ErrorCode::kInternal, "unknown rule"};
}

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
