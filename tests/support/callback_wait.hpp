#pragma once
// Waits for an asynchronous call's one callback: `start` is handed the callback to pass on.
#include <future>

#include "idempay/base/error.hpp"

namespace idempay::testing_support {

template <class T, class Fn>
Result<T> wait(Fn&& start) {
  std::promise<Result<T>> done;
  start([&](Result<T> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

}  // namespace idempay::testing_support
