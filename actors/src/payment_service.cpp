#include "idempay/base/log_gate.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/actors/payment_service.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include <spdlog/spdlog.h>

#include "idempay/domain/deliveries.hpp"
#include "idempay/base/assert.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/metrics/metrics.hpp"
#include "directory.hpp"
#include "messages.hpp"
#include "repeat_cache.hpp"
#include "scheduler.hpp"

namespace idempay::actors {

namespace {
constexpr std::string_view kFingerprintKeyName = "fingerprint-key";
constexpr std::string_view kPosLinkKeyName = "pos-link-key";
// Answers of resolved payments kept for their repeats: about 1.5 KB each; and arrivals they
// answered waiting for their trails, 24 bytes each (a tick drains them: only a store out of
// reach lets them gather, and a flood of 50,000 repeats a second fills this in a second).
constexpr size_t kRepeatCapacity = 16'384;
constexpr size_t kRepeatsWaiting = 65'536;
}  // namespace

// One acquirer for every payment.
class SingleAcquirer final : public AcquirerRoutes {
public:
  explicit SingleAcquirer(domain::Acquirer& a) : acquirer_(a) {}
  std::string route_for(const std::string&, const std::string&, bool) override { return {}; }
  domain::Acquirer& acquirer(const std::string&, const std::string&) override { return acquirer_; }

private:
  domain::Acquirer& acquirer_;
};

// What /health last learned of the store. Unauthenticated callers may ask as often as they
// like: at most one read is in flight and a result serves for kHealthFresh, so the checks
// never compete with payments for the store's readers.
struct HealthState {
  static constexpr int64_t kHealthFresh = 1'000;  // ms
  std::atomic<int64_t> checked_at{0};
  std::atomic<bool> ok{false};
  std::atomic<bool> checking{false};
  std::atomic<int64_t> started_at{0};          // of the check in flight
  static constexpr int64_t kProbeLimit = 2'000;  // ms: a write probe slower than this is a no
};

struct PaymentService::Impl {
  std::shared_ptr<HealthState> health = std::make_shared<HealthState>();     // the store answers a read
  std::shared_ptr<HealthState> writable = std::make_shared<HealthState>();   // ... and takes a write
  std::atomic<bool> draining{false};
  void probe_writes(std::function<void()> then);
  storage::Store& store;
  std::unique_ptr<AcquirerRoutes> single;  // when constructed with one acquirer
  AcquirerRoutes& acquirers;
  CallbackTransport& transport;
  ServiceOptions options;
  OutboxStats outbox;  // the dispatcher's, for the metrics
  RepeatCache repeats{kRepeatCapacity, kRepeatsWaiting};
  ActorContext context;
  // Outlives the actor system (declared before it): actors leaving it call forget(). Closed,
  // never reset, on shutdown, so that late requests find it and are answered 503.
  std::unique_ptr<Directory> directory;
  // What request threads read: published once the directory is built (the HTTP server takes
  // requests, and answers them 503, before start() has finished).
  std::atomic<Directory*> published{nullptr};

  Directory* live() const { return published.load(std::memory_order_acquire); }
  std::unique_ptr<caf::actor_system_config> config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor sweeper;
  caf::actor recovery;
  bool stopped = false;

  Impl(storage::Store& s, AcquirerRoutes& a, CallbackTransport& t, ServiceOptions o)
      : store(s), acquirers(a), transport(t), options(std::move(o)) {}
  Impl(storage::Store& s, std::unique_ptr<AcquirerRoutes> one, CallbackTransport& t, ServiceOptions o)
      : store(s), single(std::move(one)), acquirers(*single), transport(t), options(std::move(o)) {}

