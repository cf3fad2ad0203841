#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "idempay/domain/deliveries.hpp"
#include "idempay/base/error.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::domain {

struct AuditLine {
  uint64_t seq = 0;
  int64_t time = 0;
  std::string kind;
  std::string ref;
  std::string before;
  std::string after;
  std::string detail;
  std::string hash;
  std::string merchant;  ///< who acted; empty for the acquirer or the connector
  std::string signer;    ///< the key id the entry was signed under; empty: unsigned
};

/// Arrivals counted instead of chained one by one (a long chain's duplicates and refusals).
struct CountedArrivals {
  std::string kind;
  std::string fingerprint;
  std::string merchant;
  uint64_t count = 0;
  int64_t first = 0;  ///< Unix ms
  int64_t last = 0;
  uint64_t sealed_in = 0;  ///< the chain entry that holds the count; 0: not sealed yet
};

struct OperationInfo {
  std::string request_id;
  std::string kind;
  std::string phase;  ///< processing | done
  int64_t amount = 0;  ///< cents
  std::string outcome;  ///< how its answer went out (done, failed, manual); empty while in flight
  std::string response;
};

/// Everything the store knows about one payment, for operators. Never card data; the
/// callback URL without its query (it carries the gateway's signature).
struct PaymentReport {
  std::string payment_id;
  std::string owner;  ///< the merchant that created it; empty if stored before owners were recorded
  std::string trace_id;  ///< the W3C trace of its create (lower-case hex); empty if stored before traces
  std::string state;
  std::string payment_method;
  std::string currency;
  int64_t authorized = 0;
  int64_t settled = 0;
  int64_t refunded = 0;
  std::string tid;
  std::string nsu;
  std::string authorization_id;
  std::string callback_url;
  std::string pos_phase;
  std::string card_bin;
  std::string card_last4;
  std::string response;
  std::vector<OperationInfo> operations;
  std::vector<DeliveryInfo> deliveries;
  std::vector<AuditLine> audit;
  std::vector<CountedArrivals> counted;
};

/// kNotFound if the store has no such payment. Reads the payment's own keys only, unless
/// `legacy_operations`: operations stored before requestIds were scoped by payment are found
/// only by reading every operation (the offline `inspect` tool does; a running connector's
/// operator API does not).
Result<PaymentReport> inspect_payment(storage::Store& store, const std::string& payment_id,
                                      bool legacy_operations = true);

struct Inconsistency {
  std::string payment_id;
  std::string problem;
};

/// Recomputes every audit chain (or one payment's) and checks that payments, operations,
/// deliveries and the chains agree, and, given the store's published signing keys, that every
/// signed entry names one of them. An empty list means everything verified.
Result<std::vector<Inconsistency>> verify_store(storage::Store& store, const std::optional<std::string>& payment_id,
                                                const std::set<std::string>* published_keys = nullptr);

}  // namespace idempay::domain
