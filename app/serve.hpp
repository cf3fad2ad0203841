#pragma once
// `idempay serve`: the connector, composed of its parts (app/ is the composition root).
#include <cstdint>
#include <string>
#include <vector>

#include "idempay/cli/commands.hpp"

namespace idempay::app {

/// The gateway's own callback and Secure Proxy domain: callbackUrls are
/// https://{account}.vtexpayments.com.br/api/pvt/payment-provider/... (docs/ppp-surface.md#callbacks).
inline constexpr const char* kGatewayCallbackHosts = ".vtexpayments.com.br";

/// Options of `idempay serve` (see docs/configuration.md); defaults work out of the box.
struct ServeConfig {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "./data";
  std::string store;  ///< "rocksdb:DIR" or "postgresql://..."; empty = rocksdb under data_dir
  bool no_migrate = false;  ///< neither the PostgreSQL schema nor the stored form upgraded at start
  std::string acquirer = "stub";
  int64_t acquirer_timeout_ms = 10'000;
  int64_t answer_deadline_ms = 4'500;
  int64_t stub_latency_ms = 0;
  int64_t stub_pending_delay_ms = 2'000;
  std::string credentials;
  bool callback_allow_private = false;
  /// Hosts callbacks (and the credentials they carry) may go to; see docs/security.md.
  std::string callback_allowed_hosts = kGatewayCallbackHosts;
  std::string secure_proxy_allowed_hosts = kGatewayCallbackHosts;
  std::string manifest;  ///< the methods offered and their terms; empty: every method, defaults
  int64_t drain_grace_ms = 0;  ///< on SIGTERM, not ready for this long before the drain
  std::string access_log = "off";  ///< "-" (stderr), a file, or "off"
  int64_t idempotency_retention_s = 86'400;  ///< operator API: how long an Idempotency-Key's answer is kept
  std::string metrics_listen;        ///< HOST:PORT of the Prometheus endpoint; empty: no metrics
  std::string event_log = "off";     ///< "-" (stderr), a file, or "off"
  std::string otlp_endpoint;         ///< OpenTelemetry collector (OTLP/HTTP); empty: no spans recorded
  double trace_sample_ratio = 1.0;   ///< of new traces; continued ones follow their parent's flag
  int64_t trace_queue_spans = 8192;  ///< ended spans waiting for the collector, at most
  std::string tls_listen = "0.0.0.0:8443";  ///< the TLS listener, with tls_cert and tls_key
  std::string tls_cert;  ///< PEM certificate chain; empty: no TLS listener
  std::string tls_key;   ///< PEM private key
  /// PEM Ed25519 key receipts are signed with (mode 0600); empty: a development key generated
  /// in the data directory. Read again on SIGHUP (a rotation).
  std::string signing_key;
  int64_t log_interval_ms = 1000;  ///< transparency log: between rounds, and between tree heads
  int64_t log_quorum = 1;          ///< signatures a tree head needs to count as published
  /// Ask TLS clients for a certificate (API Pix notifications pin the PSP's); none is required.
  bool tls_client_certificates = false;
  std::string onboarding_return_hosts = ".myvtex.com";  ///< where the configuration flow may send a merchant back
  // One second: a finished payment's actor (about 3 KB) stays for the retries that follow at
  // once; a later one reloads it from memory. At 5 s, sustained creates kept five times as
  // many live (40 MB more at 3,000 creates/s).
  int64_t idle_timeout_ms = 1'000;
  int io_threads = 0;  ///< 0: half the cores, at least one
  int workers = 0;     ///< 0: half the cores, at least one
  int64_t drain_timeout_ms = 10'000;
  int64_t max_connections = 0;  ///< 0: half the descriptor limit, at most 10,000
  int64_t max_connections_per_source = 512;
  int64_t header_timeout_ms = 20'000;
  int64_t request_timeout_ms = 25'000;
  std::string trusted_proxies;  ///< CIDR list: load balancers that send a PROXY v2 header
  int64_t rocksdb_memtable_mb = 16;  ///< also the free space a full disk needs to recover
  int64_t onboarding_max_merchants = 1'000;
  std::vector<std::string> acquirer_webhook_secrets;  ///< whsec_...; several during rotation
  /// Files holding secrets, so that they appear neither in `ps` nor in the environment: the
  /// webhook secrets one per line, the others alone (a final newline is ignored).
  std::vector<std::string> acquirer_webhook_secret_files;
  std::string callback_app_token_file;
  std::string callback_signing_secret_file;
  std::string callback_app_key;
  std::string callback_app_token;
  std::string callback_signing_secret;  ///< whsec_...; generated into the data dir if empty
  int64_t callback_retry_base_ms = 5'000;
  int64_t callback_retry_window_ms = 7LL * 24 * 3'600'000;
  int callback_max_per_destination = 4;
  int64_t callback_timeout_ms = 15'000;
  std::string callback_ca_file;
  int64_t reconcile_base_ms = 1'000;
  int reconcile_attempts = 5;
  int status_polls_per_second = 20;
  std::string instance;  ///< PostgreSQL: this instance's name among those sharing the database
  int64_t lease_ms = 30'000;
  int64_t sweep_interval_ms = 5'000;
  int64_t follow_timeout_ms = 4'500;
  std::string public_url;  ///< base URL for links handed to shoppers' devices (POS submitUrl)
  std::string log_format = "text";
  std::string log_level = "info";
};

/// Runs the connector until SIGTERM/SIGINT; returns the process exit code.
int run_serve(const ServeConfig& config);

/// `serve` and its options, on the command line.
cli::Command add_serve(CLI::App& root);

}  // namespace idempay::app
