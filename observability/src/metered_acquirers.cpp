#include "idempay/observability/metered_acquirers.hpp"

#include "idempay/metrics/metrics.hpp"
#include "idempay/tracing/tracer.hpp"

namespace idempay::observability {

namespace {

std::string_view outcome_of(const Result<domain::Authorization>& r) {
  return r ? domain::to_string(r->status) : "error";
}

std::string_view outcome_of(const Result<domain::OperationOutcome>& r) {
  if (!r) {
    return "error";
  }
  return r->manual ? "manual" : r->pending ? "pending" : r->succeeded ? "succeeded" : "refused";
}

std::string_view outcome_of(const Result<std::optional<domain::Authorization>>& r) {
  return !r ? "error" : *r ? "found" : "unknown";
}

// One acquirer call's span, a child of the thread's current one (the payment's decision); the
// adapter's HTTP calls are its children.
std::shared_ptr<tracing::Span> call_span(std::string_view operation) {
  auto span = std::make_shared<tracing::Span>(tracing::start_span("acquirer", tracing::Kind::kInternal));
  if (span->recording()) {  // names built only for a span that is exported
    span->rename("acquirer " + std::string(operation)).set("idempay.acquirer.operation", std::string(operation));
  }
  return span;
}

// Times one call from its start to its callback, whatever thread that runs on, and ends its span.
template <class T>
domain::Callback<T> timed(std::string_view operation, std::shared_ptr<tracing::Span> span, domain::Callback<T> done) {
  return [operation, span, done = std::move(done), started = std::chrono::steady_clock::now()](Result<T> r) {
    metrics::observe_acquirer_call(operation, outcome_of(r), metrics::seconds_since(started));
    if (span->recording()) {
      span->set("idempay.acquirer.outcome", std::string(outcome_of(r)));
      if (!r) {
        span->fail(to_string(r.error().code));
      }
    }
    span->end();
    done(std::move(r));
  };
}

// Runs `call` with `span` as the thread's current context.
template <class Call>
void within(const std::shared_ptr<tracing::Span>& span, Call&& call) {
  tracing::Scope scope(span->context());
  call();
}

std::string_view operation_name(ppp::OperationKind kind) {
  switch (kind) {
    case ppp::OperationKind::kCancel: return "cancel";
    case ppp::OperationKind::kSettle: return "settle";
    case ppp::OperationKind::kRefund: return "refund";
  }
  return "operate";
}

class MeteredAcquirer final : public domain::Acquirer {
public:
  explicit MeteredAcquirer(domain::Acquirer& inner) : inner_(inner) {}
  void authorize(domain::AuthorizeCall call, domain::Callback<domain::Authorization> done) override {
    auto span = call_span("authorize");
    within(span, [&] { inner_.authorize(std::move(call), timed("authorize", span, std::move(done))); });
  }
  void operate(domain::OperationCall call, domain::Callback<domain::OperationOutcome> done) override {
    auto name = operation_name(call.kind);
    auto span = call_span(name);
    within(span, [&] { inner_.operate(std::move(call), timed(name, span, std::move(done))); });
  }
  void status(std::string key, domain::Callback<std::optional<domain::Authorization>> done) override {
    auto span = call_span("status");
    within(span, [&] { inner_.status(std::move(key), timed("status", span, std::move(done))); });
  }
  void status_of(std::string key, const std::string& payment_method,
                 domain::Callback<std::optional<domain::Authorization>> done) override {
    auto span = call_span("status");
    within(span, [&] { inner_.status_of(std::move(key), payment_method, timed("status", span, std::move(done))); });
  }
  std::string reference(const std::string& key) const override { return inner_.reference(key); }

private:
  domain::Acquirer& inner_;
};

}  // namespace

domain::Acquirer& MeteredAcquirerRoutes::acquirer(const std::string& route, const std::string& merchant) {
  domain::Acquirer& inner = inner_.acquirer(route, merchant);
  std::lock_guard lock(mutex_);
  auto& slot = metered_[&inner];
  if (!slot) {
    slot = std::make_unique<MeteredAcquirer>(inner);
  }
  return *slot;
}

}  // namespace idempay::observability
