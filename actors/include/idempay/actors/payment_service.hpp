#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "idempay/domain/acquirer.hpp"
#include "idempay/domain/acquirer_events.hpp"
#include "idempay/domain/audit.hpp"
#include "idempay/domain/outbox.hpp"
#include "idempay/domain/payment_core.hpp"
#include "idempay/base/error.hpp"
#include "idempay/protocol/ppp.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::actors {

/// The callback retry policy and an attempt's result are the domain's (domain/outbox.hpp), and
/// so are an answer and an acquirer's event (domain/payment_core.hpp).
using domain::AcquirerEvent;
using domain::CallbackOptions;
using domain::CallbackResult;
using domain::Outcome;
using domain::Reply;

using ReplyFn = std::function<void(Reply)>;

/// One callback attempt as the dispatcher hands it to the transport.
struct CallbackAttempt {
  std::string delivery_id;  ///< stable across retries: the Standard Webhooks `webhook-id`
  std::string merchant;     ///< the payment's owner (empty: stored before owners)
  std::string url;          ///< the payment's callbackUrl, exactly as received
  std::string body;         ///< the updated Create Payment answer
};

/// Sends callbacks (implemented over HTTP in app/). Must call back exactly once, any thread.
class CallbackTransport {
public:
  virtual ~CallbackTransport() = default;
  virtual void send(CallbackAttempt attempt, std::function<void(CallbackResult)> done) = 0;
};

/// Which acquirer each payment goes to: merchants may have their own (implemented in app/).
class AcquirerRoutes {
public:
  virtual ~AcquirerRoutes() = default;
  /// The route a new payment of `merchant` by `method` takes; `test_suite` for one created by
  /// the gateway's homologation suite, which must never reach an acquirer that moves money. It
  /// is stored with the payment, which keeps its acquirer (operations and status calls
  /// included) when the configuration changes later. Empty: the default acquirer.
  virtual std::string route_for(const std::string& merchant, const std::string& method, bool test_suite) = 0;
  /// The acquirer a stored route names, called with `merchant`'s credentials there.
  virtual domain::Acquirer& acquirer(const std::string& route, const std::string& merchant) = 0;
};

