#pragma once
// Acquirer calls counted and timed for the metrics (idempay_acquirer_calls_total and
// idempay_acquirer_call_duration_seconds): a decorator around the merchants' acquirer routes,
// so that neither the acquirers nor the payment actors know of metrics.
#include <map>
#include <memory>
#include <mutex>

#include "idempay/actors/payment_service.hpp"

namespace idempay::observability {

class MeteredAcquirerRoutes final : public actors::AcquirerRoutes {
public:
  /// `inner` must outlive this.
  explicit MeteredAcquirerRoutes(actors::AcquirerRoutes& inner) : inner_(inner) {}
  std::string route_for(const std::string& merchant, const std::string& method, bool test_suite) override {
    return inner_.route_for(merchant, method, test_suite);
  }
  domain::Acquirer& acquirer(const std::string& route, const std::string& merchant) override;

private:
  actors::AcquirerRoutes& inner_;
  std::mutex mutex_;
  std::map<domain::Acquirer*, std::unique_ptr<domain::Acquirer>> metered_;  // by the acquirer they wrap
};

}  // namespace idempay::observability
