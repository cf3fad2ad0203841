// `idempay serve`: the connector, built step by step from its parts. Each step either succeeds
// or says why the start failed (a configuration error exits 2, anything else 1); then the
// process waits for signals: SIGHUP reloads, SIGINT and SIGTERM drain and stop.
#include <csignal>
#include <filesystem>
#include <sstream>
#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/acquirers/kinds.hpp"
#include "idempay/actors/payment_service.hpp"
#include "idempay/admin/operator_api.hpp"
#include "idempay/answers/answers.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/webhooks.hpp"
#include "idempay/cli/process.hpp"
#include "idempay/config/manifest.hpp"
#include "idempay/config/merchants.hpp"
#include "idempay/base/private_files.hpp"
#include "idempay/config/store_location.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/http/server.hpp"
#include "idempay/metrics/metrics.hpp"
#include "idempay/observability/logs.hpp"
#include "idempay/observability/metered_acquirers.hpp"
#include "idempay/observability/trace_export.hpp"
#include "idempay/ppp/callbacks.hpp"
#include "idempay/ppp/handler.hpp"
#include "idempay/ppp/onboarding.hpp"
#include "idempay/receipts/key_ring.hpp"
#include "idempay/receipts/log.hpp"
#include "idempay/signing/ed25519.hpp"
#include "idempay/storage/store.hpp"
#include "merchant_directory.hpp"
#include "serve.hpp"
#include "systemd_notify.hpp"

namespace idempay::app {

namespace {

// Why the start failed, and the exit code that says so.
struct StartError {
  int exit_code = 1;
  std::string message;
};
using Step = tl::expected<void, StartError>;

tl::unexpected<StartError> misconfigured(std::string message) { return tl::unexpected(StartError{2, std::move(message)}); }
tl::unexpected<StartError> failed(std::string message) { return tl::unexpected(StartError{1, std::move(message)}); }

// The operator API's routes (/admin/...) and the PPP's (everything else), on one listener.
class Routes final : public http::Handler {
public:
  Routes(http::Handler& ppp, http::Handler& operators) : ppp_(ppp), operators_(operators) {}
  void handle(http::Request request, http::Responder respond) override {
    std::string_view path = request.path;
    bool admin = path == "/admin" || path.substr(0, admin::kConsolePrefix.size()) == admin::kConsolePrefix ||
                 path == admin::kAnchorPath || path.substr(0, 5) == "/log/" || path.substr(0, 10) == "/receipts/";
    (admin ? operators_ : ppp_).handle(std::move(request), std::move(respond));
  }

private:
  http::Handler& ppp_;
  http::Handler& operators_;
};

// -- what the configuration says, read once -------------------------------------------------

// The merchants file. Without --credentials, a random merchant pair is generated once and
// kept (mode 0600) in the data directory, so that a fresh install is usable but never open to
// everyone.
Result<std::string> merchants_path(const ServeConfig& config) {
  if (!config.credentials.empty()) {
    return config.credentials;
  }
  std::string path = (std::filesystem::path(config.data_dir) / "dev-credentials.json").string();
  if (!std::filesystem::exists(path)) {
    std::string token = crypto::to_hex(reinterpret_cast<const uint8_t*>(crypto::random_bytes(24).data()), 24);
    auto written = write_private_file(
        path, R"({"merchants":[{"name":"dev","appKey":"dev","appToken":")" + token + "\"}]}\n");
    if (!written) {
      return tl::unexpected(written.error());
    }
  }
  spdlog::warn("no --credentials given; using the generated development pair in {}", path);
  return path;
}

// The first line of a secret file, without its line ending; kInvalidArgument if empty.
Result<std::string> secret_from_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) {
    return tl::unexpected(text.error());
  }
  std::string line = text->substr(0, text->find_first_of("\r\n"));
  if (line.empty()) {
    return make_error(ErrorCode::kInvalidArgument, path + " holds no secret");
  }
  return line;
}

