#include "idempay/admin/operator_api.hpp"

#include <spdlog/spdlog.h>

#include "console_files.hpp"
#include "idempay/answers/answers.hpp"
#include "idempay/answers/report.hpp"
#include "idempay/domain/inspection.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/domain/payment_reads.hpp"
#include "idempay/http/problem.hpp"
#include "idempay/receipts/receipt.hpp"
#include "idempay/signing/jose.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/visible_text.hpp"
#include "idempay/base/money.hpp"
#include "log_routes.hpp"
#include "reports.hpp"

namespace idempay::admin {

namespace {

using domain::Space;
using http::problem;

constexpr size_t kMaxReasonBytes = 500;
constexpr size_t kDefaultPage = 50;
constexpr size_t kMaxPage = 200;
constexpr size_t kScanBudget = 5'000;  // payment records one search request reads at most

http::Response from_reply(actors::Reply reply) {
  unsigned status = answers::http_status(reply.outcome);
  http::Response r(status, answers::body_of(std::move(reply)));
  if (r.status == 503) {
    r.headers.push_back({"retry-after", "1"});
  }
  return r;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A query parameter, percent-decoded ('+' is a space); nullopt when absent or malformed.
std::optional<std::string> query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (pair.substr(0, eq) != name) {
      continue;
    }
    std::string_view raw = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '%') {
        out.push_back(raw[i] == '+' ? ' ' : raw[i]);
        continue;
      }
      int hi = i + 1 < raw.size() ? hex_value(raw[i + 1]) : -1;
      int lo = i + 2 < raw.size() ? hex_value(raw[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return std::nullopt;
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
    return out;
  }
  return std::nullopt;
}

// A search page's cursor: the position its scan stopped at, sealed (AES-GCM under a key the
// instances share). The scan may stop on a payment this operator does not see: the cursor
// must resume after it without telling which it was, and a cursor the operator made up
// (another merchant's id, to walk past) is refused.
std::string seal_cursor(const std::string& key, const std::string& position) {
  std::string sealed = crypto::seal(key, position);
  return crypto::to_hex(reinterpret_cast<const uint8_t*>(sealed.data()), sealed.size());
}

std::optional<std::string> open_cursor(const std::string& key, std::string_view hex) {
  std::string sealed;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    int hi = hex_value(hex[i]);
    int lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      return std::nullopt;
    }
    sealed.push_back(static_cast<char>(hi * 16 + lo));
  }
  return hex.size() % 2 == 0 ? crypto::unseal(key, sealed) : std::nullopt;
}

