#include "connection_budget.hpp"

#include <algorithm>
#include <vector>

#include "idempay/base/descriptors.hpp"

namespace idempay::http::detail {

ConnectionBudget& ConnectionBudget::of_process() {
  static ConnectionBudget budget(descriptor_share(4, 16, 10'000));
  return budget;
}

void ConnectionBudget::enrol(const void* client, Evict evict) {
  std::lock_guard lock(mu_);
  clients_[client] = std::move(evict);
}

void ConnectionBudget::leave(const void* client) {
  std::vector<Waiter> gone;  // destroyed outside the lock: they may hold calls and their slots
  {
    std::lock_guard lock(mu_);
    clients_.erase(client);
    auto keep = std::stable_partition(waiters_.begin(), waiters_.end(),
                                      [client](const Waiter& w) { return w.client != client; });
    std::move(keep, waiters_.end(), std::back_inserter(gone));
    waiters_.erase(keep, waiters_.end());
  }
}

ConnectionBudget::SlotPtr ConnectionBudget::acquire(const void* client, Grant grant) {
  std::lock_guard lock(mu_);
  if (open_ < capacity_) {
    ++open_;
    return std::make_shared<Slot>(*this, client);
  }
  waiters_.push_back(Waiter{client, std::move(grant)});
  ask_for_an_idle_connection();
  return nullptr;
}

void ConnectionBudget::ask_for_an_idle_connection() {
  if (idle_ <= evictions_asked_) {
    return;  // every idle connection is being closed already: the waiter gets one now in use
  }
  for (auto& [client, count] : idle_by_client_) {
    if (count > 0) {
      auto found = clients_.find(client);
      if (found != clients_.end()) {
        ++evictions_asked_;
        found->second();
        return;
      }
    }
  }
}

void ConnectionBudget::set_idle(Slot& slot, bool idle) {
  std::lock_guard lock(mu_);
  if (slot.idle_ == idle) {
    return;
  }
  slot.idle_ = idle;
  idle ? ++idle_ : --idle_;
  idle ? ++idle_by_client_[slot.client_] : --idle_by_client_[slot.client_];
  evictions_asked_ = std::min(evictions_asked_, idle_);
  if (idle && waiters_.size() > evictions_asked_) {
    ask_for_an_idle_connection();  // a call waits: a connection kept idle would only hold its place
  }
}

void ConnectionBudget::eviction_missed() {
  std::lock_guard lock(mu_);
  evictions_asked_ = evictions_asked_ > 0 ? evictions_asked_ - 1 : 0;
  if (waiters_.size() > evictions_asked_) {
    ask_for_an_idle_connection();  // another client's, if any is idle still
  }
}

void ConnectionBudget::release(Slot& slot) {
  Waiter next;  // declared before the lock: what it holds is let go of after the lock is
  std::lock_guard lock(mu_);
  if (slot.idle_) {
    --idle_;
    --idle_by_client_[slot.client_];
    evictions_asked_ = std::min(evictions_asked_ > 0 ? evictions_asked_ - 1 : 0, idle_);
  }
  if (waiters_.empty()) {
    --open_;
    return;
  }
  // The place passes to the longest waiting call, still counted as open.
  next = std::move(waiters_.front());
  waiters_.pop_front();
  next.grant(std::make_shared<Slot>(*this, next.client));
}

size_t ConnectionBudget::open() const {
  std::lock_guard lock(mu_);
  return open_;
}

}  // namespace idempay::http::detail