// Fills in the secrets given as files; a file given replaces the option it stands for.
Status read_secret_files(ServeConfig& config) {
  for (const auto& path : config.acquirer_webhook_secret_files) {
    auto text = read_text_file(path);
    if (!text) {
      return tl::unexpected(text.error());
    }
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (!line.empty()) {
        config.acquirer_webhook_secrets.push_back(line);
      }
    }
  }
  for (auto [file, target] : {std::pair{&config.callback_app_token_file, &config.callback_app_token},
                              std::pair{&config.callback_signing_secret_file, &config.callback_signing_secret}}) {
    if (!file->empty()) {
      auto secret = secret_from_file(*file);
      if (!secret) {
        return tl::unexpected(secret.error());
      }
      *target = std::move(*secret);
    }
  }
  return {};
}

Result<std::vector<std::string>> decode_secrets(const std::vector<std::string>& secrets) {
  std::vector<std::string> keys;
  for (const auto& s : secrets) {
    auto key = webhooks::decode_secret(s);
    if (!key) {
      return tl::unexpected(key.error());
    }
    keys.push_back(std::move(*key));
  }
  return keys;
}

AcquirerDefaults acquirer_defaults(const ServeConfig& config) {
  AcquirerDefaults d;
  d.route = config.acquirer;
  d.timeout = std::chrono::milliseconds(config.acquirer_timeout_ms);
  d.stub.latency = std::chrono::milliseconds(config.stub_latency_ms);
  d.stub.pending_delay = std::chrono::milliseconds(config.stub_pending_delay_ms);
  d.secure_proxy.allow_private = config.callback_allow_private;
  d.secure_proxy.extra_ca_file = config.callback_ca_file;
  return d;
}

// The default split: half the cores for HTTP I/O, half for the actors. Every extra thread
// on a busy core adds hand-offs (futex wake-ups, context switches): on 2 cores one I/O thread
// and one worker served ~10% more creates than two of each, and as many replays.
int half_the_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency() / 2)); }

// Unique per process: a restarted instance is a new one, and the leases of the one that died
// expire instead of being taken for its own.
// It goes into records, logs and the health answer: letters, digits, '.', '_' and '-' only.
std::string instance_name(const ServeConfig& config) {
  std::string name = config.instance;
  if (name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string suffix = crypto::random_bytes(3);
    name = std::string(host) + "-" + std::to_string(getpid()) + "-"
           + crypto::to_hex(reinterpret_cast<const uint8_t*>(suffix.data()), suffix.size());
  }
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      c = '-';
    }
  }
  return name.substr(0, 64);
}

actors::ServiceOptions service_options(const ServeConfig& config, std::string legacy_owner, bool shared_store,
                                       const std::string& instance) {
  actors::ServiceOptions o;
  if (shared_store) {
    o.instance = instance;
    spdlog::info("instance {}: sharing the store with any other instance on it", o.instance);
  }
  o.lease = std::chrono::milliseconds(config.lease_ms);
  o.sweep_interval = std::chrono::milliseconds(config.sweep_interval_ms);
  o.follow_timeout = std::chrono::milliseconds(config.follow_timeout_ms);
  o.idle_timeout = std::chrono::milliseconds(config.idle_timeout_ms);
  o.workers = config.workers > 0 ? config.workers : half_the_cores();
  o.callbacks.retry_base = std::chrono::milliseconds(config.callback_retry_base_ms);
  o.callbacks.retry_window = std::chrono::milliseconds(config.callback_retry_window_ms);
  o.callbacks.max_per_destination = config.callback_max_per_destination;
  o.reconcile_base = std::chrono::milliseconds(config.reconcile_base_ms);
  o.reconcile_attempts = config.reconcile_attempts;
  o.status_polls_per_second = config.status_polls_per_second;
  o.answer_deadline = std::chrono::milliseconds(config.answer_deadline_ms);
  o.legacy_owner = std::move(legacy_owner);
  return o;
}

// What the metrics read when scraped, on the scraping thread.
void add_log_gauges(const receipts::TransparencyLog& log) {
  metrics::add_gauge("idempay_log_consistent",
                     "1 while every tree head this instance checked extends the one it signed before, else 0",
                     [&log] { return log.health().consistent ? 1.0 : 0.0; });
  metrics::add_gauge("idempay_log_signed_size", "The size of the newest tree head this instance signed",
                     [&log] { return static_cast<double>(log.health().signed_size); });
}