// One path segment as an id (decoded by the route table): printable, at most 255 bytes.
bool valid_id(std::string_view id) {
  return !id.empty() && id.size() <= 255 &&
         std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

http::Response forbidden(std::string_view why) { return problem(403, "Forbidden", why); }
http::Response not_found(std::string_view what) { return problem(404, "Not Found", what); }
http::Response bad_request(std::string_view why) { return problem(400, "Bad Request", why); }

// The console's files and the API's routes.
enum AdminRoute : int {
  kConsolePage, kConsoleScript, kConsoleStyle, kMe, kSearch, kDetail, kRefunds, kSettlements, kCancellations,
  kReconcile, kReplay, kReceipt, kAnchor, kTreeHead, kInclusion, kConsistency, kVerifyPage, kVerifyScript,
};

std::vector<http::Route> admin_routes() {
  return {
      {"GET", "/admin", kConsolePage},
      {"GET", "/admin/console.js", kConsoleScript},
      {"GET", "/admin/console.css", kConsoleStyle},
      {"GET", "/admin/v1/me", kMe},
      {"GET", "/admin/v1/payments", kSearch},
      {"GET", "/admin/v1/payments/{}", kDetail},
      {"POST", "/admin/v1/payments/{}/refunds", kRefunds},
      {"POST", "/admin/v1/payments/{}/settlements", kSettlements},
      {"POST", "/admin/v1/payments/{}/cancellations", kCancellations},
      {"POST", "/admin/v1/payments/{}/reconcile", kReconcile},
      {"POST", "/admin/v1/deliveries/{}/replay", kReplay},
      {"GET", "/admin/v1/payments/{}/receipt", kReceipt},
      {"GET", std::string(kAnchorPath), kAnchor},
      {"GET", "/log/v1/tree-head", kTreeHead},
      {"GET", "/log/v1/proof/inclusion", kInclusion},
      {"GET", "/log/v1/proof/consistency", kConsistency},
      {"GET", "/receipts/verify", kVerifyPage},
      {"GET", "/receipts/verify.js", kVerifyScript},
  };
}

// Every answer of the API: never cached by a browser or proxy (it names payments and carries
// operators' actions), never sniffed as anything but what it says it is.
void add_api_headers(http::Response& r) {
  r.headers.push_back({"cache-control", "no-store"});
  r.headers.push_back({"x-content-type-options", "nosniff"});
}

http::Responder with_api_headers(http::Responder respond) {
  static const auto dropped = [] {
    auto r = problem(503, "Service Unavailable", "request was dropped; retry");
    add_api_headers(r);
    return std::make_shared<const http::Response>(std::move(r));
  }();
  return http::Responder(
      [respond](http::Response r) {
        add_api_headers(r);
        respond(std::move(r));
      },
      dropped);
}

// A manual operation's body: {"value": 12.34, "reason": "..."} (no value for cancellations).
struct ManualRequest {
  Cents value = 0;
  std::string reason;
};

Result<ManualRequest> parse_manual(std::string_view body, bool needs_value) {
  auto v = JsonValue::parse(body);
  if (!v || v->type() != JsonValue::Type::kObject) {
    return make_error(ErrorCode::kInvalidArgument, "the body must be a JSON object");
  }
  ManualRequest out;
  for (const auto& [name, value] : v->members()) {
    if (name == "reason") {
      if (value.type() != JsonValue::Type::kString || value.text().empty() || value.text().size() > kMaxReasonBytes) {
        return make_error(ErrorCode::kInvalidArgument, "reason must be a string of 1 to 500 bytes");
      }
      // It goes into the audit trail: it can never forge a line there, reorder what a reader
      // sees or drive a terminal that prints it. Tabs and UTF-8 text are fine.
      if (!is_plain_text(value.text())) {
        return make_error(ErrorCode::kInvalidArgument,
                          "reason must be UTF-8 text without control or bidirectional formatting characters");
      }
      out.reason = value.text();
    } else if (name == "value" && needs_value) {
      // The number's text as written, by the PPP's own rules: 1.999999999999999999999 is
      // refused (more than two decimals), never rounded.
      auto cents = value.type() == JsonValue::Type::kNumber ? parse_decimal_amount(value.text())
                                                             : Result<Cents>(tl::unexpected(Error{}));
      if (!cents || *cents <= 0) {
        return make_error(ErrorCode::kInvalidArgument, "value must be a positive amount with at most two decimals");
      }
      out.value = *cents;
    } else {
      return make_error(ErrorCode::kInvalidArgument, "unknown field \"" + name + "\"");
    }
  }
  if (out.reason.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "reason is required: it goes into the audit trail");
  }
  if (needs_value && out.value == 0) {
    return make_error(ErrorCode::kInvalidArgument, "value is required");
  }
  return out;
}

}  // namespace

struct OperatorApi::Call {
  http::Request request;
  http::Responder respond;
  OperatorScope scope;
  http::RouteMatch route;  // what the router matched: the Idempotency-Key's scope
  std::string record_key;  // its Idempotency-Key's record, once guarded
};

OperatorApi::OperatorApi(actors::PaymentService& service, storage::Store& store, OperatorApiOptions options)
    : service_(service),
      store_(store),
      options_(std::move(options)),
      guard_(store, options_.idempotency),
      fingerprint_guard_(store, IdempotencyOptions{options_.fingerprint_window, options_.idempotency.lease,
                                                   options_.idempotency.keyspace, "admin-fingerprint/"}),
      routes_(admin_routes()) {}

bool OperatorApi::knows(std::string_view path) const { return routes_.knows(path); }

