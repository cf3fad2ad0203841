#pragma once

#include <cstdint>
#include <string>

#include <tl/expected.hpp>

namespace idempay {

/// Canonical error codes shared by every library; http/ and app/ map them to HTTP statuses.
enum class ErrorCode : uint8_t {
  kInvalidArgument,  ///< malformed or semantically invalid input (400)
  kUnauthenticated,  ///< missing or wrong credentials (401)
  kForbidden,        ///< a destination or action that policy refuses (403)
  kNotFound,         ///< the addressed payment or record does not exist (404)
  kConflict,         ///< same key with different content, or an etag mismatch (409 / 400)
  kIllegalState,     ///< the payment's state forbids the operation (400)
  kUnavailable,      ///< storage or acquirer unavailable; the caller should retry (503/500)
  kTimeout,          ///< the acquirer did not answer: outcome unknown (504/500)
  kInternal,         ///< a broken invariant (500)
};

/// An error: a code plus a message that is safe to show the caller (never card data).
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

template <class T>
using Result = tl::expected<T, Error>;
using Status = Result<void>;

inline tl::unexpected<Error> make_error(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

/// Short stable name of a code, used as the PPP error body's `code`.
const char* to_string(ErrorCode code);

}  // namespace idempay