void add_service_gauges(actors::PaymentService& service) {
  metrics::add_gauge("idempay_live_payment_actors", "Payment actors in memory (the rest are passivated)",
                     [&service] { return static_cast<double>(service.live_actors()); });
  metrics::add_gauge("idempay_outbox_pending", "Callback deliveries waiting in this instance's outbox",
                     [&service] { return static_cast<double>(service.outbox_backlog().first); });
  metrics::add_gauge("idempay_outbox_oldest_pending_age_seconds", "Age of the oldest callback delivery waiting",
                     [&service] {
                       int64_t oldest = service.outbox_backlog().second;
                       int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::system_clock::now().time_since_epoch()).count();
                       return oldest == 0 ? 0.0 : static_cast<double>(now - oldest) / 1000.0;
                     });
  metrics::add_gauge("idempay_access_log_dropped_lines", "Access log lines dropped because the log fell behind",
                     [] { return static_cast<double>(observability::access_log_drops()); });
}

// Spans sent and lost; both 0 with tracing off.
void add_trace_gauges(const observability::TraceExporter* exporter) {
  metrics::add_gauge("idempay_trace_spans_exported", "Spans the OpenTelemetry collector accepted",
                     [exporter] { return exporter ? static_cast<double>(exporter->exported()) : 0.0; });
  metrics::add_gauge("idempay_trace_spans_dropped",
                     "Spans dropped: the export queue was full, or the collector did not take their batch",
                     [exporter] { return exporter ? static_cast<double>(exporter->dropped()) : 0.0; });
}

// -- the connector: its parts, built in order, torn down in reverse -------------------------

class Connector {
public:
  explicit Connector(ServeConfig config) : config_(std::move(config)) {}

  // The steps of a start, in order; the first that fails ends it.
  Step start() {
    for (auto step : {&Connector::read_configuration, &Connector::load_merchants, &Connector::open_store,
                      &Connector::load_signing_key, &Connector::make_callbacks, &Connector::make_service, &Connector::make_handlers,
                      &Connector::start_server, &Connector::start_service}) {
      if (auto done = (this->*step)(); !done) {
        return done;
      }
    }
    return {};
  }

  // Serves until SIGINT or SIGTERM; SIGHUP reloads the merchants and the TLS certificate.
  void serve() {
    notify_systemd("READY=1");
    int sig = 0;
    while ((sig = cli::wait_for_service_signal()) == SIGHUP) {
      notify_systemd("RELOADING=1");
      reload();
      notify_systemd("READY=1");
    }
    stop(sig);
  }

private:
  Step read_configuration() {
    if (auto secrets = read_secret_files(config_); !secrets) {
      return misconfigured(secrets.error().message);
    }
    if (!cli::split_host_port(config_.listen, server_options_.host, server_options_.port)) {
      return misconfigured("--listen must be HOST:PORT, got " + config_.listen);
    }
    auto proxies = http::NetworkList::parse(config_.trusted_proxies);
    if (!proxies) {
      return misconfigured("--trusted-proxies: " + proxies.error().message);
    }
    server_options_.trusted_proxies = std::move(*proxies);
    if (auto dir = ensure_private_directory(config_.data_dir); !dir) {
      return failed(dir.error().message);
    }
    if (auto route = config::check_acquirer_route(config_.acquirer); !route) {
      return misconfigured("--acquirer: " + route.error().message);
    }
    auto manifest = config_.manifest.empty() ? Result<config::Manifest>(config::default_manifest())
                                             : config::load_manifest(config_.manifest);
    if (!manifest) {
      return misconfigured("--manifest: " + manifest.error().message);
    }
    manifest_ = std::move(*manifest);
    return {};
  }

  // What the merchants file allows but the rest of the configuration makes unwise.
  void warn_about(const config::MerchantFile& merchants) const {
    for (const auto& warning : merchants.warnings) {
      spdlog::warn("{}: {}", merchants_path_, warning);
    }
    bool asks_certificates = config_.tls_client_certificates && !config_.tls_cert.empty();
    for (const auto& [merchant, settings] : merchants.settings) {
      for (const auto& a : settings.acquirers) {
        const auto* pix = acquirer::bcb_pix_settings(*a.settings);
        if (pix != nullptr && !pix->webhook.certificate_sha256.empty() && !asks_certificates) {
          spdlog::warn("{}: merchant {}, acquirer {}: notifications must come with a pinned client certificate, "
                       "which only a TLS listener with --tls-client-certificates receives; they are refused until then",
                       merchants_path_, merchant, a.name);
        }
      }
    }
  }