std::vector<std::string> OperatorApi::public_paths() {
  return {"/admin", "/admin/", "/admin/console.js", "/admin/console.css", std::string(kAnchorPath),
          "/log/v1/tree-head", "/log/v1/proof/inclusion", "/log/v1/proof/consistency",
          "/receipts/verify", "/receipts/verify.js"};
}

void OperatorApi::handle(http::Request request, http::Responder respond) {
  auto found = routes_.find(request.method, request.path);
  bool console = found.match && (found.match->id == kConsolePage || found.match->id == kConsoleScript ||
                                 found.match->id == kConsoleStyle);
  bool verifier = found.match && (found.match->id == kVerifyPage || found.match->id == kVerifyScript);
  if (console || verifier) {
    auto file = console_file(found.match->canonical());
    http::Response r(200, std::string(file ? file->body : ""), std::string(file ? file->content_type : "text/plain"));
    // Nothing from elsewhere: no CDN, no inline script, no framing. The verification page keeps
    // its style in itself (it must work saved to disk as one page and its script).
    r.headers.push_back({"content-security-policy",
                         std::string("default-src 'none'; script-src 'self'; ") +
                             (verifier ? "style-src 'unsafe-inline'; " : "style-src 'self'; img-src 'self'; ") +
                             "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"});
    r.headers.push_back({"x-content-type-options", "nosniff"});
    r.headers.push_back({"cache-control", "no-store"});
    return respond(std::move(r));
  }
  if (found.match && found.match->id == kAnchor) {
    return anchor(std::move(respond));
  }
  if (found.match && (found.match->id == kTreeHead || found.match->id == kInclusion ||
                      found.match->id == kConsistency)) {
    return log_route(found.match->id, request.query, std::move(respond));
  }
  respond = with_api_headers(std::move(respond));
  if (!found.match) {
    if (found.allow.empty()) {
      return respond(not_found("no such operator route"));
    }
    auto r = problem(405, "Method Not Allowed", found.allow + " only");
    r.headers.push_back({"allow", found.allow});
    return respond(std::move(r));
  }
  // Only bearer tokens reach here (the transport sees to it); the operator must still be listed.
  auto scope = request.bearer && options_.operators ? options_.operators(request.principal) : std::nullopt;
  if (!scope) {
    return respond(problem(401, "Unauthorized", "missing or invalid bearer token"));
  }
  auto call = std::make_shared<Call>(Call{std::move(request), std::move(respond), std::move(*scope),
                                          std::move(*found.match), {}});
  route(call);
}

void OperatorApi::route(const std::shared_ptr<Call>& call) {
  auto& respond = call->respond;
  const auto& params = call->route.params;
  if (!params.empty() && !valid_id(params[0])) {
    return respond(not_found("no such payment or delivery"));
  }
  bool acts = call->route.id != kMe && call->route.id != kSearch && call->route.id != kDetail &&
              call->route.id != kReceipt;
  if (acts && !call->scope.can_act) {
    return respond(forbidden("this operator's role is \"read\": it cannot act"));
  }
  switch (call->route.id) {
    case kMe:
      return respond(http::Response(200, operator_json(call->request.principal, call->scope)));
    case kSearch:
      return search(call);
    case kDetail:
      return detail(call, params[0]);
    case kRefunds:
      return operate(call, params[0], ppp::OperationKind::kRefund);
    case kSettlements:
      return operate(call, params[0], ppp::OperationKind::kSettle);
    case kCancellations:
      return operate(call, params[0], ppp::OperationKind::kCancel);
    case kReconcile:
      return reconcile(call, params[0]);
    case kReplay:
      return replay(call, params[0]);
    case kReceipt:
      return receipt(call, params[0]);
    case kAnchor:
    case kTreeHead:
    case kInclusion:
    case kConsistency:
    case kVerifyPage:
    case kVerifyScript:
      break;  // answered before authentication
  }
  respond(not_found("no such operator route"));
}

std::string OperatorApi::owner_of(const std::string& stored_owner) const {
  return stored_owner.empty() ? options_.legacy_owner : stored_owner;
}

