// The outbox dispatcher: delivers every durable outbox entry to its callbackUrl, retries with
// jittered exponential backoff, keeps at most N attempts in flight per host, and moves what
// cannot be delivered to the dead letters. On start it resumes every entry left in the outbox.
// Instances sharing the store claim an entry before each attempt (a compare-and-swap of the
// entry with this instance's name and an expiry), so that one instance at a time attempts it,
// and sweep the outbox every sweep_interval for entries a dead instance's claim no longer holds.
#include <deque>
#include <map>
#include <random>
#include <set>

#include <spdlog/spdlog.h>

#include "idempay/base/log_gate.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/metrics/metrics.hpp"
#include "idempay/base/fault.hpp"
#include "directory.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::actors {

namespace {

using storage::Keyspace;

std::string host_of(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.find_first_of("/?#", start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

class Dispatcher : public std::enable_shared_from_this<Dispatcher> {
public:
  Dispatcher(caf::event_based_actor* self, const ActorContext& ctx)
      : self_(self), ctx_(ctx), random_(std::random_device{}()) {}

  caf::behavior behavior() {
    auto me = shared_from_this();
    me->resume_outbox();
    return {
        [me](deliver_atom, OutboxEntry& entry) { me->add(std::move(entry)); },
        [me](tick_atom) { me->pump(); },
        [me](sweep_atom) { me->resume_outbox(); },
        [me](resume_atom, Continuation& step) { step.run(); },
        [me](count_atom) { return static_cast<uint64_t>(me->pending_.size()); },
    };
  }

private:
  // Read on a store reader thread: the outbox may be long, and this actor shares its worker
  // with the payment actors. Entries announced meanwhile are added once (add() ignores a
  // known id).
  void resume_outbox() {
    auto back = in_actor<std::vector<OutboxEntry>>(self_, [me = shared_from_this()](std::vector<OutboxEntry> entries) {
      for (auto& entry : entries) {
        me->add(std::move(entry));
      }
      if (me->ctx_.core.shared()) {
        me->self_->delayed_send(me->self_, me->ctx_.sweep_interval, sweep_atom::value);
      }
    });
    ctx_.store->read_async([back](storage::Store& store) { back(read_outbox(store)); });
  }

  static std::vector<OutboxEntry> read_outbox(storage::Store& store) {
    std::vector<OutboxEntry> out;
    auto entries = store.scan(Space::kOutbox, "", SIZE_MAX);
    if (!entries) {
      static LogGate gate(std::chrono::seconds(10));  // every sweep fails alike during an outage
      if (gate.open()) {
        spdlog::error("cannot read the outbox (said once per 10 s while it lasts): {}", entries.error().message);
      }
      return out;
    }
    for (auto& [key, versioned] : *entries) {
      auto entry = decode_outbox(versioned.value);
      if (entry) {
        out.push_back(std::move(*entry));
      } else {
        spdlog::error("outbox entry {} unreadable: {}", key, entry.error().message);
      }
    }
    if (!out.empty()) {
      spdlog::debug("{} callback deliveries pending in the outbox", out.size());
    }
    return out;
  }

  void add(OutboxEntry entry) {
    if (pending_.count(entry.id) != 0) {
      return;  // already known (replayed twice, or resumed and announced)
    }
    schedule_.emplace(entry.next_attempt_at, entry.id);
    created_.insert(entry.created_at);
    pending_.emplace(entry.id, std::move(entry));
    publish();
    pump();
  }

  // Moves what is due to its host's ready queue, starts every attempt the per-host limit
  // allows, then arms the timer for the next entry not yet due. Entries held back by the
  // limit wait in their queue, so the cost per call does not grow with the backlog.
  void pump() {
    int64_t now = now_unix_ms();
    while (!schedule_.empty() && schedule_.begin()->first <= now) {
      const std::string& id = schedule_.begin()->second;
      ready_[host_of(pending_.at(id).url)].push_back(id);
      schedule_.erase(schedule_.begin());
    }
    for (auto host = ready_.begin(); host != ready_.end();) {
      auto& queue = host->second;
      int& in_flight = in_flight_[host->first];
      while (!queue.empty() && in_flight < ctx_.callbacks.max_per_destination) {
        ++in_flight;
        attempt(pending_.at(queue.front()));
        queue.pop_front();
      }
      host = queue.empty() ? ready_.erase(host) : std::next(host);
    }
    arm_timer(now);
  }

  void arm_timer(int64_t now) {
    if (schedule_.empty()) {
      return;
    }
    int64_t due = std::max(schedule_.begin()->first, now + 1);
    if (timer_due_ > now && timer_due_ <= due) {
      return;  // a tick is already on its way
    }
    timer_due_ = due;
    self_->delayed_send(self_, std::chrono::milliseconds(due - now), tick_atom::value);
  }

  void attempt(const OutboxEntry& entry) {
    if (ctx_.core.shared()) {
      return claim(entry.id);
    }
    send(entry);
  }

  // Reads the entry as stored (another instance may have delivered, rescheduled or claimed
  // it), then claims it with a compare-and-swap; only the winner attempts.
  void claim(const std::string& id) {
    auto back = in_actor<Result<std::optional<storage::Versioned>>>(
        self_, [me = shared_from_this(), id](Result<std::optional<storage::Versioned>> got) { me->on_read(id, got); });
    ctx_.store->read_async([back, id](storage::Store& store) { back(store.get(Space::kOutbox, id)); });
  }

  void on_read(const std::string& id, const Result<std::optional<storage::Versioned>>& got) {
    int64_t now = now_unix_ms();
    auto stored = got && *got ? decode_outbox((*got)->value) : Result<OutboxEntry>(tl::unexpected(Error{}));
    if (!stored || !claimable(*stored, ctx_.core.instance, now)) {
      return let_go(id);  // gone, rescheduled or claimed elsewhere: the sweep brings it back if due
    }
    OutboxEntry claimed = *stored;
    claimed.claim_owner = ctx_.core.instance;
    claimed.claim_until = now + ctx_.core.lease_ms;
    auto back = in_actor<storage::CommitResult>(self_, [me = shared_from_this(), claimed](storage::CommitResult r) {
      if (!r) {
        return me->let_go(claimed.id);
      }
      me->etags_[claimed.id] = r->front();
      me->pending_[claimed.id] = claimed;
      me->send(claimed);
    });
    ctx_.store->commit({{Space::kOutbox, id, encode(claimed), (*got)->etag}}, back);
  }

  // Another instance has this entry: forget it here.
  void let_go(const std::string& id) {
    auto found = pending_.find(id);
    if (found != pending_.end()) {
      --in_flight_[host_of(found->second.url)];
      forget(found);
    }
    etags_.erase(id);
    pump();
  }

  // Under this instance's claim, if shared: the entry's bookkeeping write is conditioned on it.
  std::optional<uint64_t> claimed_etag(const std::string& id) {
    auto found = etags_.find(id);
    if (found == etags_.end()) {
      return std::nullopt;
    }
    auto etag = found->second;
    etags_.erase(found);
    return etag;
  }

  // Each attempt is a span of the payment's trace (the entry's), and the callback carries it.
  void send(const OutboxEntry& entry) {
    auto id = entry.id;
    auto trace = tracing::parse_traceparent(entry.trace).value_or(tracing::TraceContext{});
    trace.trace_state = tracing::valid_tracestate(entry.trace_state);  // checked again: it is read from the store
    auto span = std::make_shared<tracing::Span>(tracing::start_span("callback delivery", tracing::Kind::kInternal, trace));
    if (span->recording()) {
      span->set("idempay.payment_id", entry.payment_id).set("idempay.merchant", entry.merchant);
      span->set("idempay.delivery_id", entry.id).set("idempay.callback.attempt", int64_t{entry.attempts} + 1);
    }
    tracing::Scope scope(span->context());
    ctx_.transport->send(CallbackAttempt{entry.id, entry.merchant, entry.url, entry.body},
                         in_actor<CallbackResult>(self_, [me = shared_from_this(), id, span](CallbackResult r) {
                           if (span->recording()) {
                             span->set("http.response.status_code", int64_t{r.status});
                             if (r.status < 200 || r.status >= 300) {
                               span->fail(r.status == 0 ? "no answer" : std::to_string(r.status));
                             }
                           }
                           span->end();
                           me->on_result(id, std::move(r));
                         }));
  }

  void on_result(const std::string& id, CallbackResult result) {
    auto found = pending_.find(id);
    if (found == pending_.end()) {
      return;
    }
    // The receiver may have the callback already; dying here must lead to a redelivery with
    // the same webhook-id, never to a lost callback.
    fault::crash_point("during-callback");
    OutboxEntry entry = found->second;
    --in_flight_[host_of(entry.url)];
    ++entry.attempts;
    entry.last_status = result.status;
    entry.last_error = result.status == 0 ? result.error.message : std::string();
    entry.claim_owner.clear();  // the attempt is over: the next one is claimed again
    entry.claim_until = 0;
    auto etag = claimed_etag(id);
    if (result.status >= 200 && result.status < 300) {
      metrics::count_callback_attempt("delivered");
      forget(found);
      ctx_.directory->send(entry.payment_id, notified_atom::value, NotifiedCommand{entry.payment_id, id, result.status});
      record({{Space::kOutbox, id, std::nullopt, etag}}, id, "delivered");
      return pump();
    }
    FailureKind kind = classify(result);
    int64_t now = now_unix_ms();
    auto delay = retry_delay(ctx_.callbacks, entry.attempts, kind, result.retry_after_seconds, random_);
    bool window_over = now + delay.count() > entry.created_at + ctx_.callbacks.retry_window.count();
    if (kind == FailureKind::kPermanent || window_over) {
      entry.dead_reason = kind == FailureKind::kPermanent ? "permanent failure" : "retry window exhausted";
      spdlog::warn("callback {} for payment {} is a dead letter after {} attempts: {} {}", id, entry.payment_id,
                   entry.attempts, entry.last_status, entry.last_error);
      metrics::count_callback_attempt("dead");
      forget(found);
      record({{Space::kOutbox, id, std::nullopt, etag},
              {Space::kDeadLetters, id, encode(entry), std::nullopt}},
             id, "dead letter");
      return pump();
    }
    metrics::count_callback_attempt("retry");
    entry.next_attempt_at = now + delay.count();
    found->second = entry;
    schedule_.emplace(entry.next_attempt_at, id);
    // Best effort: if this bookkeeping write is lost, a restart retries sooner, never never.
    record({{Space::kOutbox, id, encode(entry), etag}}, id, "next attempt");
    pump();
  }

  void forget(std::map<std::string, OutboxEntry>::iterator found) {
    created_.erase(created_.find(found->second.created_at));
    pending_.erase(found);
    publish();
  }

  // For the metrics: read by the scraping thread.
  void publish() {
    ctx_.outbox->pending.store(static_cast<int64_t>(pending_.size()), std::memory_order_relaxed);
    ctx_.outbox->oldest_created_ms.store(created_.empty() ? 0 : *created_.begin(), std::memory_order_relaxed);
  }

  // The dispatcher's own bookkeeping: nobody waits for it, and a write lost to a storage
  // failure only means a redelivery (same webhook-id) after a restart; it is logged.
  void record(storage::Batch batch, const std::string& id, const char* what) {
    ctx_.store->commit(std::move(batch), [id, what](storage::CommitResult r) {
      if (!r) {
        spdlog::warn("callback {}: could not record '{}' ({}); a restart delivers it again", id, what,
                     r.error().message);
      }
    });
  }

  caf::event_based_actor* self_;
  const ActorContext& ctx_;
  std::mt19937_64 random_;
  std::map<std::string, OutboxEntry> pending_;
  std::multiset<int64_t> created_;  // the pending entries' creation times (Unix ms)
  std::multimap<int64_t, std::string> schedule_;             // not yet due
  std::map<std::string, std::deque<std::string>> ready_;     // due, by host, oldest first
  std::map<std::string, int> in_flight_;
  std::map<std::string, uint64_t> etags_;  // shared stores: entries claimed here, at their claimed version
  int64_t timer_due_ = 0;
};

}  // namespace

caf::behavior dispatcher_actor(caf::event_based_actor* self, const ActorContext* context) {
  return std::make_shared<Dispatcher>(self, *context)->behavior();
}

}  // namespace idempay::actors
