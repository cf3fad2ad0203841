#include "repeat_cache.hpp"

#include "idempay/base/crypto.hpp"

namespace idempay::actors {

RepeatCache::RepeatCache(size_t capacity, size_t max_waiting)
    : hash_key_(crypto::random_bytes(32)), capacity_(capacity), max_waiting_(max_waiting) {}

std::string RepeatCache::key(std::string_view merchant, bool test_suite, std::string_view body) const {
  crypto::Digest digest = crypto::hmac_sha256(hash_key_, body);
  // The digest and the mark have fixed lengths at the end: no two requests share a key.
  std::string key;
  key.reserve(merchant.size() + 2 + digest.size());
  key.append(merchant).push_back('\0');
  key.push_back(test_suite ? 't' : 'f');
  key.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  return key;
}

std::optional<domain::Reply> RepeatCache::answer(const std::string& key, int64_t now, std::string& due) {
  std::shared_ptr<const Entry> entry;
  {
    std::lock_guard lock(mutex_);
    auto it = closed_ || waiting_count_ >= max_waiting_ ? entries_.end() : entries_.find(key);
    if (it == entries_.end()) {
      return std::nullopt;
    }
    entry = it->second;
    Waiting& waiting = waiting_[entry->payment_id];
    waiting.arrivals.emplace_back(now, entry);
    ++waiting_count_;
    if (waiting.arrivals.size() >= kBatch && !waiting.handed_out) {
      waiting.handed_out = true;
      due = entry->payment_id;
    }
  }
  return entry->answer;  // copied outside the lock
}

void RepeatCache::remember(const std::string& key, const std::string& payment_id, const std::string& merchant,
                           const std::string& fingerprint, const domain::Reply& answer) {
  auto entry = std::make_shared<Entry>(Entry{payment_id, merchant, fingerprint, answer});
  entry->answer.served = "reused";  // what the access log says of a stored answer given again
  std::lock_guard lock(mutex_);
  if (closed_) {
    return;
  }
  auto [it, added] = entries_.emplace(key, std::move(entry));
  if (!added) {
    return;
  }
  order_.push_back(&it->first);
  while (entries_.size() > capacity_) {
    entries_.erase(entries_.find(*order_.front()));  // by iterator: the key lives in the node erased
    order_.pop_front();
  }
}

std::vector<RepeatCache::Arrival> RepeatCache::take(const std::string& payment_id) {
  std::lock_guard lock(mutex_);
  auto it = waiting_.find(payment_id);
  if (it == waiting_.end()) {
    return {};
  }
  std::vector<Arrival> arrivals;
  arrivals.reserve(it->second.arrivals.size());
  for (const auto& [time, entry] : it->second.arrivals) {
    arrivals.push_back({time, entry->merchant, entry->fingerprint});
  }
  waiting_count_ -= arrivals.size();
  waiting_.erase(it);
  return arrivals;
}

std::vector<std::string> RepeatCache::due() {
  std::vector<std::string> ids;
  std::lock_guard lock(mutex_);
  for (auto& [id, waiting] : waiting_) {
    if (!waiting.handed_out) {
      waiting.handed_out = true;
      ids.push_back(id);
    }
  }
  return ids;
}

void RepeatCache::hand_back(const std::string& payment_id) {
  std::lock_guard lock(mutex_);
  if (auto it = waiting_.find(payment_id); it != waiting_.end()) {
    it->second.handed_out = false;
  }
}

bool RepeatCache::settled() const {
  std::lock_guard lock(mutex_);
  return waiting_.empty();
}

void RepeatCache::forget_answers() {
  std::lock_guard lock(mutex_);
  entries_.clear();
  order_.clear();
}

void RepeatCache::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  entries_.clear();
  order_.clear();
}

}  // namespace idempay::actors