// The Idempotency-Key middleware: the key is validated before anything is read; without one,
// a route in fingerprint mode keys the request by its operator, route and body instead.
void OperatorApi::guarded(const std::shared_ptr<Call>& call, bool fingerprint_mode, IdempotencyGuard::Route run) {
  const auto& req = call->request;
  // One key, in one header: two would leave it to chance which one a replay is found under.
  size_t keys = std::count_if(req.headers.begin(), req.headers.end(), [](const http::Header& h) {
    return h.name == "idempotency-key" || h.name == "x-idempotency-key";
  });
  if (keys > 1) {
    return call->respond(bad_request("give one Idempotency-Key header (or X-Idempotency-Key), once"));
  }
  bool has_key = keys == 1;
  std::string_view key = req.header("idempotency-key");
  if (key.empty()) {
    key = req.header("x-idempotency-key");
  }
  if (has_key && !valid_idempotency_key(key)) {
    return call->respond(bad_request("Idempotency-Key must be 1 to 255 printable ASCII characters"));
  }
  auto canonical = canonical_json(req.body.empty() ? std::string_view("{}") : std::string_view(req.body));
  if (!canonical) {
    return call->respond(bad_request("the body must be JSON"));
  }
  std::string fingerprint = crypto::to_hex(crypto::sha256(*canonical));
  if (!has_key && !fingerprint_mode) {
    return call->respond(bad_request("this route needs an Idempotency-Key header"));
  }
  IdempotencyGuard& guard = has_key ? guard_ : fingerprint_guard_;
  std::string scoped = has_key ? std::string(key) : "fingerprint:" + fingerprint;
  // Scoped by the route the router matched ("/admin/v1/payments/P/refunds"), never by the path
  // as spelled: "/refunds/" and "/refunds" are one route, and one key must be one refund.
  call->record_key = idempotency_record_key(guard.options().prefix, req.principal, req.method,
                                            call->route.canonical(), scoped);
  guard.run(call->record_key, std::move(fingerprint), std::move(run), call->respond);
}

namespace {
// Every '%' followed by two hex digits: a query with a broken escape is refused, not half read.
bool well_escaped(std::string_view query) {
  for (size_t i = 0; i < query.size(); ++i) {
    if (query[i] == '%' && (i + 2 >= query.size() || hex_value(query[i + 1]) < 0 || hex_value(query[i + 2]) < 0)) {
      return false;
    }
  }
  return true;
}
}  // namespace

void OperatorApi::search(const std::shared_ptr<Call>& call) {
  const auto& query = call->request.query;
  if (!well_escaped(query)) {
    return call->respond(bad_request("the query string has a malformed %-escape"));
  }
  auto merchant = query_value(query, "merchant");
  auto state = query_value(query, "state");
  auto cursor = query_value(query, "cursor");
  auto limit_text = query_value(query, "limit");
  size_t limit = kDefaultPage;
  if (limit_text) {
    char* end = nullptr;
    long n = std::strtol(limit_text->c_str(), &end, 10);
    if (limit_text->empty() || *end != '\0' || n < 1 || n > static_cast<long>(kMaxPage)) {
      return call->respond(bad_request("limit must be 1 to 200"));
    }
    limit = static_cast<size_t>(n);
  }
  if (merchant && !call->scope.sees(*merchant)) {
    return call->respond(forbidden("this operator does not see that merchant"));
  }
  std::string cursor_key = options_.cursor_key ? options_.cursor_key() : std::string();
  if (cursor_key.empty()) {
    return call->respond(problem(503, "Service Unavailable", "starting; retry"));
  }
  std::string after;
  if (cursor) {
    auto position = open_cursor(cursor_key, *cursor);
    if (!position) {
      return call->respond(bad_request("cursor is not one this API gave"));
    }
    after = std::move(*position);
  }
  SearchFilter filter{merchant.value_or(""), state.value_or(""), limit, kScanBudget};
  store_.read_async([this, self = shared_from_this(), call, filter, after, cursor_key](storage::Store& store) {
    auto page = search_payments(store, filter, after, [this, call](const std::string& owner) {
      return call->scope.sees(owner_of(owner));
    });
    if (!page) {
      return call->respond(problem(503, "Service Unavailable", "the store cannot be read; retry"));
    }
    std::string next = page->next_after.empty() ? std::string() : seal_cursor(cursor_key, page->next_after);
    call->respond(http::Response(
        200, payments_page_json(*page, [this](const std::string& o) { return owner_of(o); }, next)));
  });
}

