#include <map>
#include <mutex>

#include "idempay/storage/store.hpp"

namespace idempay::storage {

namespace {

class MemoryStore final : public Store {
public:
  Result<std::optional<Versioned>> get(Keyspace ks, std::string_view key) override {
    std::lock_guard lock(mutex_);
    auto& space = spaces_[static_cast<size_t>(ks)];
    auto it = space.find(std::string(key));
    if (it == space.end()) {
      return std::optional<Versioned>();
    }
    return std::optional<Versioned>(it->second);
  }

  void commit(Batch batch, CommitCallback done) override { done(apply(batch)); }

  Result<std::vector<std::pair<std::string, Versioned>>> scan(Keyspace ks, std::string_view prefix,
                                                                size_t limit) override {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, Versioned>> out;
    auto& space = spaces_[static_cast<size_t>(ks)];
    for (auto it = space.lower_bound(std::string(prefix));
         it != space.end() && out.size() < limit && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it) {
      out.emplace_back(it->first, it->second);
    }
    return out;
  }

private:
  CommitResult apply(const Batch& batch) {
    std::lock_guard lock(mutex_);
    // Check every condition against the state as this batch's earlier writes leave it.
    std::map<std::pair<size_t, std::string>, uint64_t> pending;
    std::vector<uint64_t> etags;
    for (const Write& w : batch) {
      auto id = std::make_pair(static_cast<size_t>(w.keyspace), w.key);
      auto found = pending.find(id);
      uint64_t current = 0;
      if (found != pending.end()) {
        current = found->second;
      } else if (w.blind && !w.expected_etag) {
        current = 0;
      } else if (auto it = spaces_[id.first].find(w.key); it != spaces_[id.first].end()) {
        current = it->second.etag;
      }
      if (w.expected_etag && *w.expected_etag != current) {
        return make_error(ErrorCode::kConflict, "etag mismatch on " + w.key);
      }
      pending[id] = current + 1;
      etags.push_back(w.value ? current + 1 : 0);
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      auto& space = spaces_[static_cast<size_t>(batch[i].keyspace)];
      if (batch[i].value) {
        space[batch[i].key] = Versioned{*batch[i].value, etags[i]};
      } else {
        space.erase(batch[i].key);
      }
    }
    return etags;
  }

  std::mutex mutex_;
  std::map<std::string, Versioned> spaces_[kKeyspaceCount];
};

}  // namespace

std::unique_ptr<Store> make_memory_store() { return std::make_unique<MemoryStore>(); }

}  // namespace idempay::storage