  // A random HMAC key, created once and kept in the store so that what it signs survives
  // restarts: request fingerprints, POS submit links.
  Result<std::string> meta_key(std::string_view name) {
    auto got = store.get(Space::kMeta, name);
    if (!got) {
      return tl::unexpected(got.error());
    }
    if (*got) {
      return (*got)->value;
    }
    std::string key = crypto::random_bytes(32);
    auto put = store.commit_and_wait({{Space::kMeta, std::string(name), key, 0}});
    if (!put && put.error().code == ErrorCode::kConflict) {
      return meta_key(name);
    }
    if (!put) {
      return tl::unexpected(put.error());
    }
    return key;
  }
};

PaymentService::PaymentService(storage::Store& store, AcquirerRoutes& acquirers, CallbackTransport& transport,
                               ServiceOptions options)
    : impl_(std::make_unique<Impl>(store, acquirers, transport, std::move(options))) {}

PaymentService::PaymentService(storage::Store& store, domain::Acquirer& acquirer, CallbackTransport& transport,
                               ServiceOptions options)
    : impl_(std::make_unique<Impl>(store, std::make_unique<SingleAcquirer>(acquirer), transport,
                                   std::move(options))) {}

PaymentService::~PaymentService() { shutdown(); }

Status PaymentService::start(std::string public_url) {
  if (!public_url.empty()) {
    impl_->options.public_url = std::move(public_url);
  }
  auto key = impl_->meta_key(kFingerprintKeyName);
  auto pos_key = key ? impl_->meta_key(kPosLinkKeyName) : key;
  if (!pos_key) {
    return tl::unexpected(pos_key.error());
  }
  auto& ctx = impl_->context;
  ctx.store = &impl_->store;
  ctx.acquirers = &impl_->acquirers;
  ctx.core.fingerprint_key = std::move(*key);
  ctx.core.pos_link_key = std::move(*pos_key);
  ctx.idle_timeout = impl_->options.idle_timeout;
  ctx.transport = &impl_->transport;
  ctx.callbacks = impl_->options.callbacks;
  ctx.core.public_url = impl_->options.public_url;
  ctx.reconcile_base = impl_->options.reconcile_base;
  ctx.reconcile_attempts = impl_->options.reconcile_attempts;
  ctx.answer_deadline = impl_->options.answer_deadline;
  ctx.outbox = &impl_->outbox;
  ctx.repeats = &impl_->repeats;
  ctx.on_event = impl_->options.on_event;
  ctx.signer = impl_->options.signer;
  ctx.core.legacy_owner = impl_->options.legacy_owner;
  ctx.core.methods = impl_->options.methods;
  ctx.core.answers = impl_->options.answers;
  IDEMPAY_ASSERT(ctx.core.answers != nullptr, "ServiceOptions::answers is required");
  ctx.core.instance = impl_->options.instance;
  ctx.core.lease_ms = impl_->options.lease.count();
  ctx.sweep_interval = impl_->options.sweep_interval;
  ctx.follow_timeout = impl_->options.follow_timeout;
  ctx.status_polls_per_second = impl_->options.status_polls_per_second;
  impl_->config = std::make_unique<caf::actor_system_config>();
  size_t workers = impl_->options.workers > 0 ? static_cast<size_t>(impl_->options.workers)
                                              : std::max(1u, std::thread::hardware_concurrency());
  impl_->config->set("scheduler.max-threads", workers);
  // One shared queue whose idle workers block on a condition variable. CAF's default
  // work-stealing workers poll between jobs (spinning, then 50 us sleeps): on two cores shared
  // with the I/O threads and the committer that cost ~6% of the CPU per request. Its clock
  // is not woken by every actor that ends (scheduler.hpp).
  impl_->config->module_factories.push_back(make_scheduler);
  impl_->system = std::make_unique<caf::actor_system>(*impl_->config);
  impl_->directory = std::make_unique<Directory>(*impl_->system, &impl_->context);
  ctx.directory = impl_->directory.get();
  ctx.dispatcher = impl_->system->spawn(dispatcher_actor, &impl_->context);
  ctx.watcher = impl_->system->spawn(watcher_actor, &impl_->context);
  // Idle actors are offered retirement after a whole idle timeout of ticks without a message.
  // Short ticks spread retirements evenly: one tick per quarter timeout retired thousands of
  // actors at once, and the requests queued behind them saw a p99 of 45 ms.
  auto tick = std::clamp(ctx.idle_timeout / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(20));
  uint64_t idle_ticks = static_cast<uint64_t>((ctx.idle_timeout + tick - std::chrono::milliseconds(1)) / tick);
  impl_->sweeper = impl_->system->spawn(sweeper_actor, impl_->directory.get(), tick, std::max<uint64_t>(idle_ticks, 1));
  impl_->recovery = impl_->system->spawn(recovery_actor, &impl_->context);
  impl_->published.store(impl_->directory.get(), std::memory_order_release);  // last: all is set
  auto probed = std::make_shared<std::promise<void>>();
  impl_->probe_writes([probed] { probed->set_value(); });
  probed->get_future().wait_for(std::chrono::seconds(10));  // readiness knows before the first ask
  return {};
}

namespace {
// Before start() there is no directory: answer "retry later". After shutdown() the closed
// directory drops the command, whose sink then answers the same.
// `payment_id` refers into `command` (no copy of the id per request).
template <class Atom, class Command>
void route(Directory* directory, const std::string& payment_id, Atom atom, Command&& command) {
  if (!directory) {
    command.sink.deliver(
        refusal(Refusal::kUnavailable, "the payment engine is not running"));
    return;
  }
  directory->send(payment_id, atom, std::move(command));
}
}  // namespace

void PaymentService::create_payment(ppp::CreatePaymentRequest request, std::string merchant, ReplyFn reply,
                                    std::string repeat_key) {
  CreateCommand cmd{std::move(request), std::move(merchant), ReplySink(std::move(reply)), 0, std::move(repeat_key)};
  route(impl_->live(), cmd.request.payment_id, create_atom::value, std::move(cmd));
}

std::string PaymentService::repeat_key(std::string_view merchant, bool test_suite, std::string_view body) const {
  return impl_->repeats.key(merchant, test_suite, body);
}

std::optional<Reply> PaymentService::repeated_answer(const std::string& repeat_key) {
  Directory* directory = impl_->live();
  if (directory == nullptr) {
    return std::nullopt;
  }
  std::string due;
  auto answer = impl_->repeats.answer(repeat_key, now_unix_ms(), due);
  if (answer) {
    // Counted as it is answered, so that a scrape right after the answer sees it; its actor
    // records it in the audit trail and the event log at the next tick (on_repeats).
    metrics::count_event(domain::to_string(domain::AuditKind::kEventDuplicateReused));
  }
  if (!due.empty()) {
    directory->send_repeats(due);
  }
  return answer;
}

void PaymentService::forget_repeats() { impl_->repeats.forget_answers(); }

void PaymentService::operate(ppp::OperationRequest request, std::string merchant, ReplyFn reply) {
  OperateCommand cmd{std::move(request), std::move(merchant), ReplySink(std::move(reply))};
  route(impl_->live(), cmd.request.payment_id, operate_atom::value, std::move(cmd));
}

void PaymentService::ingest_event(AcquirerEvent event, ReplyFn reply) {
  EventCommand cmd{std::move(event), ReplySink(std::move(reply))};
  route(impl_->live(), cmd.event.payment_id, event_atom::value, std::move(cmd));
}

void PaymentService::refresh(std::string payment_id, std::string merchant, ReplyFn reply) {
  RefreshCommand cmd{std::move(payment_id), std::move(merchant), ReplySink(std::move(reply))};
  route(impl_->live(), cmd.payment_id, refresh_atom::value, std::move(cmd));
}

void PaymentService::hint_by_reference(std::string reference, std::string merchant, ReplyFn reply) {
  find_reference(
      std::move(reference),
      [this, merchant = std::move(merchant)](std::string payment_id, ReplyFn then) mutable {
        RefreshCommand cmd{std::move(payment_id), std::move(merchant), ReplySink(std::move(then)),
                           domain::Asker::kHint};
        route(impl_->live(), cmd.payment_id, refresh_atom::value, std::move(cmd));
      },
      std::move(reply));
}

void PaymentService::ingest_by_reference(std::string reference, AcquirerEvent event, ReplyFn reply) {
  find_reference(std::move(reference), [this, event = std::move(event)](std::string payment_id, ReplyFn then) mutable {
    event.payment_id = std::move(payment_id);
    ingest_event(std::move(event), std::move(then));
  }, std::move(reply));
}

void PaymentService::resume_refunds_by_reference(std::string reference, std::string merchant) {
  find_reference(
      std::move(reference),
      [this, merchant = std::move(merchant)](std::string payment_id, ReplyFn) mutable {
        // The operations in flight are the payment's keys in the recovery index.
        impl_->store.read_async([this, payment_id = std::move(payment_id),
                                 merchant = std::move(merchant)](storage::Store& store) mutable {
          auto keys = store.scan(domain::Space::kRecovery, domain::recovery_key(payment_id), 100);
          if (!keys) {
            return;  // the notification is sent again, or the gateway retries the refund
          }
          std::vector<std::string> operations;
          for (const auto& [key, unused] : *keys) {
            if (auto [id, request_id] = domain::parse_recovery_key(key);
                id == payment_id && !request_id.empty()) {
              operations.push_back(request_id);
            }
          }
          if (operations.empty()) {
            return;
          }
          // Nobody waits for an answer; the sink carries the notification's trace.
          RecoverCommand cmd{payment_id, std::move(operations), ReplySink([](Reply) {}), std::move(merchant)};
          route(impl_->live(), cmd.payment_id, recover_atom::value, std::move(cmd));
        });
      },
      [](Reply) {});
}

void PaymentService::find_reference(std::string reference, std::function<void(std::string, ReplyFn)> then,
                                    ReplyFn reply) {
  if (impl_->live() == nullptr) {
    return reply(refusal(Refusal::kUnavailable, "the payment engine is not running"));
  }
  // The store outlives the queued reads' use of the service: it is closed first (serve.cpp).
  impl_->store.read_async([reference = std::move(reference), then = std::move(then),
                           reply = std::move(reply)](storage::Store& store) mutable {
    auto found = store.get(domain::Space::kReferences, reference);
    if (!found) {
      return reply(domain::error_reply(found.error()));
    }
    if (!*found) {
      return reply(domain::unknown_payment(reference));
    }
    then(std::move((*found)->value), std::move(reply));
  });
}

std::string PaymentService::derive_key(std::string_view purpose) const {
  const std::string& secret = impl_->context.core.fingerprint_key;
  if (secret.empty()) {
    return {};
  }
  auto key = crypto::hmac_sha256(secret, "idempay derived key: " + std::string(purpose));
  return std::string(key.begin(), key.end());
}

void PaymentService::act_as_owner(std::string payment_id, std::string merchant, std::string what,
                                  std::function<bool(const std::string&)> act, ReplyFn reply) {
  OwnerActionCommand cmd{std::move(payment_id), std::move(merchant), std::move(what), std::move(act),
                         ReplySink(std::move(reply))};
  route(impl_->live(), cmd.payment_id, owner_atom::value, std::move(cmd));
}

void PaymentService::replay_delivery(std::string delivery_id, std::function<bool(const domain::OutboxEntry&)> visible,
                                     ReplyFn reply) {
  if (impl_->live() == nullptr) {
    return reply(refusal(Refusal::kUnavailable, "the payment engine is not running"));
  }
  caf::actor dispatcher = impl_->context.dispatcher;
  impl_->store.read_async([id = std::move(delivery_id), visible = std::move(visible), reply = std::move(reply),
                           dispatcher](storage::Store& store) {
    auto replayed = domain::replay_dead_letter(store, id, visible);
    if (!replayed) {
      const Error& e = replayed.error();
      return reply(e.code == ErrorCode::kConflict ? refusal(Refusal::kConflict, e.message)
                                                  : error_reply(e));
    }
    JsonWriter w;
    w.begin_object().key("deliveryId").string(replayed->id).key("paymentId").string(replayed->payment_id);
    w.key("status").string("pending").end_object();
    caf::anon_send(dispatcher, deliver_atom::value, std::move(*replayed));
    reply(Reply{Outcome::kDone, std::move(w).take()});
  });
}

void PaymentService::submit_terminal(std::string payment_id, std::string_view token, std::string serial,
                                     ReplyFn reply) {
  Directory* directory = impl_->live();
  if (directory != nullptr && !pos_link_token_matches(impl_->context.core.pos_link_key, payment_id, token)) {
    return reply(no_pos_payment(payment_id));
  }
  TerminalCommand cmd{std::move(payment_id), std::move(serial), ReplySink(std::move(reply))};
  route(impl_->live(), cmd.payment_id, terminal_atom::value, std::move(cmd));
}

void PaymentService::health(ReplyFn reply) {
  if (impl_->live() == nullptr) {
    return reply(refusal(Refusal::kUnavailable, "the payment engine is not running"));
  }
  // Nothing of the failure (a database's address) goes to an unauthenticated caller.
  // The transparency log's alarm rides along (an operator's check, not a load balancer's: the
  // status stays 200; the metric and the log line say more).
  std::string log = !impl_->options.log_consistent ? ""
                    : impl_->options.log_consistent() ? R"(,"log":"consistent")"
                                                      : R"(,"log":"inconsistent")";
  auto answer = [instance = impl_->context.core.instance, log](bool ok) {
    return ok ? Reply{Outcome::kDone, R"({"status":"ok","instance":")" + instance + "\"" + log + "}"}
              : refusal(Refusal::kStoreUnavailable, "the store does not answer");
  };
  auto state = impl_->health;
  bool fresh = now_unix_ms() - state->checked_at.load() < HealthState::kHealthFresh;
  if (fresh || state->checking.exchange(true)) {
    return reply(answer(state->ok.load()));
  }
  impl_->store.read_async([reply = std::move(reply), state, answer](storage::Store& store) {
    auto read = store.get(Space::kMeta, kFingerprintKeyName);
    static LogGate gate(std::chrono::seconds(10));
    if (!read && gate.open()) {
      spdlog::warn("health: the store does not answer: {}", read.error().message);
    }
    state->ok = read.has_value();
    state->checked_at = now_unix_ms();
    state->checking = false;
    reply(answer(read.has_value()));
  });
}

