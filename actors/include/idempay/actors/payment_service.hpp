#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "idempay/acquirer/acquirer.hpp"
#include "idempay/protocol/error.hpp"
#include "idempay/protocol/ppp.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::actors {

/// An answer for the gateway: HTTP status and body bytes.
struct Reply {
  unsigned status = 200;
  std::string body;
};
using ReplyFn = std::function<void(Reply)>;

struct ServiceOptions {
  /// A payment actor with nothing to do for this long is passivated. Default: 30 s
  std::chrono::milliseconds idle_timeout{30'000};
  /// CAF worker threads; 0 keeps CAF's default. Default: 0
  int workers = 0;
};

/// The payment engine: one CAF actor per paymentId, spawned on demand and passivated when
/// idle, persisting every transition (with etag compare-and-swap) before and after each
/// acquirer call. Replies arrive through the ReplyFn, on a CAF thread, exactly once; if the
/// engine stops first, the reply is 503.
class PaymentService {
public:
  /// `store` and `acquirer` must outlive the service.
  PaymentService(storage::Store& store, acquirer::Acquirer& acquirer, ServiceOptions options);
  ~PaymentService();
  PaymentService(const PaymentService&) = delete;
  PaymentService& operator=(const PaymentService&) = delete;

  /// Loads or creates the fingerprint key and starts the router. Blocking; call once.
  Status start();

  void create_payment(ppp::CreatePaymentRequest request, ReplyFn reply);
  void operate(ppp::OperationRequest request, ReplyFn reply);

  /// Number of live payment actors (blocking query, for tests and benchmarks).
  size_t live_actors();

  /// Stops every actor and waits for them. Commits already handed to the store still land.
  void shutdown();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idempay::actors
