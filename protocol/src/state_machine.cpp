#include "idempay/protocol/state_machine.hpp"

#include <array>

namespace idempay {

namespace {
constexpr std::array<std::string_view, 8> kNames = {
    "processing", "undefined", "approved", "denied", "cancelled", "settled", "refunded", "orphaned"};

Status illegal(std::string_view op, PaymentState state) {
  return make_error(ErrorCode::kIllegalState, std::string("cannot ") + std::string(op) +
                                                  " a payment whose state is " +
                                                  std::string(to_string(state)));
}
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

Status check_settle(PaymentState state, const Amounts& totals, Cents amount) {
  if (!is_legal_transition(state, PaymentState::kSettled)) {
    return illegal("settle", state);
  }
  if (amount <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "settlement value must be positive");
  }
  if (totals.settled + amount > totals.settle_limit()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "settlement of " + format_amount(amount) + " exceeds what remains authorized (" +
                          format_amount(totals.settle_limit() - totals.settled) + ")");
  }
  return {};
}

Status check_refund(PaymentState state, const Amounts& totals, Cents amount) {
  if (!is_legal_transition(state, PaymentState::kRefunded)) {
    return illegal("refund", state);
  }
  if (amount <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "refund value must be positive");
  }
  if (totals.refunded + amount > totals.settled) {
    return make_error(ErrorCode::kInvalidArgument,
                      "refund of " + format_amount(amount) + " exceeds what remains settled (" +
                          format_amount(totals.settled - totals.refunded) + ")");
  }
  return {};
}

Status check_cancel(PaymentState state) {
  if (!is_legal_transition(state, PaymentState::kCancelled)) {
    return illegal("cancel", state);
  }
  return {};
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