// Readiness: started, not draining, and the store takes a synced write (a full disk or a
// failing database says no). The answer never waits for the store: it is the last probe's
// result (one probe in flight at most, a new one once the last is a second old, each instance
// writing a key of its own), and a probe unanswered for two seconds counts as a no. start()
// makes the first probe, so that the first answer is already known.
void PaymentService::Impl::probe_writes(std::function<void()> then) {
  auto state = writable;
  bool fresh = now_unix_ms() - state->checked_at.load() < HealthState::kHealthFresh;
  if (fresh || state->checking.exchange(true)) {
    return then ? then() : void();
  }
  state->started_at = now_unix_ms();
  std::string key = "health-probe/" + (options.instance.empty() ? "local" : options.instance);
  storage::Batch probe{{Space::kMeta, std::move(key), std::to_string(now_unix_ms()), std::nullopt, true}};
  store.commit(std::move(probe), [state, then = std::move(then)](const storage::CommitResult& committed) {
    static LogGate gate(std::chrono::seconds(10));  // each probe fails alike during an outage
    if (!committed && gate.open()) {
      spdlog::warn("readiness: the store does not take writes: {}", committed.error().message);
    }
    state->ok = committed.has_value();
    state->checked_at = now_unix_ms();
    state->checking = false;
    if (then) {
      then();
    }
  });
}