struct ServiceOptions {
  /// A payment actor with nothing to do for this long is passivated. Default: 5 s
  std::chrono::milliseconds idle_timeout{5'000};
  /// CAF worker threads; 0 means one per core (CAF's own default, at least 4, polls with
  /// its idle workers: on 2 cores that cost 10% of the throughput and doubled the p99). Default: 0
  int workers = 0;
  CallbackOptions callbacks;
  /// Base URL the shopper's devices reach this service at (POS submitUrl). Default: none
  std::string public_url;
  /// Background reconciliation of an unknown outcome: first retry after this, then doubling.
  /// Default: 1 s
  std::chrono::milliseconds reconcile_base{1'000};
  /// Failed status calls before the record is marked orphaned. Default: 5
  int reconcile_attempts = 5;
  /// A Create Payment still waiting for the acquirer after this long is answered `undefined`
  /// and its outcome follows by callback (the gateway's homologation suite allows 5 s).
  /// 0: it waits for the acquirer call's own timeout. Default: 0
  std::chrono::milliseconds answer_deadline{0};
  /// The merchant that owns payments stored before owners were recorded. Default: none
  std::string legacy_owner;
  /// Each offered method's split mode and Create Payment timers. Default: none (defaults)
  std::map<std::string, ppp::MethodTerms, std::less<>> methods;
  /// Several instances share the store: this one's unique name (leases, callback claims).
  /// Empty: the only instance (RocksDB). Default: empty
  std::string instance;
  /// Whether the transparency log this instance co-signs is consistent with what it signed
  /// before: /health says "log":"consistent" or "log":"inconsistent". None: not said.
  std::function<bool()> log_consistent;
  /// Shared stores: how long a lease or a callback claim keeps the other instances away;
  /// longer than the acquirer's and the callback's timeouts. Default: 30 s
  std::chrono::milliseconds lease{30'000};
  /// Shared stores: how often the recovery index and the outbox are swept for work a dead
  /// instance left. Default: 5 s
  std::chrono::milliseconds sweep_interval{5'000};
  /// Shared stores: how long a request waits for another instance's outcome before it
  /// answers "undefined" (Create Payment) or a 500 in-progress (an operation). Default: 4.5 s (within the gateway's 5 s)
  std::chrono::milliseconds follow_timeout{4'500};
  /// A pending payment whose acquirer's status call tells its outcome (API Pix) is asked on a
  /// schedule until its document expires: at most this many looks a second per acquirer entry
  /// (a merchant's named acquirer), the rest waiting their turn. Default: 20
  int status_polls_per_second = 20;
  /// Writes the answers the engine stores with the state they describe (the PPP library's
  /// answers::PppAnswers); must outlive the service. Required.
  const domain::AnswerEncoder* answers = nullptr;
  /// Sees every payment event (the audit trail's entries, duplicates included) as an actor
  /// records it, on the actor's worker: it must be quick and never block. Default: none
  std::function<void(const std::string& payment_id, const domain::AuditEntry& event)> on_event;
  /// The key id every audit entry names as its signature status, kept current by the owner
  /// across key rotations. None: entries are unsigned. Default: none
  const domain::AuditSigner* signer = nullptr;
};

/// The payment engine: one CAF actor per paymentId, spawned on demand and passivated when
/// idle, persisting every transition (with etag compare-and-swap) before and after each
/// acquirer call. Replies arrive through the ReplyFn, on a CAF thread, exactly once; if the
/// engine stops first, the reply is 503.
class PaymentService final : public domain::AcquirerEvents {
public:
  /// `store`, `acquirers` and `transport` must outlive the service.
  PaymentService(storage::Store& store, AcquirerRoutes& acquirers, CallbackTransport& transport,
                 ServiceOptions options);
  /// Every payment goes to `acquirer`.
  PaymentService(storage::Store& store, domain::Acquirer& acquirer, CallbackTransport& transport,
                 ServiceOptions options);
  ~PaymentService() override;
  PaymentService(const PaymentService&) = delete;
  PaymentService& operator=(const PaymentService&) = delete;

  /// Loads or creates the fingerprint key and starts the actors. Blocking; call once.
  /// `public_url` overrides ServiceOptions::public_url when not empty. Until it returns,
  /// requests are answered 503.
  Status start(std::string public_url = {});

  /// `merchant` is the authenticated caller: a new payment is theirs, and another merchant's
  /// payment answers as if it did not exist (a Create Payment with its id: payment-conflict,
  /// the same answer as a different payment of one's own; anything else: 404).
  /// `repeat_key`: the request's repeat_key(), so that once the payment is resolved a repeat of
  /// these very bytes is answered by repeated_answer(); empty: never.
  void create_payment(ppp::CreatePaymentRequest request, std::string merchant, ReplyFn reply,
                      std::string repeat_key = {});
  /// The key of a Create Payment's exact request: its sender, the homologation suite's mark and
  /// a keyed hash of its body (the body itself is never kept).
  std::string repeat_key(std::string_view merchant, bool test_suite, std::string_view body) const;
  /// The answer to a repeat of a Create Payment whose payment is resolved, given on the
  /// caller's thread without the payment's actor or the store; the arrival still reaches the
  /// payment's audit trail (within a tick of the directory). nullopt: not known here, ask
  /// create_payment. Only requests already answered once by the payment's actor are known.
  std::optional<Reply> repeated_answer(const std::string& repeat_key);
  /// Forgets the answers repeated_answer() gives (the merchants' settings changed): the next
  /// repeat of each goes through create_payment again.
  void forget_repeats();
  void operate(ppp::OperationRequest request, std::string merchant, ReplyFn reply);

  /// Applies a verified acquirer webhook through the payment's actor, with an inbox keyed by
  /// event id: 200 when applied, ignored as stale, or a duplicate with the same body; 409 for
  /// the same id with a different body; 404 for an unknown payment; 5xx on storage failure.
  void ingest_event(AcquirerEvent event, ReplyFn reply);
  /// The same for an event that names the payment only as its acquirer knows it (`reference`,
  /// domain::Acquirer::reference): kNotFound for a reference never indexed.
  void ingest_by_reference(std::string reference, AcquirerEvent event, ReplyFn reply) override;

  /// Asks the acquirer for the payment's authorization and applies a final outcome (the PPP
  /// inbound route's content is only a hint). Replies with the current Create Payment answer.
  void refresh(std::string payment_id, std::string merchant, ReplyFn reply);
  /// The same for the payment an acquirer knows by `reference` (domain::Acquirer::reference),
  /// named by an unauthenticated notification whose path names `merchant` (API Pix): only that
  /// merchant's payments are looked up, and the trail records an unauthenticated hint, never
  /// the merchant as the one who asked. kNotFound for a reference never indexed or another
  /// merchant's payment.
  void hint_by_reference(std::string reference, std::string merchant, ReplyFn reply) override;
  /// An unauthenticated notification says that a refund of that payment may have ended (API
  /// Pix: a devolucao): if `merchant` owns it, its operations still in flight are asked of the
  /// acquirer again under their own keys (at most once a second), and recorded done once it says
  /// so. Nothing happens for an unknown reference or another merchant's payment.
  void resume_refunds_by_reference(std::string reference, std::string merchant) override;

  /// An action on the payment's acquirer side that only the payment's owner may ask for (the
  /// in-process stub's trigger): `act` runs on the payment's actor once `merchant` is known to
  /// own the payment, and the audit trail records who asked for `what`. kDone when `act` says
  /// it acted, kConflict when not; an unknown payment or another merchant's: kNotFound, the
  /// same answer, and `act` never runs.
  void act_as_owner(std::string payment_id, std::string merchant, std::string what,
                    std::function<bool(const std::string& payment_id)> act, ReplyFn reply);

  /// An operator's replay of a dead letter, with the connector running: back in the outbox
  /// under the same delivery id (webhook-id), handed to the dispatcher at once. kNotFound for
  /// no such dead letter or one `visible` refuses (another merchant's), kConflict for one still
  /// pending, kRetry on a storage failure. The body: {"deliveryId":...,"paymentId":...,"status":"pending"}.
  void replay_delivery(std::string delivery_id, std::function<bool(const domain::OutboxEntry&)> visible,
                       ReplyFn reply);

  /// POS: records the terminal that will take the card (identify-terminal phase only). `token`
  /// is the one the payment's submitUrl carries; without the right one the answer is the
  /// same 404 as for a payment that does not exist, and the payment is not even looked up.
  void submit_terminal(std::string payment_id, std::string_view token, std::string serial, ReplyFn reply);

  /// For a load balancer's health check: kDone once started and the store answers a read
  /// (off the caller's thread), kRetry otherwise. The body names this instance.
  void health(ReplyFn reply);

  /// For a load balancer's readiness check: kDone once started, while not draining and while
  /// the store takes a write (a small synced write at most once a second, one in flight);
  /// kRetry otherwise. Liveness needs nothing from here: the process answers.
  void readiness(ReplyFn reply);

  /// Readiness answers kRetry from now on (SIGTERM: the load balancer stops sending first).
  void begin_drain();

  /// A 32-byte key for `purpose`, derived from the service's own secret (kept in the store:
  /// the same for every instance that shares it); empty before start().
  std::string derive_key(std::string_view purpose) const;

  /// Number of live payment actors.
  size_t live_actors();

  /// Callback deliveries waiting in this instance's outbox, and the creation time (Unix ms)
  /// of the oldest (0: none). Cheap; for the metrics.
  std::pair<int64_t, int64_t> outbox_backlog() const;

  /// Stops every actor and waits for them. Commits already handed to the store still land.
  void shutdown();

private:
  // The paymentId indexed under `reference`, handed to `then` with `reply`; unknown ones are
  // answered as an unknown payment.
  void find_reference(std::string reference, std::function<void(std::string, ReplyFn)> then, ReplyFn reply);
  void settle_repeats();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idempay::actors
