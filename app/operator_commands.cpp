#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "store_location.hpp"
#include "idempay/domain/deliveries.hpp"
#include "idempay/domain/inspection.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/base/money.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::app {

namespace {
// Stored text as a terminal may show it: control characters (ESC, CR, NUL, ...) and DEL as
// \xHH, a backslash doubled. Stored strings come from outside (an operator's reason, an
// acquirer's message, a request's ids): none may forge a line or drive the operator's terminal.
std::string shown(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c == '\\' ? "\\\\" : std::string(1, c);
    }
  }
  return out;
}

// The callback URL's query carries the gateway's X-VTEX-signature: never print it.
std::string without_query(const std::string& url) { return shown(url.substr(0, url.find('?'))); }

// Reading tools open the store read-only, which works on a running connector's store too;
// writing tools (replay) need it stopped.
Result<std::unique_ptr<storage::Store>> open_for_operator(const std::string& store, const std::string& data_dir,
                                                          bool write = false) {
  auto at = parse_store_location(store, data_dir);
  if (!at) {
    return tl::unexpected(at.error());
  }
  if (at->kind == StoreLocation::Kind::kRocks && !std::filesystem::exists(at->where)) {
    return make_error(ErrorCode::kNotFound, "no store at " + at->where);
  }
  auto opened = open_store_at(*at, !write);
  if (!opened) {
    return make_error(ErrorCode::kUnavailable,
                      opened.error().message + " (is the connector still running on this store?)");
  }
  return opened;
}
}  // namespace

int run_deliveries(const DeliveriesConfig& config) {
  auto store = open_for_operator(config.store, config.data_dir, config.action == "replay");
  if (!store) {
    std::cerr << store.error().message << "\n";
    return 1;
  }
  if (config.action == "replay") {
    auto s = domain::replay_dead_letter(**store, config.id);
    if (!s) {
      std::cerr << s.error().message << "\n";
      return 1;
    }
    std::cout << "replayed " << config.id << ": it is delivered when the connector runs\n";
    return 0;
  }
  auto list = domain::list_deliveries(**store);
  if (!list) {
    std::cerr << list.error().message << "\n";
    return 1;
  }
  if (config.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& d : *list) {
      w.begin_object().key("id").string(d.id).key("paymentId").string(d.payment_id);
      w.key("url").string(without_query(d.url)).key("state").string(d.dead ? "dead" : "pending");
      w.key("attempts").number(d.attempts).key("lastStatus").number(d.last_status);
      w.key("lastError").string(d.last_error).key("reason").string(d.dead_reason).end_object();
    }
    w.end_array();
    std::cout << w.str() << "\n";
    return 0;
  }
  for (const auto& d : *list) {
    std::cout << (d.dead ? "dead    " : "pending ") << shown(d.id) << "  payment=" << shown(d.payment_id)
              << "  attempts=" << d.attempts << "  last=" << d.last_status << " " << shown(d.last_error)
              << (d.dead ? "  reason=" + shown(d.dead_reason) : "") << "  url=" << without_query(d.url) << "\n";
  }
  return 0;
}

