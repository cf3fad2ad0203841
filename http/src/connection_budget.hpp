#pragma once
// How many outbound connections the process holds open at once, in use or idle, across all of
// its clients: a share of its descriptor limit. Thousands of calls in flight on a slow acquirer
// must never take the descriptors the store needs for its files (a RocksDB that cannot open
// its next write-ahead log stops writing until it is reopened), nor every local port. Calls
// beyond the budget wait their turn, within their own deadline, and an idle kept-alive
// connection is closed to make room for one that waits.
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace idempay::http::detail {

class ConnectionBudget {
public:
  /// One open connection's place in the budget, given back when destroyed.
  class Slot {
  public:
    Slot(ConnectionBudget& budget, const void* client) : budget_(budget), client_(client) {}
    ~Slot() { budget_.release(*this); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

  private:
    friend class ConnectionBudget;
    ConnectionBudget& budget_;
    const void* client_;
    bool idle_ = false;
  };
  using SlotPtr = std::shared_ptr<Slot>;
  /// Hands a slot to a call that waited. Called under the budget's lock, from whichever thread
  /// gave a slot back: it must only post to the client's own thread.
  using Grant = std::function<void(SlotPtr)>;
  /// Asks a client to close one of its idle connections. Same rule as Grant.
  using Evict = std::function<void()>;

  /// The process's budget: a quarter of its descriptor limit (read at first use, after the
  /// program has raised it), at least 16 (base/descriptors.hpp).
  static ConnectionBudget& of_process();

  explicit ConnectionBudget(size_t capacity) : capacity_(capacity) {}

  void enrol(const void* client, Evict evict);
  /// Forgets `client` and its waiting calls: nothing reaches it once this returns.
  void leave(const void* client);
  /// A slot at once, or null: then `grant` is called with one when a connection closes.
  SlotPtr acquire(const void* client, Grant grant);
  /// Whether `slot`'s connection sits in an idle pool (one a waiting call may have closed).
  void set_idle(Slot& slot, bool idle);
  /// A client asked to close an idle connection had none left (it was taken meanwhile).
  void eviction_missed();

  size_t capacity() const { return capacity_; }
  size_t open() const;

private:
  struct Waiter {
    const void* client = nullptr;
    Grant grant;
  };
  void release(Slot& slot);
  void ask_for_an_idle_connection();  // under the lock

  const size_t capacity_;
  mutable std::mutex mu_;
  size_t open_ = 0;
  size_t idle_ = 0;
  size_t evictions_asked_ = 0;
  std::deque<Waiter> waiters_;
  std::map<const void*, Evict> clients_;
  std::map<const void*, size_t> idle_by_client_;
};

}  // namespace idempay::http::detail