void OperatorApi::detail(const std::shared_ptr<Call>& call, std::string payment_id) {
  store_.read_async([this, self = shared_from_this(), call, id = std::move(payment_id)](storage::Store& store) {
    auto report = domain::inspect_payment(store, id, false);
    if (!report) {
      return call->respond(report.error().code == ErrorCode::kNotFound
                               ? not_found("no such payment")
                               : problem(503, "Service Unavailable", "the store cannot be read; retry"));
    }
    report->owner = owner_of(report->owner);
    if (!call->scope.sees(report->owner)) {
      return call->respond(not_found("no such payment"));  // another merchant's: as if absent
    }
    call->respond(http::Response(200, answers::payment_report_json(*report)));
  });
}

// A receipt of the payment as stored now, signed by the key in force: for the operator who
// sees its merchant (another merchant's payment is as absent as for GET .../payments/{id}).
void OperatorApi::receipt(const std::shared_ptr<Call>& call, std::string payment_id) {
  auto key = options_.signing_keys ? options_.signing_keys->active() : nullptr;
  if (!key) {
    return call->respond(problem(503, "Service Unavailable", "no signing key; retry"));
  }
  store_.read_async([this, self = shared_from_this(), call, key, id = std::move(payment_id)](storage::Store& store) {
    auto payment = domain::read_payment(domain::disk_lookup(store), id);
    if (!payment || !*payment) {
      return call->respond(problem(503, "Service Unavailable", "the store cannot be read; retry"));
    }
    const auto& record = (*payment)->record;
    if (!record || !call->scope.sees(owner_of(record->owner))) {
      return call->respond(not_found("no such payment"));
    }
    auto claims = receipts::claims_of(**payment, id, owner_of(record->owner));
    if (!claims) {
      return call->respond(not_found("no such payment"));
    }
    call->respond(http::Response(200, answers::receipt_json(receipts::issue(*key, *claims), key->public_key().kid,
                                                            receipts::claims_json(*claims))));
  });
}

// The anchor, without credentials: public keys only, read from the store at most every few
// seconds whoever asks; any page may fetch it (a verifier saved to disk included).
void OperatorApi::anchor(http::Responder respond) {
  auto answer = [respond](unsigned status, std::string body) {
    http::Response r(status, std::move(body), status == 200 ? "application/jwk-set+json" : "application/json");
    r.headers.push_back({"cache-control", "no-cache"});
    r.headers.push_back({"access-control-allow-origin", "*"});
    r.headers.push_back({"x-content-type-options", "nosniff"});
    respond(std::move(r));
  };
  if (auto cached = anchor_cache_.fresh()) {
    return answer(200, std::move(*cached));
  }
  store_.read_async([self = shared_from_this(), answer](storage::Store& store) {
    auto keys = receipts::published_keys(store);
    if (!keys) {
      return answer(503, problem(503, "Service Unavailable", "the store cannot be read; retry").body);
    }
    std::string set = signing::jwk_set_json(*keys);
    self->anchor_cache_.fill(set);
    answer(200, std::move(set));
  });
}

