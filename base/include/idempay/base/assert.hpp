#pragma once
// IDEMPAY_ASSERT: an invariant whose breach means the process's state is wrong. It stays on in
// release builds: a payment engine that has lost track of its own state must stop rather than
// answer wrongly. What it stops leaves the store as the last durable batch left it (every
// write is one atomic batch, written before anything is answered), so a restart recovers from
// the store (the recovery index, the outbox) and `idempay audit verify` passes
// (tests/integration/test_assertions.py trips one on purpose).
//
// Use it for a state the code has just made and relies on, never for outside input: a
// request, a stored record or an acquirer's answer that is wrong gets an error, not a stop.

#include "idempay/base/fault.hpp"

namespace idempay::detail {

/// Writes "invariant broken: <condition> (<message>) at <file>:<line>" to stderr and aborts.
[[noreturn]] void assertion_failed(const char* condition, const char* message, const char* file, int line) noexcept;

}  // namespace idempay::detail

/// An invariant with a name the fault tests can break (fault::holds, IDEMPAY_BREAK_AT).
#define IDEMPAY_INVARIANT(name, condition, message) \
  IDEMPAY_ASSERT((condition) && ::idempay::fault::holds(name), message)

#define IDEMPAY_ASSERT(condition, message)                                          \
  do {                                                                              \
    if (__builtin_expect(!(condition), 0)) {                                        \
      ::idempay::detail::assertion_failed(#condition, message, __FILE__, __LINE__); \
    }                                                                               \
  } while (false)
