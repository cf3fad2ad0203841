#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.hpp"
#include "store_location.hpp"
#include "idempay/acquirers/http_acquirer.hpp"
#include "idempay/acquirers/stub.hpp"
#include "idempay/actors/payment_service.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/http/server.hpp"
#include "callback_transport.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/webhooks.hpp"
#include "idempay/storage/store.hpp"
#include "access_log.hpp"
#include "merchants.hpp"
#include "metered_acquirers.hpp"
#include "systemd_notify.hpp"
#include "idempay/metrics/metrics.hpp"
#include "onboarding.hpp"
#include "ppp_handler.hpp"
#include "private_files.hpp"

namespace idempay::app {

namespace {
sigset_t service_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// SIGINT, SIGTERM or SIGHUP, whichever arrives first.
int wait_for_service_signal() {
  sigset_t set = service_signals();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}
}  // namespace

void block_termination_signals() {
  sigset_t set = service_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_termination_signal() {
  for (;;) {
    if (int sig = wait_for_service_signal(); sig != SIGHUP) {
      return sig;
    }
  }
}

bool split_host_port(const std::string& listen, std::string& host, uint16_t& port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return false;
  }
  host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  try {
    int p = std::stoi(listen.substr(colon + 1));
    if (p < 0 || p > 65535) {
      return false;
    }
    port = static_cast<uint16_t>(p);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

void configure_logging(const std::string& format, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("idempay");
  if (format == "json") {
    logger->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%v"})", spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

namespace {

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

// The operator API's routes (/admin/...) and the PPP's (everything else), on one listener.
class Routes final : public http::Handler {
public:
  Routes(http::Handler& ppp, http::Handler& operators) : ppp_(ppp), operators_(operators) {}
  void handle(http::Request request, http::Responder respond) override {
    std::string_view path = request.path;
    bool admin = path == "/admin" || path.substr(0, admin::kConsolePrefix.size()) == admin::kConsolePrefix;
    (admin ? operators_ : ppp_).handle(std::move(request), std::move(respond));
  }

private:
  http::Handler& ppp_;
  http::Handler& operators_;
};

// What the metrics read when scraped, on the scraping thread.
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
                     [] { return static_cast<double>(access_log_drops()); });
}

std::optional<admin::OperatorScope> operator_scope(const MerchantDirectory& directory, const std::string& name) {
  auto file = directory.current();
  auto found = file->operators.find(name);
  return found == file->operators.end() ? std::nullopt : std::optional<admin::OperatorScope>(found->second);
}

// SIGHUP: the merchants file is read again; if it is valid, new credentials and settings apply
// to the next request (payments already created keep their acquirer); if not, the old ones
// stay and the error is logged.
void reload_merchants(const std::string& path, const std::string& onboarded, http::Server& server,
                      MerchantDirectory& merchants) {
  auto reloaded = load_merchant_file(path, onboarded);
  if (!reloaded) {
    spdlog::error("{} not reloaded, the previous merchants stay: {}", path, reloaded.error().message);
    return;
  }
  for (const auto& warning : reloaded->warnings) {
    spdlog::warn("{}: {}", path, warning);
  }
  size_t count = reloaded->credentials->size();
  server.set_credentials(reloaded->credentials);
  server.set_bearer_credentials(reloaded->operator_credentials);
  merchants.replace(std::move(*reloaded));
  spdlog::info("{} reloaded ({} merchants)", path, count);
}

Result<std::unique_ptr<storage::Store>> open_store(const ServeConfig& config) {
  auto at = parse_store_location(config.store, config.data_dir);
  if (!at) {
    return tl::unexpected(at.error());
  }
  at->memtable_bytes = static_cast<size_t>(config.rocksdb_memtable_mb) << 20;
  spdlog::info("store: {}", describe(*at));
  return open_store_at(*at, false, !config.no_migrate);
}

bool shared_store(const ServeConfig& config) {
  auto at = parse_store_location(config.store, config.data_dir);
  return at && at->kind == StoreLocation::Kind::kPostgres;
}

// A secret kept in a 0600 file in the data directory, created on first use.
Result<std::string> dev_secret(const ServeConfig& config, const char* file) {
  return read_or_create_secret((std::filesystem::path(config.data_dir) / file).string(),
                               [] { return webhooks::generate_secret(); });
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

actors::ServiceOptions service_options(const ServeConfig& config, std::string legacy_owner, bool shared_store) {
  actors::ServiceOptions o;
  if (shared_store) {
    o.instance = instance_name(config);
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
  o.answer_deadline = std::chrono::milliseconds(config.answer_deadline_ms);
  o.legacy_owner = std::move(legacy_owner);
  return o;
}

void set_server_limits(const ServeConfig& config, http::ServerOptions& o) {
  o.io_threads = config.io_threads > 0 ? config.io_threads : half_the_cores();
  o.max_connections = static_cast<size_t>(std::max<int64_t>(0, config.max_connections));
  o.max_connections_per_source = static_cast<size_t>(std::max<int64_t>(1, config.max_connections_per_source));
  o.header_timeout = std::chrono::milliseconds(config.header_timeout_ms);
}

// Every descriptor the hard limit allows: connections, store files and outbound calls share
// them, and the soft limit (often 1024) is far below what a busy connector needs.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}
}  // namespace

int run_serve(const ServeConfig& given) {
  raise_descriptor_limit();
  ServeConfig config = given;
  if (auto secrets = read_secret_files(config); !secrets) {
    spdlog::error("{}", secrets.error().message);
    return 2;
  }
  http::ServerOptions server_options;
  if (!split_host_port(config.listen, server_options.host, server_options.port)) {
    spdlog::error("--listen must be HOST:PORT, got {}", config.listen);
    return 2;
  }
  auto proxies = http::NetworkList::parse(config.trusted_proxies);
  if (!proxies) {
    spdlog::error("--trusted-proxies: {}", proxies.error().message);
    return 2;
  }
  server_options.trusted_proxies = std::move(*proxies);
  if (auto dir = ensure_private_directory(config.data_dir); !dir) {
    spdlog::error("{}", dir.error().message);
    return 1;
  }
  auto path = merchants_path(config);
  const std::string onboarded = (std::filesystem::path(config.data_dir) / "onboarded-merchants.json").string();
  auto merchants = path ? load_merchant_file(*path, onboarded) : tl::unexpected(path.error());
  if (!merchants) {
    spdlog::error("{}", merchants.error().message);
    return 2;
  }
  for (const auto& warning : merchants->warnings) {
    spdlog::warn("{}: {}", *path, warning);
  }
  auto store = open_store(config);
  if (!store) {
    spdlog::error("cannot open the store: {}", store.error().message);
    return 1;
  }
  if (auto route = check_acquirer_route(config.acquirer); !route) {
    spdlog::error("--acquirer: {}", route.error().message);
    return 2;
  }
  auto credentials = merchants->credentials;
  auto operator_credentials = merchants->operator_credentials;
  std::string legacy_owner = merchants->first_merchant;
  auto directory = std::make_unique<MerchantDirectory>(std::move(*merchants), acquirer_defaults(config));
  auto webhook_keys = decode_secrets(config.acquirer_webhook_secrets);
  if (!webhook_keys) {
    spdlog::error("--acquirer-webhook-secret: {}", webhook_keys.error().message);
    return 2;
  }
  // The in-process stub reports to this very server, signed with a key of its own.
  acquirer::StubAcquirer* stub = directory->uses_stub() ? &directory->stub() : nullptr;
  std::string stub_key = crypto::random_bytes(32);
  webhook_keys->push_back(stub_key);
  std::string signing_secret = config.callback_signing_secret;
  if (signing_secret.empty()) {
    auto generated = dev_secret(config, "dev-callback-secret");
    if (!generated) {
      spdlog::error("{}", generated.error().message);
      return 1;
    }
    signing_secret = std::move(*generated);
    spdlog::warn("no --callback-signing-secret given; callbacks are signed with the secret in {}/dev-callback-secret",
                 config.data_dir);
  }
  auto signing_key = webhooks::decode_secret(signing_secret);
  if (!signing_key) {
    spdlog::error("--callback-signing-secret: {}", signing_key.error().message);
    return 2;
  }
  if (config.callback_app_key.empty() || config.callback_app_token.empty()) {
    spdlog::warn("no --callback-app-key/--callback-app-token: callbacks carry empty VTEX credentials");
  }
  auto callback_hosts = http::HostAllowlist::parse(config.callback_allowed_hosts);
  auto proxy_hosts = http::HostAllowlist::parse(config.secure_proxy_allowed_hosts);
  auto return_hosts = http::HostAllowlist::parse(config.onboarding_return_hosts);
  for (auto* hosts : {&callback_hosts, &proxy_hosts, &return_hosts}) {
    if (!*hosts) {
      spdlog::error("--callback-allowed-hosts / --secure-proxy-allowed-hosts / --onboarding-return-hosts: {}",
                    hosts->error().message);
      return 2;
    }
  }
  http::DestinationRules callback_rules{*callback_hosts, config.callback_allow_private};
  CallbackTransportOptions transport_options;
  transport_options.app_key = config.callback_app_key;
  transport_options.app_token = config.callback_app_token;
  transport_options.signing_key = *signing_key;
  transport_options.destinations = callback_rules;
  transport_options.merchants = directory.get();
  transport_options.total_timeout = std::chrono::milliseconds(config.callback_timeout_ms);
  transport_options.extra_ca_file = config.callback_ca_file;
  auto transport = std::make_unique<HttpCallbackTransport>(transport_options);

  auto manifest = config.manifest.empty() ? Result<Manifest>(default_manifest()) : load_manifest(config.manifest);
  if (!manifest) {
    spdlog::error("--manifest: {}", manifest.error().message);
    return 2;
  }
  std::unique_ptr<metrics::Endpoint> metrics_endpoint;
  if (!config.metrics_listen.empty()) {
    metrics::enable();
    try {
      metrics_endpoint = std::make_unique<metrics::Endpoint>(config.metrics_listen);
    } catch (const std::exception& e) {
      spdlog::error("--metrics-listen {}: {}", config.metrics_listen, e.what());
      return 1;
    }
  }
  auto options = service_options(config, legacy_owner, shared_store(config));
  options.methods = manifest->methods;
  if (config.event_log != "off") {
    auto events = make_event_log(config.event_log);
    if (!events) {
      spdlog::error("{}", events.error().message);
      return 2;
    }
    options.on_event = std::move(*events);
  }
  MeteredAcquirerRoutes metered_acquirers(*directory);
  auto service = std::make_unique<actors::PaymentService>(**store, metered_acquirers, *transport, std::move(options));
  if (metrics_endpoint) {
    add_service_gauges(*service);
  }
  PppHandlerOptions handler_options;
  handler_options.webhook_keys = std::move(*webhook_keys);
  handler_options.stub = stub;
  handler_options.callback_urls = callback_rules;
  handler_options.secure_proxy_urls = http::DestinationRules{*proxy_hosts, config.callback_allow_private};
  handler_options.merchants = directory.get();
  handler_options.manifest = std::move(*manifest);
  std::unique_ptr<http::Server> server;  // the flow's new merchants are activated on it
  OnboardingOptions flow;
  flow.issued_path = onboarded;
  flow.return_urls = http::DestinationRules{*return_hosts, config.callback_allow_private};
  flow.activate = [&] { reload_merchants(*path, onboarded, *server, *directory); };
  flow.max_merchants = static_cast<size_t>(config.onboarding_max_merchants);
  auto onboarding = std::make_unique<Onboarding>(std::move(flow));
  handler_options.onboarding = onboarding.get();
  PppHandler ppp_handler(*service, std::move(handler_options));
  admin::OperatorApiOptions admin_options;
  admin_options.operators = [&directory](const std::string& name) { return operator_scope(*directory, name); };
  admin_options.idempotency.retention = std::chrono::seconds(config.idempotency_retention_s);
  admin_options.idempotency.keyspace = domain::Space::kIdempotency;
  admin_options.legacy_owner = legacy_owner;
  admin_options.cursor_key = [&service] { return service->derive_key("operator API search cursors"); };
  auto operator_api = std::make_shared<admin::OperatorApi>(*service, **store, std::move(admin_options));
  Routes handler(ppp_handler, *operator_api);
  set_server_limits(config, server_options);
  server_options.public_paths = {"/manifest", "/payment-methods", "/health", "/health/live", "/health/ready",
                                 "/webhooks/acquirer", "/pos/*", "/authorization/redirect"};
  for (auto& page : admin::OperatorApi::public_paths()) {
    server_options.public_paths.push_back(std::move(page));
  }
  server_options.known_path = [&ppp_handler, &operator_api](std::string_view route) {
    return ppp_handler.knows(route) || operator_api->knows(route);
  };
  server_options.credentials = credentials;
  server_options.bearer_prefix = std::string(admin::kApiPrefix);
  server_options.bearer_credentials = operator_credentials;
  for (const auto& [key, token] : ppp::kCredentialHeaders) {
    server_options.credential_headers.push_back({std::string(key), std::string(token)});
  }
  server_options.test_suite_header = std::string(kTestSuiteHeader);
  if (config.access_log != "off") {
    auto access = make_access_log(config.access_log);
    if (!access) {
      spdlog::error("{}", access.error().message);
      return 2;
    }
    server_options.access_log = std::move(*access);
  }
  server_options.access_log = observe_requests(std::move(server_options.access_log), metrics_endpoint != nullptr);
  server_options.errors = [](unsigned status, std::string_view code, std::string_view message) {
    return http::Response(status, ppp::write_error(code, message));
  };
  if (!config.tls_cert.empty() || !config.tls_key.empty()) {
    http::TlsListenerOptions tls;
    if (config.tls_cert.empty() || config.tls_key.empty() || !split_host_port(config.tls_listen, tls.host, tls.port)) {
      spdlog::error("TLS needs --tls-cert and --tls-key, and --tls-listen as HOST:PORT");
      return 2;
    }
    tls.cert_file = config.tls_cert;
    tls.key_file = config.tls_key;
    server_options.tls = std::move(tls);
  }
  server = std::make_unique<http::Server>(server_options, handler);
  auto port = server->start();  // answers 503 until the service has started
  if (!port) {
    spdlog::error("{}", port.error().message);
    return 1;
  }
  bool any_address = server_options.host == "0.0.0.0" || server_options.host == "::";
  std::string self_host = any_address ? "127.0.0.1" : server_options.host;
  if (self_host.find(':') != std::string::npos) {
    self_host = "[" + self_host + "]";
  }
  std::string self_url = "http://" + self_host + ":" + std::to_string(*port);
  if (auto s = service->start(config.public_url.empty() ? self_url : config.public_url); !s) {
    spdlog::error("cannot start: {}", s.error().message);
    return 1;
  }
  directory->enable_stub_webhooks(self_url + "/webhooks/acquirer", stub_key);
  // Tests and scripts read this line to learn the port when listening on port 0.
  spdlog::info("idempay listening on {}:{} (acquirer: {}, data: {})", server_options.host, *port,
               config.acquirer, config.data_dir);
  if (server_options.tls) {
    spdlog::info("idempay listening with TLS on {}:{}", server_options.tls->host, server->tls_port());
  }
  if (metrics_endpoint) {
    spdlog::info("metrics on port {} (GET /metrics)", metrics_endpoint->port());
  }
  notify_systemd("READY=1");

  int sig = 0;
  while ((sig = wait_for_service_signal()) == SIGHUP) {
    notify_systemd("RELOADING=1");
    reload_merchants(*path, onboarded, *server, *directory);
    if (auto reloaded = server->reload_tls(); !reloaded) {
      spdlog::error("TLS certificate not reloaded, the previous one stays: {}", reloaded.error().message);
    } else if (server_options.tls) {
      spdlog::info("TLS certificate and key reloaded from {}", server_options.tls->cert_file);
    }
    notify_systemd("READY=1");
  }
  // Not ready first, so that the load balancer stops sending; requests keep being served
  // meanwhile, and then the drain waits for those in flight.
  notify_systemd("STOPPING=1");
  service->begin_drain();
  if (config.drain_grace_ms > 0) {
    spdlog::info("signal {} received: not ready; draining in {} ms", sig, config.drain_grace_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(config.drain_grace_ms));
  }
  spdlog::info("signal {} received: draining", sig);
  size_t left = server->stop(std::chrono::milliseconds(config.drain_timeout_ms));
  if (left > 0) {
    spdlog::warn("{} requests still unanswered after the drain timeout", left);
  }
  onboarding.reset();  // its last exchange, if any, reloads the merchants: before they go
  // Order matters: actors stop first, then the store (which completes pending commits),
  // then the acquirers (in the directory), then the objects the callbacks of both may reach.
  service->shutdown();
  store->reset();
  directory.reset();
  transport.reset();
  service.reset();
  server.reset();
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace idempay::app
