#pragma once
// The stored forms of a payment and of an operation. JSON, so that an operator can read a
// dumped record; never any card secret (G6).
#include <string>

#include "idempay/domain/acquirer.hpp"
#include "idempay/domain/answers.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/protocol/card.hpp"
#include "idempay/base/error.hpp"
#include "idempay/protocol/ppp.hpp"
#include "idempay/domain/lifecycle.hpp"

namespace idempay::domain {

struct PaymentRecord {
  PaymentState state = PaymentState::kProcessing;
  Amounts amounts;
  std::string currency;
  std::string payment_method;
  std::string order_id;
  std::string reference;
  std::string transaction_id;
  std::string merchant;  ///< the body's merchantName (the VTEX account), as the gateway sent it
  std::string owner;     ///< the authenticated merchant that created it; empty: stored before owners
  std::string acquirer_route;  ///< which acquirer it went to (AcquirerRoutes); empty: the default
  std::string fingerprint;
  std::string callback_url;
  CardSummary card;
  std::string tid;
  std::string nsu;
  std::string authorization_id;
  std::string acquirer;
  std::string response;  ///< the Create Payment answer for the current state, byte for byte
  int64_t acquirer_revision = 0;  ///< last authorization revision applied; older ones are stale
  int64_t callbacks = 0;          ///< callbacks written so far; numbers the delivery ids
  domain::PaymentDocument document;  ///< what the shopper needs (Pix, boleto, redirect, POS)
  std::string pos_phase;        ///< POS: "identify-terminal", "await-pos", or empty
  std::string terminal_serial;  ///< POS: set by the terminal-submit route
  int64_t created_at = 0;  ///< Unix ms
  int64_t updated_at = 0;
  /// Instances sharing the store: the one carrying out a mutation that calls the acquirer
  /// (an authorization, an operation, a reconciliation), until when (Unix ms). Nobody else
  /// calls the acquirer for this payment before then. Empty: none, or a single instance.
  std::string lease_owner;
  int64_t lease_until = 0;
  /// The acquirer's id of the void, once cancelled: later cancels answer with it.
  std::string cancellation_id;
  /// Pending and watched (Space::kWatches): its acquirer is asked on a schedule until then
  /// (Unix ms). 0: not watched.
  int64_t watch_until = 0;
  /// The W3C `traceparent` of the create's decision: the payment's trace, which its callbacks
  /// continue and its later work links to. Empty: none (stored before traces).
  std::string trace;
  std::string trace_state;  ///< the create's valid `tracestate`, carried on with the trace; usually empty
};

/// What the watch index holds for a payment: until when it is watched, and whose acquirer
/// entry it is asked of (the owner and route: polls are capped per acquirer entry).
struct Watch {
  std::string payment_id;
  int64_t until = 0;
  std::string acquirer;  ///< "{owner}/{route}"
};
std::string encode(const Watch& w);
Result<Watch> decode_watch(std::string_view payment_id, std::string_view value);

std::string encode(const PaymentRecord& r);
Result<PaymentRecord> decode_payment(std::string_view json);

enum class OperationPhase : uint8_t { kProcessing, kDone };

struct OperationRecord {
  ppp::OperationKind kind = ppp::OperationKind::kCancel;
  OperationPhase phase = OperationPhase::kProcessing;
  std::string payment_id;
  std::string fingerprint;
  /// The idempotency key the acquirer knows the operation by: "paymentId/requestId"; empty for
  /// operations stored before requestIds were scoped to their payment (their key: requestId).
  std::string acquirer_key;
  Cents amount = 0;
  std::vector<ppp::Recipient> recipients;  ///< the split it was asked with: a resumed call sends it again
  Outcome outcome = Outcome::kDone;  ///< how the stored answer went out, once done
  std::string response;  ///< the stored answer, byte for byte, once done
  int64_t updated_at = 0;
};

std::string encode(const OperationRecord& r);
/// Where an operation is stored: requestIds are scoped to their payment ("paymentId/requestId";
/// neither may hold a '/'). Operations stored before that are under the bare requestId.
std::string operation_key(const std::string& payment_id, const std::string& request_id);
/// The requestId of an operation's store key, scoped or not.
std::string_view request_id_of(std::string_view operation_key);
Result<OperationRecord> decode_operation(std::string_view json);

int64_t now_unix_ms();

/// The acquirer's outcome is not known: the payment must be reconciled.
inline bool is_unresolved(PaymentState s) { return s == PaymentState::kProcessing || s == PaymentState::kOrphaned; }

/// The recovery index: one key per payment whose acquirer outcome is unknown and per
/// operation in flight, written and removed in the same batch as the record it names, so that
/// start-up recovery reads only these keys instead of every payment ever stored.
/// The payment's own key ends with the '/'; an operation's key adds its requestId.
std::string recovery_key(const std::string& payment_id, const std::string& request_id = {});
/// Splits a recovery key into payment id and request id (empty for a payment's own key).
std::pair<std::string, std::string> parse_recovery_key(std::string_view key);

}  // namespace idempay::domain
