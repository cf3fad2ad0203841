#pragma once
// What an acquirer's notifications act through: the payment engine (actors/ implements it), as
// the adapters' notification handlers (acquirers/*) see it. Each names a payment only as its
// acquirer knows it (Acquirer::reference); the engine finds it in its own index.
#include <functional>
#include <string>

#include "idempay/domain/payment_core.hpp"

namespace idempay::domain {

class AcquirerEvents {
public:
  using Answer = std::function<void(Reply)>;
  virtual ~AcquirerEvents() = default;

  /// Applies a verified event through the payment's actor and inbox: kDone when applied,
  /// ignored as stale or a duplicate; kConflict for another event under its id; kNotFound for
  /// a reference never indexed or a payment the event's sender may not reach; kRetry when it
  /// could not be recorded.
  virtual void ingest_by_reference(std::string reference, AcquirerEvent event, Answer answer) = 0;
  /// An unauthenticated hint through `merchant`'s path: the payment (if that merchant's) asks
  /// its acquirer what became of it; answered with its Create Payment answer then.
  virtual void hint_by_reference(std::string reference, std::string merchant, Answer answer) = 0;
  /// The same hint about a refund that may have ended: the payment's operations in flight are
  /// asked of the acquirer again.
  virtual void resume_refunds_by_reference(std::string reference, std::string merchant) = 0;
};

}  // namespace idempay::domain
