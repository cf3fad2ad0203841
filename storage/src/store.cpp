#include <future>

#include "idempay/storage/store.hpp"

namespace idempay::storage {

CommitResult Store::commit_and_wait(Batch batch) {
  std::promise<CommitResult> promise;
  auto future = promise.get_future();
  commit(std::move(batch), [&promise](CommitResult r) { promise.set_value(std::move(r)); });
  return future.get();
}

}  // namespace idempay::storage
