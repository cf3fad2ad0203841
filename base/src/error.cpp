#include "idempay/base/error.hpp"

namespace idempay {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid-request";
    case ErrorCode::kUnauthenticated: return "unauthenticated";
    case ErrorCode::kForbidden: return "forbidden";
    case ErrorCode::kNotFound: return "not-found";
    case ErrorCode::kConflict: return "conflict";
    case ErrorCode::kIllegalState: return "invalid-state";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kInternal: return "internal-error";
  }
  return "internal-error";
}

}  // namespace idempay