namespace {

void write_report_json(const domain::PaymentReport& r) {
  JsonWriter w;
  w.begin_object().key("paymentId").string(r.payment_id).key("owner").string(r.owner).key("state").string(r.state);
  w.key("paymentMethod").string(r.payment_method).key("currency").string(r.currency);
  w.key("authorized").raw_number(format_amount(r.authorized)).key("settled").raw_number(format_amount(r.settled));
  w.key("refunded").raw_number(format_amount(r.refunded));
  w.key("tid").string(r.tid).key("nsu").string(r.nsu).key("authorizationId").string(r.authorization_id);
  w.key("cardBin").string(r.card_bin).key("cardLast4").string(r.card_last4);
  w.key("callbackUrl").string(r.callback_url).key("posPhase").string(r.pos_phase);
  w.key("response").string(r.response);
  w.key("operations").begin_array();
  for (const auto& op : r.operations) {
    w.begin_object().key("requestId").string(op.request_id).key("kind").string(op.kind).key("phase").string(op.phase);
    w.key("amount").raw_number(format_amount(op.amount)).key("httpStatus").number(op.http_status);
    w.key("response").string(op.response).end_object();
  }
  w.end_array().key("deliveries").begin_array();
  for (const auto& d : r.deliveries) {
    w.begin_object().key("id").string(d.id).key("state").string(d.dead ? "dead" : "pending");
    w.key("attempts").number(d.attempts).key("lastStatus").number(d.last_status).end_object();
  }
  w.end_array().key("audit").begin_array();
  for (const auto& a : r.audit) {
    w.begin_object().key("seq").number(static_cast<int64_t>(a.seq)).key("time").number(a.time);
    w.key("kind").string(a.kind).key("ref").string(a.ref).key("before").string(a.before);
    w.key("after").string(a.after).key("detail").string(a.detail).key("merchant").string(a.merchant);
    w.key("hash").string(a.hash).end_object();
  }
  w.end_array().key("counted").begin_array();
  for (const auto& c : r.counted) {
    w.begin_object().key("kind").string(c.kind).key("fingerprint").string(c.fingerprint);
    w.key("merchant").string(c.merchant).key("count").number(static_cast<int64_t>(c.count));
    w.key("first").number(c.first).key("last").number(c.last);
    w.key("sealedIn").number(static_cast<int64_t>(c.sealed_in)).end_object();
  }
  w.end_array().end_object();
  std::cout << w.str() << "\n";
}

void write_report_text(const domain::PaymentReport& r) {
  std::cout << "payment " << shown(r.payment_id) << ": " << r.state << " (" << shown(r.payment_method) << ", "
            << shown(r.currency) << ", merchant " << (r.owner.empty() ? "(stored before owners)" : shown(r.owner))
            << ")\n"
            << "  authorized " << format_amount(r.authorized) << ", settled " << format_amount(r.settled)
            << ", refunded " << format_amount(r.refunded) << "\n"
            << "  tid " << shown(r.tid) << ", nsu " << shown(r.nsu) << ", authorizationId " << shown(r.authorization_id)
            << "\n"
            << "  card " << (r.card_bin.empty() ? "-" : shown(r.card_bin) + "..." + shown(r.card_last4))
            << ", callback " << shown(r.callback_url) << (r.pos_phase.empty() ? "" : ", POS " + r.pos_phase) << "\n"
            << "  answer: " << shown(r.response) << "\n";
  std::cout << "operations:\n";
  for (const auto& op : r.operations) {
    std::cout << "  " << shown(op.request_id) << "  " << op.kind << "  " << op.phase << "  "
              << format_amount(op.amount) << "  HTTP " << op.http_status << "\n";
  }
  std::cout << "deliveries:\n";
  for (const auto& d : r.deliveries) {
    std::cout << "  " << shown(d.id) << "  " << (d.dead ? "dead" : "pending") << "  attempts " << d.attempts << "\n";
  }
  std::cout << "audit trail:\n";
  for (const auto& a : r.audit) {
    std::cout << "  #" << a.seq << "  " << shown(a.kind) << "  " << shown(a.ref);
    if (!a.merchant.empty()) {
      std::cout << "  by " << shown(a.merchant);
    }
    if (!a.before.empty() || !a.after.empty()) {
      std::cout << "  " << (a.before.empty() ? "-" : shown(a.before)) << " -> " << shown(a.after);
    }
    if (!a.detail.empty() && a.kind != "arrivals_counted") {
      std::cout << "  (" << shown(a.detail) << ")";
    }
    std::cout << "\n";
  }
  if (!r.counted.empty()) {
    std::cout << "arrivals counted, not chained one by one (the chain was long):\n";
    for (const auto& c : r.counted) {
      std::cout << "  " << c.count << " x " << shown(c.kind) << (c.merchant.empty() ? "" : " by " + shown(c.merchant))
                << "  first " << c.first << "  last " << c.last
                << (c.sealed_in ? "  in #" + std::to_string(c.sealed_in) : "  not sealed yet") << "\n";
    }
  }
}

}  // namespace

int run_inspect(const OperatorConfig& config) {
  auto store = open_for_operator(config.store, config.data_dir);
  if (!store) {
    std::cerr << store.error().message << "\n";
    return 1;
  }
  auto report = domain::inspect_payment(**store, config.payment_id);
  if (!report) {
    std::cerr << report.error().message << "\n";
    return report.error().code == ErrorCode::kNotFound ? 3 : 1;
  }
  config.json ? write_report_json(*report) : write_report_text(*report);
  return 0;
}

