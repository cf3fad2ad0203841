// `idempay-sandbox pix-psp`: the fake API Pix PSP as its own HTTPS (or HTTP) server, to try the whole
// Pix flow locally and to test the bcb-pix adapter: OAuth2, mutual TLS, charges, a trigger
// that pays them, devolucoes, notifications, and a ledger.
#include <spdlog/spdlog.h>

#include "idempay/acquirers/pix_psp.hpp"
#include "commands.hpp"
#include "idempay/cli/process.hpp"
#include "idempay/base/private_files.hpp"

namespace idempay::sandbox {

using cli::Command;
using cli::split_host_port;
using cli::wait_for_termination_signal;

namespace {

struct PspConfig {
  std::string listen = "127.0.0.1:9443";
  std::string plain_listen = "127.0.0.1:0";
  std::string tls_cert;
  std::string tls_key;
  std::string client_ca;  ///< mutual TLS: clients need a certificate signed by it
  std::string client_id = "idempay";
  std::string client_secret_file;
  int64_t token_lifetime_s = 3600;
  std::vector<std::string> pix_keys;
  int64_t refund_delay_ms = 0;
  int64_t latency_ms = 0;
  std::string webhook_cert;
  std::string webhook_key;
  std::string webhook_ca;
};

int run(const PspConfig& config) {
  acquirer::PixPspOptions options;
  auto secret = read_secret_file(config.client_secret_file);
  if (!secret) {
    spdlog::error("--client-secret-file: {}", secret.error().message);
    return 2;
  }
  options.client_id = config.client_id;
  options.client_secret = *secret;
  options.token_lifetime = std::chrono::seconds(config.token_lifetime_s);
  options.pix_keys = config.pix_keys;
  options.refund_delay = std::chrono::milliseconds(config.refund_delay_ms);
  options.latency = std::chrono::milliseconds(config.latency_ms);
  options.webhook_tls = {config.webhook_ca, config.webhook_cert, config.webhook_key};
  if (auto tls = http::check_client_options(options.webhook_tls); !tls) {
    spdlog::error("--webhook-cert/--webhook-key/--webhook-ca: {}", tls.error().message);
    return 2;
  }
  http::ServerOptions server = fake_server_options();
  if (!split_host_port(config.plain_listen, server.host, server.port)) {
    spdlog::error("--plain-listen must be HOST:PORT, got {}", config.plain_listen);
    return 2;
  }
  if (!config.tls_cert.empty()) {
    http::TlsListenerOptions tls;
    if (!split_host_port(config.listen, tls.host, tls.port)) {
      spdlog::error("--listen must be HOST:PORT, got {}", config.listen);
      return 2;
    }
    tls.cert_file = config.tls_cert;
    tls.key_file = config.tls_key;
    if (!config.client_ca.empty()) {
      tls.client_certificates = http::TlsListenerOptions::ClientCertificates::kRequire;
      tls.client_ca_file = config.client_ca;
    }
    server.tls = std::move(tls);
  }
  acquirer::PixPsp psp(std::move(options));
  http::Server listener(server, psp);
  auto port = listener.start();
  if (!port) {
    spdlog::error("{}", port.error().message);
    return 1;
  }
  // Tests and scripts read these lines to learn the ports.
  spdlog::info("pix-psp listening on {}:{} (plain HTTP)", server.host, *port);
  if (server.tls) {
    spdlog::info("pix-psp listening with TLS on {}:{}{}", server.tls->host, listener.tls_port(),
                 config.client_ca.empty() ? "" : " (mutual TLS)");
  }
  wait_for_termination_signal();
  listener.stop(std::chrono::milliseconds(2000));
  return 0;
}

}  // namespace

Command add_pix_psp(CLI::App& root) {
  auto config = std::make_shared<PspConfig>();
  auto* c = root.add_subcommand("pix-psp", "run a fake API Pix PSP (for tests and local trials; never for money)");
  c->add_option("--listen", config->listen, "HOST:PORT of its TLS listener (port 0 = any free port)")->capture_default_str();
  c->add_option("--plain-listen", config->plain_listen, "HOST:PORT of its plain HTTP listener")->capture_default_str();
  c->add_option("--tls-cert", config->tls_cert, "PEM certificate chain of the TLS listener; none: plain HTTP only");
  c->add_option("--tls-key", config->tls_key, "PEM private key of --tls-cert");
  c->add_option("--client-ca", config->client_ca, "mutual TLS: require client certificates signed by this CA");
  c->add_option("--client-id", config->client_id, "the OAuth2 client it accepts")->capture_default_str();
  c->add_option("--client-secret-file", config->client_secret_file, "a file holding that client's secret")->required();
  c->add_option("--token-lifetime-s", config->token_lifetime_s, "how long an access token lasts")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400}))->capture_default_str();
  c->add_option("--pix-key", config->pix_keys, "a Pix key charges may name (repeatable; none: any)");
  c->add_option("--refund-delay-ms", config->refund_delay_ms, "how long a devolucao stays EM_PROCESSAMENTO")
      ->capture_default_str();
  c->add_option("--latency-ms", config->latency_ms, "hold every answer this long after doing what was asked")
      ->capture_default_str();
  c->add_option("--webhook-cert", config->webhook_cert, "client certificate presented with notifications");
  c->add_option("--webhook-key", config->webhook_key, "its private key");
  c->add_option("--webhook-ca", config->webhook_ca, "CA that verifies the receiver of notifications");
  return {c, [config] { return run(*config); }};
}

}  // namespace idempay::sandbox