void PaymentService::readiness(ReplyFn reply) {
  if (impl_->live() == nullptr) {
    return reply(refusal(Refusal::kStarting, "the payment engine is not running"));
  }
  if (impl_->draining.load()) {
    return reply(refusal(Refusal::kDraining, "this instance is shutting down"));
  }
  impl_->probe_writes(nullptr);
  const auto& state = *impl_->writable;
  bool stuck = state.checking.load() && now_unix_ms() - state.started_at.load() > HealthState::kProbeLimit;
  reply(state.ok.load() && !stuck
            ? Reply{Outcome::kDone, R"({"status":"ready","instance":")" + impl_->options.instance + R"("})"}
            : refusal(Refusal::kStoreNotWritable, "no writable database: the store does not take writes"));
}

void PaymentService::begin_drain() { impl_->draining = true; }

std::pair<int64_t, int64_t> PaymentService::outbox_backlog() const {
  return {impl_->outbox.pending.load(std::memory_order_relaxed),
          impl_->outbox.oldest_created_ms.load(std::memory_order_relaxed)};
}

// Arrivals answered from the repeat cache reach their payments' trails before the actors stop.
void PaymentService::settle_repeats() {
  impl_->repeats.close();
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!impl_->repeats.settled()) {
    if (std::chrono::steady_clock::now() > give_up) {
      spdlog::warn("stopping with repeated Create Payments not yet in their audit trails");
      return;
    }
    impl_->directory->send_due_repeats();  // again for those whose record could not be read
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

size_t PaymentService::live_actors() {
  Directory* directory = impl_->live();
  return directory ? directory->size() : 0;
}

void PaymentService::shutdown() {
  if (!impl_->system || impl_->stopped) {
    return;
  }
  impl_->stopped = true;
  settle_repeats();
  impl_->directory->close(caf::exit_reason::user_shutdown);
  caf::anon_send_exit(impl_->sweeper, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(impl_->recovery, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(impl_->context.dispatcher, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(impl_->context.watcher, caf::exit_reason::user_shutdown);
  // Payment actors read the context's dispatcher handle until they are gone: it is released
  // only then (a message to the stopped dispatcher is dropped; its outbox entry is durable).
  impl_->system->await_all_actors_done();
  impl_->sweeper = nullptr;
  impl_->recovery = nullptr;
  impl_->context.dispatcher = nullptr;
  impl_->context.watcher = nullptr;
}

}  // namespace idempay::actors
