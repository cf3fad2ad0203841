#include "idempay/domain/acquirer.hpp"

namespace idempay::domain {

std::string_view to_string(AuthorizationStatus s) {
  switch (s) {
    case AuthorizationStatus::kApproved: return "approved";
    case AuthorizationStatus::kDenied: return "denied";
    case AuthorizationStatus::kPending: return "pending";
  }
  return "pending";
}

bool through_secure_proxy(const AuthorizeCall& call) {
  return !call.secure_proxy_url.empty() && !call.card.number_token.empty();
}

}  // namespace idempay::domain
