#pragma once
// A store that forwards every call to an in-memory store: tests derive from it and override
// only the calls they watch, hold up or refuse.
#include <memory>

#include "idempay/domain/keyspaces.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::testing {

class ForwardingStore : public storage::Store {
public:
  Result<std::optional<storage::Versioned>> get(storage::Keyspace ks, std::string_view key) override {
    return inner_->get(ks, key);
  }
  std::optional<Result<std::optional<storage::Versioned>>> get_if_in_memory(storage::Keyspace ks,
                                                                            std::string_view key) override {
    return inner_->get_if_in_memory(ks, key);
  }
  // The job sees this store, not the inner one, so that its reads are watched too.
  void read_async(std::function<void(storage::Store&)> job) override {
    inner_->read_async([this, job](storage::Store&) { job(*this); });
  }
  void commit(storage::Batch batch, storage::CommitCallback done) override {
    watch(batch, false);
    inner_->commit(std::move(batch), std::move(done));
  }
  void commit_riding_along(storage::Batch batch, storage::CommitCallback done) override {
    watch(batch, true);
    inner_->commit_riding_along(std::move(batch), std::move(done));
  }
  Result<std::vector<std::pair<std::string, storage::Versioned>>> scan(storage::Keyspace ks, std::string_view prefix,
                                                                        size_t limit) override {
    return inner_->scan(ks, prefix, limit);
  }
  Result<std::vector<std::pair<std::string, storage::Versioned>>> scan_after(storage::Keyspace ks,
                                                                              std::string_view after,
                                                                              size_t limit) override {
    return inner_->scan_after(ks, after, limit);
  }

  Result<std::optional<storage::Entry>> last_in(storage::Keyspace ks, std::string_view from,
                                                std::string_view below) override {
    return inner_->last_in(ks, from, below);
  }
  std::optional<Result<std::optional<storage::Entry>>> last_in_if_in_memory(storage::Keyspace ks,
                                                                           std::string_view from,
                                                                           std::string_view below) override {
    return inner_->last_in_if_in_memory(ks, from, below);
  }

protected:
  /// Sees every batch handed to the store, before it is committed.
  virtual void watch(const storage::Batch&, bool /*riding_along*/) {}

private:
  std::unique_ptr<storage::Store> inner_ = storage::make_memory_store(domain::keyspace_names());
};

}  // namespace idempay::testing