namespace {
// A size in a query: decimal digits only, below 2^53 (what a JSON reader keeps exact).
std::optional<uint64_t> size_parameter(const std::optional<std::string>& text) {
  if (!text || text->empty() || text->size() > 15 ||
      !std::all_of(text->begin(), text->end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoull(*text);
}
}  // namespace

// The transparency log's routes, public like the anchor: hashes and signatures only.
void OperatorApi::log_route(int route, const std::string& query, http::Responder respond) {
  auto reply = [respond](http::Response r) {
    r.headers.push_back({"x-content-type-options", "nosniff"});
    respond(std::move(r));
  };
  auto size = query_value(query, "size");
  auto tree_size = query_value(query, "treeSize");
  auto first = size_parameter(query_value(query, "first"));
  auto second = size_parameter(query_value(query, "second"));
  if ((size && !size_parameter(size)) || (tree_size && !size_parameter(tree_size)) ||
      (route == kConsistency && (!first || !second))) {
    return reply(bad_request("sizes are decimal numbers; consistency needs first and second"));
  }
  auto leaf = query_value(query, "leafHash").value_or("");
  size_t quorum = options_.log_quorum;
  store_.read_async([self = shared_from_this(), reply, route, quorum, leaf, size = size_parameter(size),
                     tree_size = size_parameter(tree_size), first, second](storage::Store& store) {
    switch (route) {
      case kTreeHead:
        return reply(tree_head_answer(store, size, quorum));
      case kInclusion:
        return reply(inclusion_answer(store, leaf, tree_size));
      default:
        return reply(consistency_answer(store, *first, *second));
    }
  });
}

void OperatorApi::operate(const std::shared_ptr<Call>& call, std::string payment_id, ppp::OperationKind kind) {
  auto manual = parse_manual(call->request.body, kind != ppp::OperationKind::kCancel);
  if (!manual) {
    return call->respond(bad_request(manual.error().message));
  }
  guarded(call, false, [this, self = shared_from_this(), call, id = std::move(payment_id), kind, manual = *manual](auto done) {
    with_visible_payment(call, id, done, [this, call, id, kind, manual, done](const domain::PaymentRecord& record) {
      ppp::OperationRequest op;
      op.kind = kind;
      op.payment_id = id;
      // The operation's requestId is the key's record: a retry after a crash that lost the
      // stored answer reaches the same operation, which answers what it did.
      op.request_id = "admin-" + call->record_key.substr(call->record_key.size() - 32);
      op.transaction_id = record.transaction_id;
      op.authorization_id = record.authorization_id;
      op.tid = record.tid;
      op.value = manual.value;
      op.note = "by operator " + call->request.principal + ": " + manual.reason;
      spdlog::info("operator {} asks for a {} of payment {} ({})", call->request.principal, ppp::to_string(kind), id,
                   op.request_id);
      service_.operate(std::move(op), owner_of(record.owner), [done](actors::Reply reply) {
        done(from_reply(std::move(reply)));
      });
    });
  });
}

void OperatorApi::reconcile(const std::shared_ptr<Call>& call, std::string payment_id) {
  guarded(call, true, [this, self = shared_from_this(), call, id = std::move(payment_id)](auto done) {
    with_visible_payment(call, id, done, [this, call, id, done](const domain::PaymentRecord& record) {
      spdlog::info("operator {} reconciles payment {}", call->request.principal, id);
      service_.refresh(id, owner_of(record.owner), [done](actors::Reply reply) { done(from_reply(std::move(reply))); });
    });
  });
}

// The payment as stored, read on a store reader thread, handed to `then` if this operator
// sees its merchant; otherwise `done` gets 404 (as if it did not exist), or 503.
void OperatorApi::with_visible_payment(const std::shared_ptr<Call>& call, const std::string& id, Done done,
                                       std::function<void(const domain::PaymentRecord&)> then) {
  store_.read_async([this, self = shared_from_this(), call, id, done = std::move(done),
                     then = std::move(then)](storage::Store& store) {
    auto payment = domain::read_payment(domain::disk_lookup(store), id);
    if (!payment || !*payment) {
      return done(problem(503, "Service Unavailable", "the store cannot be read; retry"));
    }
    const auto& record = (*payment)->record;
    if (!record || !call->scope.sees(owner_of(record->owner))) {
      return done(not_found("no such payment"));
    }
    then(*record);
  });
}

void OperatorApi::replay(const std::shared_ptr<Call>& call, std::string delivery_id) {
  guarded(call, false, [this, self = shared_from_this(), call, id = std::move(delivery_id)](auto done) {
    spdlog::info("operator {} replays delivery {}", call->request.principal, id);
    service_.replay_delivery(
        id, [this, self = shared_from_this(), call](const domain::OutboxEntry& e) { return call->scope.sees(owner_of(e.merchant)); },
        [done](actors::Reply reply) { done(from_reply(std::move(reply))); });
  });
}

}  // namespace idempay::admin
