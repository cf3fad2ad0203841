// The in-memory store for tests: the same contract as RocksDB, the same condition rule
// (conditions.hpp), and commits completed on a thread of its own, in order, as the real store
// completes them, so that every test goes through the asynchronous path. No durability.
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "conditions.hpp"
#include "commit_thread.hpp"
#include "reader_threads.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::storage {

namespace {

using MemoryCommit = std::pair<Batch, CommitCallback>;

class MemoryStore final : public Store {
public:
  explicit MemoryStore(size_t keyspaces)
      : spaces_(keyspaces),
        committer_("idempay-commit", {[this](std::vector<MemoryCommit>& group) { complete(group); }, 0, {}, {}}) {}

  ~MemoryStore() override {
    readers_.stop();
    committer_.close();
  }

  Result<std::optional<Versioned>> get(Keyspace ks, std::string_view key) override {
    if (ks.index >= spaces_.size()) {
      return make_error(ErrorCode::kInvalidArgument, "no keyspace " + std::to_string(ks.index));
    }
    std::lock_guard lock(mutex_);
    auto& space = spaces_[ks.index];
    auto it = space.find(std::string(key));
    if (it == space.end()) {
      return std::optional<Versioned>();
    }
    return std::optional<Versioned>(it->second);
  }

  void commit(Batch batch, CommitCallback done) override {
    if (auto known = known_keyspaces(batch, spaces_.size()); !known) {
      return done(tl::unexpected(known.error()));
    }
    MemoryCommit pending{std::move(batch), std::move(done)};
    if (!committer_.push(pending)) {
      pending.second(make_error(ErrorCode::kUnavailable, "store is closing"));
    }
  }

  std::optional<Result<std::optional<Versioned>>> get_if_in_memory(Keyspace ks, std::string_view key) override {
    return get(ks, key);
  }

  void read_async(std::function<void(Store&)> job) override {
    if (!readers_.submit([this, job] { job(*this); })) {
      job(*this);
    }
  }

  Result<std::vector<std::pair<std::string, Versioned>>> scan(Keyspace ks, std::string_view prefix,
                                                                size_t limit) override {
    return collect(
        ks, [&](const auto& space) { return space.lower_bound(std::string(prefix)); },
        [&](const std::string& key) { return key.compare(0, prefix.size(), prefix) == 0; }, limit);
  }

  Result<std::vector<std::pair<std::string, Versioned>>> scan_after(Keyspace ks, std::string_view after,
                                                                      size_t limit) override {
    return collect(
        ks, [&](const auto& space) { return space.upper_bound(std::string(after)); },
        [](const std::string&) { return true; }, limit);
  }

  Result<std::optional<Entry>> last_in(Keyspace ks, std::string_view from, std::string_view below) override {
    if (ks.index >= spaces_.size()) {
      return make_error(ErrorCode::kInvalidArgument, "no keyspace " + std::to_string(ks.index));
    }
    std::lock_guard lock(mutex_);
    const auto& space = spaces_[ks.index];
    auto it = space.lower_bound(std::string(below));
    if (it == space.begin() || std::prev(it)->first < from) {
      return std::optional<Entry>();
    }
    --it;
    return std::optional<Entry>(Entry(it->first, it->second));
  }

  std::optional<Result<std::optional<Entry>>> last_in_if_in_memory(Keyspace ks, std::string_view from,
                                                                  std::string_view below) override {
    return last_in(ks, from, below);
  }

private:
  // Up to `limit` entries of `ks` in key order from `first(space)`, while `keep(key)`.
  template <class First, class Keep>
  Result<std::vector<std::pair<std::string, Versioned>>> collect(Keyspace ks, First first, Keep keep, size_t limit) {
    if (ks.index >= spaces_.size()) {
      return make_error(ErrorCode::kInvalidArgument, "no keyspace " + std::to_string(ks.index));
    }
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, Versioned>> out;
    const auto& space = spaces_[ks.index];
    for (auto it = first(space); it != space.end() && out.size() < limit && keep(it->first); ++it) {
      out.emplace_back(it->first, it->second);
    }
    return out;
  }

  // Completes each commit in turn, on a thread of its own, as the real stores do.
  void complete(std::vector<MemoryCommit>& group) {
    for (auto& [batch, done] : group) {
      done(apply(batch));
    }
  }

  CommitResult apply(const Batch& batch) {
    std::lock_guard lock(mutex_);
    StagedEtags staged;
    auto etags = check_conditions(batch, staged, [this](const Write& w) -> Result<uint64_t> {
      auto& space = spaces_[w.keyspace.index];
      auto it = space.find(w.key);
      return it == space.end() ? 0 : it->second.etag;
    });
    if (!etags) {
      return etags;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      auto& space = spaces_[batch[i].keyspace.index];
      if (batch[i].value) {
        space[batch[i].key] = Versioned{*batch[i].value, (*etags)[i]};
      } else {
        space.erase(batch[i].key);
      }
    }
    return etags;
  }

  std::mutex mutex_;  // guards the data
  std::vector<std::map<std::string, Versioned>> spaces_;
  ReaderThreads readers_{1};
  CommitThread<MemoryCommit> committer_;  // starts after everything it uses exists
};

}  // namespace

std::unique_ptr<Store> make_memory_store(KeyspaceNames keyspaces) {
  return std::make_unique<MemoryStore>(keyspaces.size());
}

}  // namespace idempay::storage