  Step load_merchants() {
    auto path = merchants_path(config_);
    if (!path) {
      return misconfigured(path.error().message);
    }
    merchants_path_ = *path;
    onboarded_path_ = (std::filesystem::path(config_.data_dir) / "onboarded-merchants.json").string();
    auto merchants = config::load_merchant_file(merchants_path_, acquirer::acquirer_kinds(), onboarded_path_);
    if (!merchants) {
      return misconfigured(merchants.error().message);
    }
    warn_about(*merchants);
    server_options_.credentials = merchants->credentials;
    server_options_.bearer_credentials = merchants->operator_credentials;
    legacy_owner_ = merchants->first_merchant;
    directory_ = std::make_unique<MerchantDirectory>(std::move(*merchants), acquirer_defaults(config_));
    return {};
  }

  Step open_store() {
    auto at = config::parse_store_location(config_.store, config_.data_dir);
    if (!at) {
      return failed("cannot open the store: " + at.error().message);
    }
    at->memtable_bytes = static_cast<size_t>(config_.rocksdb_memtable_mb) << 20;
    shared_store_ = at->kind == config::StoreLocation::Kind::kPostgres;
    spdlog::info("store: {}", config::describe(*at));
    auto store = config::open_store_at(*at, false, !config_.no_migrate);
    // A database with no primary for now (a failover under way, the cluster starting) is
    // waited for: an instance restarted meanwhile starts once there is one, by itself.
    auto give_up = std::chrono::steady_clock::now() + kStoreWait;
    auto next_line = std::chrono::steady_clock::now();
    while (!store && shared_store_ && store.error().code == ErrorCode::kUnavailable &&
           std::chrono::steady_clock::now() < give_up) {
      if (std::chrono::steady_clock::now() >= next_line) {
        spdlog::warn("store: no writable database yet ({}); trying again for up to {} s", store.error().message,
                     std::chrono::duration_cast<std::chrono::seconds>(give_up - std::chrono::steady_clock::now()).count());
        next_line += std::chrono::seconds(10);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      store = config::open_store_at(*at, false, !config_.no_migrate);
    }
    if (!store) {
      return failed("cannot open the store: " + store.error().message);
    }
    store_ = std::move(*store);
    return {};
  }

  static constexpr auto kStoreWait = std::chrono::seconds(60);

  // The key receipts are signed with: --signing-key (given by the operator, private to the
  // service's user), or in development one generated once in the data directory. Its public
  // half is published in the store before anything is signed with it.
  Step load_signing_key() {
    signing_key_path_ = config_.signing_key.empty() ? receipts::development_key_path(config_.data_dir)
                                                    : config_.signing_key;
    auto key = config_.signing_key.empty() ? signing::SigningKey::load_or_generate(signing_key_path_)
                                           : signing::SigningKey::load(signing_key_path_);
    if (!key) {
      return misconfigured("--signing-key: " + key.error().message);
    }
    if (config_.signing_key.empty()) {
      spdlog::warn("no --signing-key given; receipts are signed with the development key in {}", signing_key_path_);
    }
    if (auto published = receipts::publish(*store_, key->public_key()); !published) {
      return failed("cannot publish the signing key: " + published.error().message);
    }
    spdlog::info("receipts are signed with key {}", key->public_key().kid);
    audit_signer_.set(key->public_key().kid);
    signing_keys_ = std::make_shared<receipts::KeyRing>(std::move(*key));
    receipts::LogOptions log;
    log.interval = std::chrono::milliseconds(config_.log_interval_ms);
    log.quorum = static_cast<size_t>(std::max<int64_t>(1, config_.log_quorum));
    log.witness_file = (std::filesystem::path(config_.data_dir) / "log-witness.json").string();
    transparency_log_ = std::make_unique<receipts::TransparencyLog>(*store_, signing_keys_, std::move(log));
    return {};
  }

  // Callbacks to the gateway: signed, with the connector's (or the merchant's own) credentials,
  // only to allowed hosts.
  Step make_callbacks() {
    std::string signing_secret = config_.callback_signing_secret;
    if (signing_secret.empty()) {
      auto generated = read_or_create_secret((std::filesystem::path(config_.data_dir) / "dev-callback-secret").string(),
                                                     [] { return webhooks::generate_secret(); });
      if (!generated) {
        return failed(generated.error().message);
      }
      signing_secret = std::move(*generated);
      spdlog::warn("no --callback-signing-secret given; callbacks are signed with the secret in "
                   "{}/dev-callback-secret", config_.data_dir);
    }
    auto signing_key = webhooks::decode_secret(signing_secret);
    if (!signing_key) {
      return misconfigured("--callback-signing-secret: " + signing_key.error().message);
    }
    if (config_.callback_app_key.empty() || config_.callback_app_token.empty()) {
      spdlog::warn("no --callback-app-key/--callback-app-token: callbacks carry empty VTEX credentials");
    }
    auto callback_hosts = http::HostAllowlist::parse(config_.callback_allowed_hosts);
    auto proxy_hosts = http::HostAllowlist::parse(config_.secure_proxy_allowed_hosts);
    auto return_hosts = http::HostAllowlist::parse(config_.onboarding_return_hosts);
    for (auto* hosts : {&callback_hosts, &proxy_hosts, &return_hosts}) {
      if (!*hosts) {
        return misconfigured("--callback-allowed-hosts / --secure-proxy-allowed-hosts / --onboarding-return-hosts: " +
                             hosts->error().message);
      }
    }
    callback_rules_ = http::DestinationRules{*callback_hosts, config_.callback_allow_private};
    proxy_rules_ = http::DestinationRules{*proxy_hosts, config_.callback_allow_private};
    return_rules_ = http::DestinationRules{*return_hosts, config_.callback_allow_private};
    ppp::CallbackTransportOptions options;
    options.app_key = config_.callback_app_key;
    options.app_token = config_.callback_app_token;
    options.signing_key = *signing_key;
    options.destinations = callback_rules_;
    options.merchant_credentials = [directory = directory_.get()](const std::string& merchant) {
      return directory->callback_credentials(merchant);
    };
    options.total_timeout = std::chrono::milliseconds(config_.callback_timeout_ms);
    options.extra_ca_file = config_.callback_ca_file;
    transport_ = std::make_unique<ppp::HttpCallbackTransport>(options);
    return {};
  }

  // The payment engine, and what watches it: metrics, the event log.
  Step make_service() {
    instance_name_ = instance_name(config_);
    if (!config_.otlp_endpoint.empty()) {  // first: whatever starts after it is traced
      observability::TraceExportOptions traces;
      traces.endpoint = config_.otlp_endpoint;
      traces.sample_ratio = config_.trace_sample_ratio;
      traces.queue_spans = static_cast<size_t>(config_.trace_queue_spans);
      traces.service_version = IDEMPAY_VERSION;
      traces.instance = instance_name_;
      auto exporter = observability::TraceExporter::start(traces);
      if (!exporter) {
        return misconfigured(exporter.error().message);
      }
      trace_exporter_ = std::move(*exporter);
    }
    if (!config_.metrics_listen.empty()) {
      metrics::enable();
      try {
        metrics_endpoint_ = std::make_unique<metrics::Endpoint>(config_.metrics_listen);
      } catch (const std::exception& e) {
        return failed("--metrics-listen " + config_.metrics_listen + ": " + e.what());
      }
    }
    auto options = service_options(config_, legacy_owner_, shared_store_, instance_name_);
    options.log_consistent = [log = transparency_log_.get()] { return log->health().consistent; };
    options.signer = &audit_signer_;
    options.methods = manifest_.methods;
    options.answers = &answers_;
    if (config_.event_log != "off") {
      auto events = observability::make_event_log(config_.event_log);
      if (!events) {
        return misconfigured(events.error().message);
      }
      options.on_event = std::move(*events);
    }
    metered_acquirers_ = std::make_unique<observability::MeteredAcquirerRoutes>(*directory_);
    service_ = std::make_unique<actors::PaymentService>(*store_, *metered_acquirers_, *transport_, std::move(options));
    if (metrics_endpoint_) {
      add_trace_gauges(trace_exporter_.get());
      add_service_gauges(*service_);
      add_log_gauges(*transparency_log_);
    }
    return {};
  }

  // The PPP's routes and the operator API's, and what the server needs to know of them.
  Step make_handlers() {
    auto webhook_keys = decode_secrets(config_.acquirer_webhook_secrets);
    if (!webhook_keys) {
      return misconfigured("--acquirer-webhook-secret: " + webhook_keys.error().message);
    }
    // The in-process stub reports to this very server, signed with a key of its own.
    stub_key_ = crypto::random_bytes(32);
    webhook_keys->push_back(stub_key_);
    ppp::PppHandlerOptions options;
    options.webhook_keys = std::move(*webhook_keys);
    if (directory_->uses_stub()) {
      options.stub_trigger = [directory = directory_.get()](const std::string& payment_id, const std::string& outcome) {
        return directory->stub_trigger(payment_id, outcome);
      };
    }
    options.callback_urls = callback_rules_;
    options.secure_proxy_urls = proxy_rules_;
    options.policy_of = [directory = directory_.get()](const std::string& merchant) {
      return directory->policy_of(merchant);
    };
    options.manifest = manifest_;
    ppp::OnboardingOptions flow;
    flow.issued_path = onboarded_path_;
    flow.return_urls = return_rules_;
    flow.activate = [this] { reload_merchants(); };
    flow.max_merchants = static_cast<size_t>(config_.onboarding_max_merchants);
    onboarding_ = std::make_unique<ppp::Onboarding>(std::move(flow));
    options.onboarding = onboarding_.get();
    for (const acquirer::Kind* kind : acquirer::acquirer_kinds()) {
      if (kind->notify) {
        options.acquirer_webhooks.push_back({kind->name, kind->suffixes});
      }
    }
    options.notify_acquirer = [directory = directory_.get(), service = service_.get()](
                                  const std::string& kind, const std::string& merchant, const std::string& acquirer,
                                  const http::Request& request, const http::Responder& respond) {
      auto entry = directory->acquirer_entry(merchant, acquirer);
      if (!entry || entry->kind->name != kind || !entry->kind->notify) {
        return false;
      }
      std::string route = config::named_route(entry->name);
      entry->kind->notify(*entry->settings, acquirer::Notification{merchant, route, request, respond, *service});
      return true;
    };
    ppp_handler_ = std::make_unique<ppp::PppHandler>(*service_, std::move(options));
    admin::OperatorApiOptions admin_options;
    admin_options.operators = [directory = directory_.get()](const std::string& name) {
      return directory->operator_scope(name);
    };
    admin_options.idempotency.retention = std::chrono::seconds(config_.idempotency_retention_s);
    admin_options.idempotency.keyspace = domain::Space::kIdempotency;
    admin_options.legacy_owner = legacy_owner_;
    admin_options.signing_keys = signing_keys_;
    admin_options.log_quorum = transparency_log_->quorum();
    admin_options.cursor_key = [service = service_.get()] { return service->derive_key("operator API search cursors"); };
    operator_api_ = std::make_shared<admin::OperatorApi>(*service_, *store_, std::move(admin_options));
    routes_ = std::make_unique<Routes>(*ppp_handler_, *operator_api_);
    return {};
  }

  Step start_server() {
    auto& o = server_options_;
    o.io_threads = config_.io_threads > 0 ? config_.io_threads : half_the_cores();
    o.max_connections = static_cast<size_t>(std::max<int64_t>(0, config_.max_connections));
    o.max_connections_per_source = static_cast<size_t>(std::max<int64_t>(1, config_.max_connections_per_source));
    o.header_timeout = std::chrono::milliseconds(config_.header_timeout_ms);
    o.answer_limit = std::chrono::milliseconds(config_.request_timeout_ms);
    o.public_paths = {"/manifest", "/payment-methods", "/health", "/health/live", "/health/ready",
                      "/webhooks/acquirer", "/webhooks/bcb-pix/*", "/webhooks/adyen/*", "/pos/*", "/authorization/redirect"};
    for (auto& page : admin::OperatorApi::public_paths()) {
      o.public_paths.push_back(std::move(page));
    }
    o.known_path = [ppp = ppp_handler_.get(), operators = operator_api_.get()](std::string_view path) {
      return ppp->knows(path) || operators->knows(path);
    };
    o.bearer_prefix = std::string(admin::kApiPrefix);
    for (const auto& [key, token] : idempay::ppp::kCredentialHeaders) {
      o.credential_headers.push_back({std::string(key), std::string(token)});
    }
    o.test_suite_header = std::string(ppp::kTestSuiteHeader);
    if (config_.access_log != "off") {
      auto access = observability::make_access_log(config_.access_log);
      if (!access) {
        return misconfigured(access.error().message);
      }
      o.access_log = std::move(*access);
    }
    o.access_log = observability::observe_requests(std::move(o.access_log), metrics_endpoint_ != nullptr);
    o.errors = [](unsigned status, std::string_view code, std::string_view message) {
      return http::Response(status, answers::write_error(code, message));
    };
    if (!config_.tls_cert.empty() || !config_.tls_key.empty()) {
      http::TlsListenerOptions tls;
      if (config_.tls_cert.empty() || config_.tls_key.empty() || !cli::split_host_port(config_.tls_listen, tls.host, tls.port)) {
        return misconfigured("TLS needs --tls-cert and --tls-key, and --tls-listen as HOST:PORT");
      }
      tls.cert_file = config_.tls_cert;
      tls.key_file = config_.tls_key;
      if (config_.tls_client_certificates) {
        // Asked for, never required: only the API Pix notifications pin them.
        tls.client_certificates = http::TlsListenerOptions::ClientCertificates::kRequest;
      }
      o.tls = std::move(tls);
    }
    server_ = std::make_unique<http::Server>(o, *routes_);
    auto port = server_->start();  // answers 503 until the service has started
    if (!port) {
      return failed(port.error().message);
    }
    port_ = *port;
    return {};
  }

  Step start_service() {
    bool any_address = server_options_.host == "0.0.0.0" || server_options_.host == "::";
    std::string self_host = any_address ? "127.0.0.1" : server_options_.host;
    if (self_host.find(':') != std::string::npos) {
      self_host = "[" + self_host + "]";
    }
    std::string self_url = "http://" + self_host + ":" + std::to_string(port_);
    if (auto s = service_->start(config_.public_url.empty() ? self_url : config_.public_url); !s) {
      return failed("cannot start: " + s.error().message);
    }
    directory_->enable_stub_webhooks(self_url + "/webhooks/acquirer", stub_key_);
    if (auto log = transparency_log_->start(); !log) {
      return failed("cannot start the transparency log: " + log.error().message);
    }
    // Tests and scripts read this line to learn the port when listening on port 0.
    spdlog::info("idempay listening on {}:{} (acquirer: {}, data: {})", server_options_.host, port_, config_.acquirer,
                 config_.data_dir);
    if (server_options_.tls) {
      spdlog::info("idempay listening with TLS on {}:{}", server_options_.tls->host, server_->tls_port());
    }
    if (metrics_endpoint_) {
      spdlog::info("metrics on port {} (GET /metrics)", metrics_endpoint_->port());
    }
    return {};
  }

  // SIGHUP: the merchants file is read again; if it is valid, new credentials and settings
  // apply to the next request (payments already created keep their acquirer); if not, the old
  // ones stay and the error is logged. The TLS certificate and key too.
  void reload() {
    reload_merchants();
    reload_signing_key();
    if (auto reloaded = server_->reload_tls(); !reloaded) {
      spdlog::error("TLS certificate not reloaded, the previous one stays: {}", reloaded.error().message);
    } else if (server_options_.tls) {
      spdlog::info("TLS certificate and key reloaded from {}", server_options_.tls->cert_file);
    }
  }

  void reload_merchants() {
    auto reloaded = config::load_merchant_file(merchants_path_, acquirer::acquirer_kinds(), onboarded_path_);
    if (!reloaded) {
      spdlog::error("{} not reloaded, the previous merchants stay: {}", merchants_path_, reloaded.error().message);
      return;
    }
    warn_about(*reloaded);
    size_t count = reloaded->credentials->size();
    server_->set_credentials(reloaded->credentials);
    server_->set_bearer_credentials(reloaded->operator_credentials);
    directory_->replace(std::move(*reloaded));
    service_->forget_repeats();  // answers given under the old settings are checked again
    spdlog::info("{} reloaded ({} merchants)", merchants_path_, count);
  }

  // A rotation: the file holds a new key. It is published first, then signs; the old one stays
  // published (receipts it signed verify for ever) and signs no more.
  void reload_signing_key() {
    auto key = signing::SigningKey::load(signing_key_path_);
    if (!key) {
      spdlog::error("signing key not reloaded, the previous one stays: {}", key.error().message);
      return;
    }
    std::string retired = signing_keys_->active()->public_key().kid;
    if (key->public_key().kid == retired) {
      return;
    }
    if (auto published = receipts::publish(*store_, key->public_key()); !published) {
      spdlog::error("signing key not reloaded, the previous one stays: cannot publish it: {}",
                    published.error().message);
      return;
    }
    spdlog::info("signing key rotated: receipts are signed with key {}; key {} is retired and stays published",
                 key->public_key().kid, retired);
    audit_signer_.set(key->public_key().kid);
    signing_keys_->replace(std::move(*key));
  }

  // Not ready first, so that the load balancer stops sending; requests keep being served
  // meanwhile, and then the drain waits for those in flight.
  void stop(int sig) {
    notify_systemd("STOPPING=1");
    service_->begin_drain();
    if (config_.drain_grace_ms > 0) {
      spdlog::info("signal {} received: not ready; draining in {} ms", sig, config_.drain_grace_ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(config_.drain_grace_ms));
    }
    spdlog::info("signal {} received: draining", sig);
    size_t left = server_->stop(std::chrono::milliseconds(config_.drain_timeout_ms));
    if (left > 0) {
      spdlog::warn("{} requests still unanswered after the drain timeout", left);
    }
    onboarding_.reset();  // its last exchange, if any, reloads the merchants: before they go
    // Order matters: actors stop first, then the store (which completes pending commits),
    // then the acquirers (in the directory), then the objects the callbacks of both may reach.
    service_->shutdown();
    transparency_log_.reset();  // its last round ends before the store closes
    store_.reset();
    directory_.reset();
    transport_.reset();
    service_.reset();
    server_.reset();
    trace_exporter_.reset();  // the last spans (the drain's) get one try
    spdlog::info("stopped cleanly");
  }

  ServeConfig config_;
  config::Manifest manifest_;
  std::string merchants_path_;
  std::string onboarded_path_;
  std::string legacy_owner_;
  bool shared_store_ = false;
  std::string instance_name_;  // this process's: its leases on a shared store, its spans' service.instance.id
  http::ServerOptions server_options_;
  http::DestinationRules callback_rules_;
  http::DestinationRules proxy_rules_;
  http::DestinationRules return_rules_;
  std::string stub_key_;
  uint16_t port_ = 0;
  // Declared in the order they are built; stop() tears them down in the order that matters.
  std::unique_ptr<MerchantDirectory> directory_;
  std::unique_ptr<storage::Store> store_;
  std::string signing_key_path_;
  std::shared_ptr<receipts::KeyRing> signing_keys_;
  domain::AuditSigner audit_signer_;  // the key in force's id, which the audit entries name
  std::unique_ptr<receipts::TransparencyLog> transparency_log_;
  std::unique_ptr<ppp::HttpCallbackTransport> transport_;
  std::unique_ptr<observability::TraceExporter> trace_exporter_;
  std::unique_ptr<metrics::Endpoint> metrics_endpoint_;
  std::unique_ptr<observability::MeteredAcquirerRoutes> metered_acquirers_;
  answers::PppAnswers answers_;  // before the service, which writes its answers with it
  std::unique_ptr<actors::PaymentService> service_;
  std::unique_ptr<ppp::Onboarding> onboarding_;
  std::unique_ptr<ppp::PppHandler> ppp_handler_;
  std::shared_ptr<admin::OperatorApi> operator_api_;
  std::unique_ptr<Routes> routes_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace

int run_serve(const ServeConfig& config) {
  cli::raise_descriptor_limit();
  Connector connector(config);
  if (auto started = connector.start(); !started) {
    spdlog::error("{}", started.error().message);
    return started.error().exit_code;
  }
  connector.serve();
  return 0;
}

}  // namespace idempay::app
