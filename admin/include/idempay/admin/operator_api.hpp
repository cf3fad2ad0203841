#pragma once
// The operator API (/admin/v1/, docs/operator-api.json) and the operator console (/admin/).
// Operators authenticate with bearer tokens (the transport checks them: ServerOptions::
// bearer_prefix); what an operator may see and do is decided here, on every request, from the
// operators in force (reloaded with the merchants file).
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "idempay/actors/payment_service.hpp"
#include "idempay/admin/idempotency.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/http/routes.hpp"
#include "idempay/http/server.hpp"
#include "idempay/receipts/key_ring.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::admin {

inline constexpr std::string_view kApiPrefix = "/admin/v1/";
inline constexpr std::string_view kConsolePrefix = "/admin/";

/// What one operator may do: read, or act too (manual operations, replays, reconciliations),
/// on every merchant's payments or on the listed merchants' only.
struct OperatorScope {
  bool can_act = false;
  bool all_merchants = false;
  std::set<std::string, std::less<>> merchants;

  bool sees(std::string_view merchant) const { return all_merchants || merchants.count(merchant) != 0; }
};

/// The operator of that name as the file in force has it; nullopt for one no longer listed.
using OperatorLookup = std::function<std::optional<OperatorScope>(const std::string& name)>;

struct OperatorApiOptions {
  OperatorLookup operators;
  IdempotencyOptions idempotency;
  /// Routes in fingerprint mode (reconcile) without an Idempotency-Key: a repeat of the same
  /// operator's same request within this window gets the first answer. Default: 60 s
  std::chrono::milliseconds fingerprint_window{60'000};
  /// The merchant that owns payments stored before owners were recorded. Default: none
  std::string legacy_owner;
  /// The key search cursors are sealed with, the same on every instance (empty while the
  /// service starts: searches answer 503). Default: none
  std::function<std::string()> cursor_key;
  /// The key receipts are signed with; none: GET .../receipt answers 503. Default: none
  std::shared_ptr<const receipts::KeyRing> signing_keys;
  /// Signatures a transparency log tree head needs to count as published. Default: 1
  size_t log_quorum = 1;
};

/// Where the anchor, the JWK Set of every key receipts were signed with, is published.
inline constexpr std::string_view kAnchorPath = "/.well-known/jwks.json";

/// Serves /admin/ (the console: public static files), /admin/v1/ (the API) and the anchor. Held by a
/// shared_ptr: work it hands to the store's reader threads keeps it alive.
class OperatorApi final : public http::Handler, public std::enable_shared_from_this<OperatorApi> {
public:
  /// `service` and `store` must outlive it.
  OperatorApi(actors::PaymentService& service, storage::Store& store, OperatorApiOptions options);
  void handle(http::Request request, http::Responder respond) override;

  /// The paths answered without credentials (the console's files).
  static std::vector<std::string> public_paths();
  /// True for a path one of its routes has (for the server's 404 before authentication).
  bool knows(std::string_view path) const;

private:
  struct Call;
  void route(const std::shared_ptr<Call>& call);
  void guarded(const std::shared_ptr<Call>& call, bool fingerprint_mode, IdempotencyGuard::Route run);
  void search(const std::shared_ptr<Call>& call);
  void detail(const std::shared_ptr<Call>& call, std::string payment_id);
  void receipt(const std::shared_ptr<Call>& call, std::string payment_id);
  void anchor(http::Responder respond);
  void log_route(int route, const std::string& query, http::Responder respond);
  void operate(const std::shared_ptr<Call>& call, std::string payment_id, ppp::OperationKind kind);
  void reconcile(const std::shared_ptr<Call>& call, std::string payment_id);
  void replay(const std::shared_ptr<Call>& call, std::string delivery_id);
  using Done = std::function<void(http::Response)>;
  void with_visible_payment(const std::shared_ptr<Call>& call, const std::string& id, Done done,
                            std::function<void(const domain::PaymentRecord&)> then);
  std::string owner_of(const std::string& stored_owner) const;

  actors::PaymentService& service_;
  storage::Store& store_;
  OperatorApiOptions options_;
  IdempotencyGuard guard_;
  IdempotencyGuard fingerprint_guard_;  // the same store, a short retention
  http::RouteTable routes_;
  receipts::AnchorCache anchor_cache_{std::chrono::seconds(5)};
};

}  // namespace idempay::admin