int run_audit_verify(const OperatorConfig& config) {
  auto store = open_for_operator(config.store, config.data_dir);
  if (!store) {
    std::cerr << store.error().message << "\n";
    return 1;
  }
  std::optional<std::string> only;
  if (!config.payment_id.empty()) {
    only = config.payment_id;
  }
  auto problems = domain::verify_store(**store, only);
  if (!problems) {
    std::cerr << problems.error().message << "\n";
    return 1;
  }
  for (const auto& p : *problems) {
    std::cout << "INCONSISTENT payment " << shown(p.payment_id) << ": " << shown(p.problem) << "\n";
  }
  if (!problems->empty()) {
    std::cout << problems->size() << " inconsistencies found\n";
    return 2;
  }
  std::cout << "audit verified: every chain intact, payments, operations and deliveries agree\n";
  return 0;
}

}  // namespace idempay::app

namespace idempay::app {

int run_migrate(const MigrateConfig& config) {
  auto at = parse_store_location(config.store, "");
  if (!at || at->kind != StoreLocation::Kind::kPostgres) {
    std::cerr << "migrate: --store must name a PostgreSQL database (postgresql://...); RocksDB needs no migration\n";
    return 2;
  }
  storage::PostgresOptions options;
  options.uri = at->where;
  if (auto done = storage::migrate_postgres_store(options, domain::keyspace_names()); !done) {
    std::cerr << "migrate: " << done.error().message << "\n";
    return 1;
  }
  std::cout << "the schema is up to date\n";
  return 0;
}

}  // namespace idempay::app

namespace idempay::app {

namespace {

// Copies one keyspace page by page; put-if-absent, so that a destination already holding
// any of these keys is refused rather than overwritten.
Result<size_t> copy_keyspace(storage::Store& from, storage::Store& to, storage::Keyspace ks) {
  constexpr size_t kPage = 500;
  size_t copied = 0;
  std::string after;
  for (;;) {
    auto page = from.scan_after(ks, after, kPage);
    if (!page) {
      return tl::unexpected(page.error());
    }
    if (page->empty()) {
      return copied;
    }
    storage::Batch batch;
    for (auto& [key, v] : *page) {
      batch.push_back({ks, key, std::move(v.value), 0});
    }
    after = page->back().first;
    if (auto done = to.commit_and_wait(std::move(batch)); !done) {
      if (done.error().code == ErrorCode::kConflict) {
        return make_error(ErrorCode::kConflict, "the destination already holds data (" + done.error().message
                                                    + "): copy into an empty store");
      }
      return tl::unexpected(done.error());
    }
    copied += page->size();
  }
}

}  // namespace

int run_copy_store(const CopyStoreConfig& config) {
  auto from = parse_store_location(config.from, "");
  auto to = parse_store_location(config.to, "");
  if (!from || !to) {
    std::cerr << "copy-store: " << (!from ? from.error() : to.error()).message << "\n";
    return 2;
  }
  if (from->kind == to->kind && from->where == to->where) {
    std::cerr << "copy-store: --from and --to name the same store\n";
    return 2;
  }
  // Opened as a serving instance would be (without migrating): refused while a connector
  // runs on it, so that the copy is of a store nobody changes meanwhile. Nothing is written.
  auto source = open_store_at(*from, false, false);
  if (!source) {
    std::cerr << "copy-store: cannot open the source: " << source.error().message << "\n";
    return 1;
  }
  auto destination = open_store_at(*to, false);  // takes the destination's lock: no connector on it
  if (!destination) {
    std::cerr << "copy-store: cannot open the destination: " << destination.error().message << "\n";
    return 1;
  }
  const auto names = domain::keyspace_names();
  for (size_t i = 0; i < names.size(); ++i) {
    auto copied = copy_keyspace(**source, **destination, storage::Keyspace{static_cast<uint8_t>(i)});
    if (!copied) {
      std::cerr << "copy-store: " << names[i] << ": " << copied.error().message << "\n";
      return 1;
    }
    std::cout << names[i] << ": " << *copied << " keys\n";
  }
  std::cout << "copied from " << describe(*from) << " to " << describe(*to)
            << "; check it with `idempay audit verify --store ...` before serving from it\n";
  return 0;
}

}  // namespace idempay::app
