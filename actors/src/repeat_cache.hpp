#pragma once
// Gateways retry a Create Payment until they like the answer, and POS terminals poll with it:
// most Create Payments a busy connector sees are repeats of a payment already resolved. A
// resolved payment's Create Payment answer never changes (its owner, fingerprint and answer are
// fixed once its state is; operations change the state, never that answer), so the request
// thread may give it without the payment's actor, its worker thread or the store: a repeat
// then costs little more than its HTTP exchange.
//
// An entry is keyed by the exact request: the merchant that sent it, the homologation suite's
// mark and a keyed hash of its body. Only requests the payment's actor answered with the
// stored answer of the resolved payment are ever keyed (the one that resolved it, and repeats:
// the actor remembers them), so the cached answer is the one the actor would give again. The key is an HMAC under a random key that lives in memory only: the body
// may hold card data, and neither it nor an unkeyed hash of it is kept.
//
// Each arrival answered here is still accounted for (G5): it waits, with its time, until the
// directory's next tick (or until kBatch of one payment's wait) and the payment's actor then
// records it in the payment's audit trail as it records a repeat it answered itself.
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "idempay/domain/payment_core.hpp"

namespace idempay::actors {

class RepeatCache {
public:
  /// An arrival answered from the cache, for the payment's audit trail.
  struct Arrival {
    int64_t time = 0;  ///< Unix ms
    std::string merchant;
    std::string fingerprint;
  };
  /// One payment's arrivals wait for its actor once this many have come.
  static constexpr size_t kBatch = 32;

  /// At most `capacity` answers are kept, the oldest remembered going first, and at most
  /// `max_waiting` arrivals wait for their trails: past that (their actors cannot record them,
  /// the store being out of reach) nothing is answered here, and repeats go to their actors.
  RepeatCache(size_t capacity, size_t max_waiting);

  /// The key of a Create Payment: who sent it, whether the homologation suite did, its bytes.
  std::string key(std::string_view merchant, bool test_suite, std::string_view body) const;

  /// The stored answer for the request `key` names, its arrival at `now` counted for its
  /// payment; nullopt when the cache does not know it (or is closed). `due` is set to the
  /// payment's id when its waiting arrivals reach kBatch, so the caller sends them now.
  std::optional<domain::Reply> answer(const std::string& key, int64_t now, std::string& due);

  /// The request `key` names is a repeat of resolved `payment_id`, answered `answer` for good.
  void remember(const std::string& key, const std::string& payment_id, const std::string& merchant,
                const std::string& fingerprint, const domain::Reply& answer);

  /// The arrivals waiting for `payment_id`'s audit trail, in order; they wait no more.
  std::vector<Arrival> take(const std::string& payment_id);

  /// Payments with arrivals waiting that were not handed out by an earlier call since.
  std::vector<std::string> due();

  /// `payment_id`'s arrivals, handed out and not taken (its record could not be read), are due
  /// again at the next call of due().
  void hand_back(const std::string& payment_id);

  /// True when no arrival is waiting.
  bool settled() const;

  /// Forgets every answer (the merchants' settings changed); waiting arrivals stay.
  void forget_answers();

  /// From now on answers nothing (the service stops); waiting arrivals stay to be taken.
  void close();

private:
  struct Entry {
    std::string payment_id;
    std::string merchant;
    std::string fingerprint;
    domain::Reply answer;
  };
  struct Waiting {
    std::vector<std::pair<int64_t, std::shared_ptr<const Entry>>> arrivals;  ///< time, request
    bool handed_out = false;  ///< named by due() since the last take()
  };

  std::string hash_key_;
  size_t capacity_;
  size_t max_waiting_;
  size_t waiting_count_ = 0;  ///< arrivals in waiting_
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Entry>> entries_;
  /// The keys of entries_, oldest remembered first (a map's keys stay where they are).
  std::deque<const std::string*> order_;
  std::unordered_map<std::string, Waiting> waiting_;  ///< by paymentId
  bool closed_ = false;
};

}  // namespace idempay::actors
