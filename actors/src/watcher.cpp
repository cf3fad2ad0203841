// The watcher: asks the acquirer what became of each pending payment it watches (an API Pix
// charge, whose status call says when it is paid), so that the outcome is known within
// seconds even when the acquirer's notification never comes (no webhook registered, or down).
// Each look is a refresh of the payment through its actor (which asks the acquirer at most
// once a second); looks come every 2 s in a payment's first minute, every 5 s until five
// minutes, every 15 s until fifteen, then every 30 s, until the watch's end (the document's
// expiry and a grace); and at most `status_polls_per_second` looks a second go to one acquirer
// entry, the rest waiting their turn in order. The watch index is read at start; the payment
// actors announce new watches once they are durable.
#include <deque>
#include <map>

#include <spdlog/spdlog.h>

#include "directory.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/records.hpp"

namespace idempay::actors {

namespace {

constexpr std::chrono::milliseconds kTick{250};

int64_t interval_ms(int64_t age_ms) {
  return age_ms < 60'000 ? 2'000 : age_ms < 300'000 ? 5'000 : age_ms < 900'000 ? 15'000 : 30'000;
}

// A payment still pending, as its refresh answered: its Create Payment answer says undefined.
bool still_pending(const Reply& reply) {
  if (reply.outcome != Outcome::kDone) {
    return reply.outcome != Outcome::kNotFound;  // not known now (retry): ask again later
  }
  auto answer = JsonValue::parse(reply.body);
  return answer && answer->string_or("status") == "undefined";
}

class Watcher : public std::enable_shared_from_this<Watcher> {
public:
  Watcher(caf::event_based_actor* self, const ActorContext& ctx) : self_(self), ctx_(ctx) {}

  caf::behavior behavior() {
    auto me = shared_from_this();
    me->read_index();
    return {
        [me](watch_atom, Watch& w) { me->watch(std::move(w), now_unix_ms() + interval_ms(0)); },
        [me](tick_atom) { me->on_tick(); },
        [me](resume_atom, Continuation& step) { step.run(); },
        [me](count_atom) { return static_cast<uint64_t>(me->watched_.size()); },
    };
  }

private:
  struct Entry {
    int64_t since = 0;  ///< when this instance began watching it
    int64_t until = 0;
    std::string acquirer;
  };
  struct Bucket {
    double tokens = 0;
    int64_t refilled_ms = 0;
    std::deque<std::string> ready;  ///< due, waiting for a look of this acquirer's
  };

  // Read on a store reader thread: the actor shares its worker with the payment actors.
  void read_index() {
    auto back = in_actor<std::vector<Watch>>(self_, [me = shared_from_this()](std::vector<Watch> found) {
      int64_t now = now_unix_ms();
      if (!found.empty()) {
        spdlog::info("watcher: {} pending payments to look at with their acquirers", found.size());
      }
      for (size_t i = 0; i < found.size(); ++i) {
        me->watch(std::move(found[i]), now + static_cast<int64_t>(i % 8) * kTick.count());  // spread out
      }
    });
    ctx_.store->read_async([back](storage::Store& store) {
      std::vector<Watch> out;
      auto rows = store.scan(Space::kWatches, "", SIZE_MAX);
      if (!rows) {
        spdlog::error("watcher: cannot read the watch index: {}", rows.error().message);
        return back(std::move(out));
      }
      for (const auto& [id, value] : *rows) {
        if (auto w = decode_watch(id, value.value)) {
          out.push_back(std::move(*w));
        }
      }
      back(std::move(out));
    });
  }

  void watch(Watch w, int64_t due) {
    auto [at, added] = watched_.try_emplace(w.payment_id, Entry{now_unix_ms(), w.until, w.acquirer});
    if (!added) {
      at->second.until = w.until;
      return;  // already due, waiting or in flight
    }
    due_.emplace(due, w.payment_id);
    keep_ticking();
  }

  void keep_ticking() {
    if (!ticking_ && !watched_.empty()) {
      ticking_ = true;
      self_->delayed_send(self_, kTick, tick_atom::value);
    }
  }

  void on_tick() {
    ticking_ = false;
    int64_t now = now_unix_ms();
    while (!due_.empty() && due_.begin()->first <= now) {
      std::string id = std::move(due_.begin()->second);
      due_.erase(due_.begin());
      auto it = watched_.find(id);
      if (it != watched_.end()) {
        buckets_[it->second.acquirer].ready.push_back(std::move(id));
      }
    }
    double rate = std::max(1, ctx_.status_polls_per_second);
    for (auto& [acquirer, bucket] : buckets_) {
      bucket.tokens =
          std::min(rate, bucket.tokens + static_cast<double>(now - bucket.refilled_ms) * rate / 1000);
      bucket.refilled_ms = now;
      while (bucket.tokens >= 1 && !bucket.ready.empty()) {
        bucket.tokens -= 1;
        look(std::move(bucket.ready.front()));
        bucket.ready.pop_front();
      }
    }
    keep_ticking();
  }

  // One look: the payment's actor asks its acquirer (a refresh of the connector's own), then
  // the answer decides whether to look again.
  void look(std::string id) {
    auto back = in_actor<Reply>(self_, [me = shared_from_this(), id](Reply reply) { me->looked(id, reply); });
    RefreshCommand cmd{id, {}, ReplySink(std::move(back)), Asker::kConnector};
    if (!ctx_.directory->send(cmd.payment_id, refresh_atom::value, std::move(cmd))) {
      watched_.erase(id);  // stopping
    }
  }

  void looked(const std::string& id, const Reply& reply) {
    auto it = watched_.find(id);
    if (it == watched_.end()) {
      return;
    }
    int64_t now = now_unix_ms();
    if (!still_pending(reply) || now >= it->second.until) {
      watched_.erase(it);  // decided, unknown, or past its document's end: nothing left to ask
      return;
    }
    due_.emplace(now + interval_ms(now - it->second.since), id);
  }

  caf::event_based_actor* self_;
  const ActorContext& ctx_;
  std::map<std::string, Entry> watched_;     // every payment watched, due or in flight
  std::multimap<int64_t, std::string> due_;  // when each is looked at next
  std::map<std::string, Bucket> buckets_;    // by acquirer entry ("{owner}/{route}")
  bool ticking_ = false;
};

}  // namespace

caf::behavior watcher_actor(caf::event_based_actor* self, const ActorContext* context) {
  return std::make_shared<Watcher>(self, *context)->behavior();
}

}  // namespace idempay::actors
