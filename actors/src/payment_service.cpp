#include "idempay/actors/payment_service.hpp"

#include <algorithm>
#include <thread>

#include "idempay/protocol/crypto.hpp"
#include "messages.hpp"

namespace idempay::actors {

namespace {
constexpr std::string_view kFingerprintKeyName = "fingerprint-key";
}  // namespace

struct PaymentService::Impl {
  storage::Store& store;
  acquirer::Acquirer& acquirer;
  CallbackTransport& transport;
  ServiceOptions options;
  ActorContext context;
  std::unique_ptr<caf::actor_system_config> config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor router;

  Impl(storage::Store& s, acquirer::Acquirer& a, CallbackTransport& t, ServiceOptions o)
      : store(s), acquirer(a), transport(t), options(o) {}

  // The HMAC key for request fingerprints: random, created once, kept in the store so that
  // fingerprints survive restarts.
  Result<std::string> fingerprint_key() {
    auto got = store.get(storage::Keyspace::kMeta, kFingerprintKeyName);
    if (!got) {
      return tl::unexpected(got.error());
    }
    if (*got) {
      return (*got)->value;
    }
    std::string key = crypto::random_bytes(32);
    auto put = store.commit_and_wait({{storage::Keyspace::kMeta, std::string(kFingerprintKeyName), key, 0}});
    if (!put && put.error().code == ErrorCode::kConflict) {
      return fingerprint_key();
    }
    if (!put) {
      return tl::unexpected(put.error());
    }
    return key;
  }
};

PaymentService::PaymentService(storage::Store& store, acquirer::Acquirer& acquirer,
                               CallbackTransport& transport, ServiceOptions options)
    : impl_(std::make_unique<Impl>(store, acquirer, transport, options)) {}

PaymentService::~PaymentService() { shutdown(); }

Status PaymentService::start(std::string public_url) {
  if (!public_url.empty()) {
    impl_->options.public_url = std::move(public_url);
  }
  auto key = impl_->fingerprint_key();
  if (!key) {
    return tl::unexpected(key.error());
  }
  auto& ctx = impl_->context;
  ctx.store = &impl_->store;
  ctx.acquirer = &impl_->acquirer;
  ctx.fingerprint_key = std::move(*key);
  ctx.idle_timeout = impl_->options.idle_timeout;
  ctx.transport = &impl_->transport;
  ctx.callbacks = impl_->options.callbacks;
  ctx.public_url = impl_->options.public_url;
  ctx.reconcile_base = impl_->options.reconcile_base;
  ctx.reconcile_attempts = impl_->options.reconcile_attempts;
  impl_->config = std::make_unique<caf::actor_system_config>();
  size_t workers = impl_->options.workers > 0 ? static_cast<size_t>(impl_->options.workers)
                                              : std::max(1u, std::thread::hardware_concurrency());
  impl_->config->set("scheduler.max-threads", workers);
  impl_->system = std::make_unique<caf::actor_system>(*impl_->config);
  ctx.dispatcher = impl_->system->spawn(dispatcher_actor, &impl_->context);
  impl_->router = impl_->system->spawn(router_actor, &impl_->context);
  ctx.router = impl_->router;
  // Detached: its scan of the store must not hold a worker that payment actors need.
  impl_->system->spawn<caf::detached>(recovery_actor, &impl_->context);
  return {};
}

namespace {
// Before start() and after shutdown() there is no router: answer "retry later".
bool refuse_when_stopped(const caf::actor& router, ReplyFn& reply) {
  if (router) {
    return false;
  }
  reply(Reply{503, R"({"status":"error","code":"unavailable","message":"the payment engine is not running"})"});
  return true;
}
}  // namespace

void PaymentService::create_payment(ppp::CreatePaymentRequest request, ReplyFn reply) {
  if (refuse_when_stopped(impl_->router, reply)) return;
  caf::anon_send(impl_->router, create_atom::value, CreateCommand{std::move(request), ReplySink(std::move(reply))});
}

void PaymentService::operate(ppp::OperationRequest request, ReplyFn reply) {
  if (refuse_when_stopped(impl_->router, reply)) return;
  caf::anon_send(impl_->router, operate_atom::value, OperateCommand{std::move(request), ReplySink(std::move(reply))});
}

void PaymentService::ingest_event(AcquirerEvent event, ReplyFn reply) {
  if (refuse_when_stopped(impl_->router, reply)) return;
  caf::anon_send(impl_->router, event_atom::value, EventCommand{std::move(event), ReplySink(std::move(reply))});
}

void PaymentService::refresh(std::string payment_id, ReplyFn reply) {
  if (refuse_when_stopped(impl_->router, reply)) return;
  caf::anon_send(impl_->router, refresh_atom::value, RefreshCommand{std::move(payment_id), ReplySink(std::move(reply))});
}

void PaymentService::submit_terminal(std::string payment_id, std::string serial, ReplyFn reply) {
  if (refuse_when_stopped(impl_->router, reply)) return;
  caf::anon_send(impl_->router, terminal_atom::value,
                 TerminalCommand{std::move(payment_id), std::move(serial), ReplySink(std::move(reply))});
}

size_t PaymentService::live_actors() {
  caf::scoped_actor self{*impl_->system};
  uint64_t count = 0;
  self->request(impl_->router, std::chrono::seconds(10), count_atom::value)
      .receive([&](uint64_t n) { count = n; }, [](caf::error&) {});
  return count;
}

void PaymentService::shutdown() {
  if (!impl_->system || !impl_->router) {
    return;
  }
  caf::anon_send_exit(impl_->router, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(impl_->context.dispatcher, caf::exit_reason::user_shutdown);
  impl_->router = nullptr;
  impl_->context.router = nullptr;
  impl_->context.dispatcher = nullptr;
  impl_->system->await_all_actors_done();
}

}  // namespace idempay::actors
