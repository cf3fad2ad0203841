#include <future>

#include "idempay/storage/store.hpp"

namespace idempay::storage {

std::string_view to_string(Keyspace ks) {
  static constexpr std::string_view kNames[kKeyspaceCount] = {
      "payments", "operations", "idempotency", "inbox", "outbox", "dead_letters", "audit", "meta", "recovery"};
  return kNames[static_cast<size_t>(ks)];
}

CommitResult Store::commit_and_wait(Batch batch) {
  std::promise<CommitResult> promise;
  auto future = promise.get_future();
  commit(std::move(batch), [&promise](CommitResult r) { promise.set_value(std::move(r)); });
  return future.get();
}

}  // namespace idempay::storage
