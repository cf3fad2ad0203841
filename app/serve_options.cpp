// `idempay serve`'s options: each also an IDEMPAY_* environment variable and a line of the
// --config file (docs/configuration.md documents every one).
#include "serve.hpp"

namespace idempay::app {

cli::Command add_serve(CLI::App& root) {
  auto config = std::make_shared<ServeConfig>();
  ServeConfig& serve = *config;
  auto* s = root.add_subcommand("serve", "run the connector");
  s->add_option("--listen", serve.listen, "HOST:PORT to listen on (port 0 = any free port)")
      ->envname("IDEMPAY_LISTEN")->capture_default_str();
  s->add_option("--data-dir", serve.data_dir, "directory for secrets, dev credentials and the RocksDB store")
      ->envname("IDEMPAY_DATA_DIR")->capture_default_str();
  s->add_option("--store", serve.store,
                "rocksdb:DIR (default: DATA_DIR/rocksdb) or postgresql://... (a libpq URI; postgresql: alone "
                "uses the PG* environment variables)")
      ->envname("IDEMPAY_STORE");
  s->add_flag("--no-migrate", serve.no_migrate, "do not upgrade the PostgreSQL schema or the stored form at start: a store of another format is refused")
      ->envname("IDEMPAY_NO_MIGRATE");
  s->add_option("--acquirer", serve.acquirer, "'stub' (in-process) or the URL of an acquirer")
      ->envname("IDEMPAY_ACQUIRER")->capture_default_str();
  s->add_option("--answer-deadline-ms", serve.answer_deadline_ms,
                "a Create Payment still waiting for the acquirer after this long answers 'undefined' and its "
                "outcome follows by callback (0: wait for --acquirer-timeout-ms)")
      ->envname("IDEMPAY_ANSWER_DEADLINE_MS")->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{600'000}));
  s->add_option("--acquirer-timeout-ms", serve.acquirer_timeout_ms, "deadline of one acquirer call")
      ->envname("IDEMPAY_ACQUIRER_TIMEOUT_MS")->capture_default_str();
  s->add_option("--stub-latency-ms", serve.stub_latency_ms, "latency of the in-process stub")
      ->envname("IDEMPAY_STUB_LATENCY_MS")->capture_default_str();
  s->add_option("--stub-pending-delay-ms", serve.stub_pending_delay_ms,
                "how long the in-process stub keeps async cards pending")
      ->envname("IDEMPAY_STUB_PENDING_DELAY_MS")->capture_default_str();
  s->add_option("--credentials", serve.credentials, "merchant AppKey/AppToken JSON file")
      ->envname("IDEMPAY_CREDENTIALS");
  s->add_flag("--callback-allow-private", serve.callback_allow_private,
              "allow callbacks to private addresses (local testing only)")
      ->envname("IDEMPAY_CALLBACK_ALLOW_PRIVATE");
  s->add_option("--callback-allowed-hosts", serve.callback_allowed_hosts,
                "comma-separated hosts callbacks may go to ('.domain' = its subdomains)")
      ->envname("IDEMPAY_CALLBACK_ALLOWED_HOSTS")->capture_default_str();
  s->add_option("--manifest", serve.manifest, "JSON file: the methods offered, their split mode and timers")
      ->envname("IDEMPAY_MANIFEST");
  s->add_option("--onboarding-return-hosts", serve.onboarding_return_hosts,
                "hosts the configuration flow's returnUrl may name")
      ->envname("IDEMPAY_ONBOARDING_RETURN_HOSTS")->capture_default_str();
  s->add_option("--secure-proxy-allowed-hosts", serve.secure_proxy_allowed_hosts,
                "comma-separated hosts a Create Payment's secureProxyUrl may name")
      ->envname("IDEMPAY_SECURE_PROXY_ALLOWED_HOSTS")->capture_default_str();
  s->add_option("--idle-timeout-ms", serve.idle_timeout_ms, "passivate a payment actor after this idle time")
      ->envname("IDEMPAY_IDLE_TIMEOUT_MS")->capture_default_str();
  s->add_option("--io-threads", serve.io_threads, "HTTP I/O threads (0 = half the cores)")->envname("IDEMPAY_IO_THREADS")
      ->capture_default_str();
  s->add_option("--workers", serve.workers, "actor worker threads (0 = half the cores)")
      ->envname("IDEMPAY_WORKERS")->capture_default_str();
  s->add_option("--max-connections", serve.max_connections,
                "open connections at most (0 = half the descriptor limit, at most 10000)")
      ->envname("IDEMPAY_MAX_CONNECTIONS")->capture_default_str();
  s->add_option("--max-connections-per-source", serve.max_connections_per_source,
                "open connections from one IP address at most")
      ->envname("IDEMPAY_MAX_CONNECTIONS_PER_SOURCE")->capture_default_str();
  s->add_option("--trusted-proxies", serve.trusted_proxies,
                "comma-separated CIDR networks of load balancers that send the PROXY protocol v2 header "
                "(haproxy send-proxy-v2): their connections must, the client address it names is the one "
                "throttled and logged")
      ->envname("IDEMPAY_TRUSTED_PROXIES");
  s->add_option("--rocksdb-memtable-mb", serve.rocksdb_memtable_mb,
                "RocksDB: each keyspace's memtable; also the free space a full disk needs before writes resume")
      ->envname("IDEMPAY_ROCKSDB_MEMTABLE_MB")->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{256}));
  s->add_option("--onboarding-max-merchants", serve.onboarding_max_merchants,
                "the most merchants the configuration flow may add (onboarded-merchants.json)")
      ->envname("IDEMPAY_ONBOARDING_MAX_MERCHANTS")->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{100'000}));
  s->add_option("--request-timeout-ms", serve.request_timeout_ms,
                "a request not answered within this gets 503 with Retry-After, as during a failover "
                "(what it started is kept: the retry gets it); 0: no limit")
      ->envname("IDEMPAY_REQUEST_TIMEOUT_MS")->capture_default_str();
  s->add_option("--header-timeout-ms", serve.header_timeout_ms,
                "time to receive a request's headers, idle keep-alive wait included")
      ->envname("IDEMPAY_HEADER_TIMEOUT_MS")->capture_default_str();
  s->add_option("--drain-timeout-ms", serve.drain_timeout_ms, "how long shutdown waits for requests in flight")
      ->envname("IDEMPAY_DRAIN_TIMEOUT_MS")->capture_default_str();
  s->add_option("--access-log", serve.access_log, "one JSON line per request: '-' (stderr), a file, or 'off'")
      ->envname("IDEMPAY_ACCESS_LOG")->capture_default_str();
  s->add_option("--metrics-listen", serve.metrics_listen,
                 "HOST:PORT for Prometheus metrics at GET /metrics (port 0 = any free port); off when empty")
      ->envname("IDEMPAY_METRICS_LISTEN");
  s->add_option("--event-log", serve.event_log, "one JSON line per payment event: '-' (stderr), a file, or 'off'")
      ->envname("IDEMPAY_EVENT_LOG")->capture_default_str();
  s->add_option("--otlp-endpoint", serve.otlp_endpoint,
                "send spans to this OpenTelemetry collector over OTLP/HTTP (protobuf): http(s)://HOST:PORT "
                "(its /v1/traces) or a full URL; off when empty")
      ->envname("IDEMPAY_OTLP_ENDPOINT");
  s->add_option("--trace-sample-ratio", serve.trace_sample_ratio,
                "with --otlp-endpoint: the share of new traces recorded (0 to 1); a request's traceparent decides for its own")
      ->envname("IDEMPAY_TRACE_SAMPLE_RATIO")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  s->add_option("--trace-queue-spans", serve.trace_queue_spans,
                "with --otlp-endpoint: ended spans waiting for the collector, at most; more are dropped and counted")
      ->envname("IDEMPAY_TRACE_QUEUE_SPANS")->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{10'000'000}));
  s->add_option("--tls-cert", serve.tls_cert, "PEM certificate chain: also serve over TLS 1.2/1.3 on --tls-listen")
      ->envname("IDEMPAY_TLS_CERT");
  s->add_option("--tls-key", serve.tls_key, "PEM private key of --tls-cert (both reloaded on SIGHUP)")
      ->envname("IDEMPAY_TLS_KEY");
  s->add_option("--signing-key", serve.signing_key,
                 "PEM Ed25519 private key receipts are signed with (mode 0600; read again on SIGHUP: a rotation); "
                 "without it, a development key generated in the data directory")
      ->envname("IDEMPAY_SIGNING_KEY");
  s->add_option("--log-interval-ms", serve.log_interval_ms,
                 "transparency log: how often queued heads are appended and a tree head made and co-signed")
      ->envname("IDEMPAY_LOG_INTERVAL_MS")->capture_default_str()->check(CLI::Range(10, 3'600'000));
  s->add_option("--log-quorum", serve.log_quorum,
                 "transparency log: instances that must check and sign a tree head before it is published")
      ->envname("IDEMPAY_LOG_QUORUM")->capture_default_str()->check(CLI::Range(1, 100));
  s->add_option("--tls-listen", serve.tls_listen, "HOST:PORT of the TLS listener (port 0 = any free port)")
      ->envname("IDEMPAY_TLS_LISTEN")->capture_default_str();
  s->add_flag("--tls-client-certificates", serve.tls_client_certificates,
              "ask TLS clients for a certificate (never required): for API Pix notifications that pin the PSP's")
      ->envname("IDEMPAY_TLS_CLIENT_CERTIFICATES");
  s->add_option("--idempotency-retention-s", serve.idempotency_retention_s,
                 "operator API: how long the answer to an Idempotency-Key is kept and replayed (seconds)")
      ->envname("IDEMPAY_IDEMPOTENCY_RETENTION_S")
      ->check(CLI::Range(int64_t{1}, int64_t{30} * 86'400));
  s->add_option("--drain-grace-ms", serve.drain_grace_ms,
                "on SIGTERM, how long /health/ready says no before the drain starts (load balancer's check interval)")
      ->envname("IDEMPAY_DRAIN_GRACE_MS")->capture_default_str();

  s->add_option("--acquirer-webhook-secret", serve.acquirer_webhook_secrets,
                "whsec_ secret(s) that sign acquirer webhooks (repeat during rotation)")
      ->envname("IDEMPAY_ACQUIRER_WEBHOOK_SECRET");
  s->add_option("--acquirer-webhook-secret-file", serve.acquirer_webhook_secret_files,
                "file(s) with whsec_ secrets, one per line (instead of --acquirer-webhook-secret)")
      ->envname("IDEMPAY_ACQUIRER_WEBHOOK_SECRET_FILE");
  s->add_option("--callback-app-token-file", serve.callback_app_token_file,
                "file with the connector's own VTEX AppToken (instead of --callback-app-token)")
      ->envname("IDEMPAY_CALLBACK_APP_TOKEN_FILE");
  s->add_option("--callback-signing-secret-file", serve.callback_signing_secret_file,
                "file with the whsec_ callback signing secret (instead of --callback-signing-secret)")
      ->envname("IDEMPAY_CALLBACK_SIGNING_SECRET_FILE");
  s->add_option("--callback-app-key", serve.callback_app_key, "the connector's own VTEX AppKey for callbacks")
      ->envname("IDEMPAY_CALLBACK_APP_KEY");
  s->add_option("--callback-app-token", serve.callback_app_token, "the connector's own VTEX AppToken")
      ->envname("IDEMPAY_CALLBACK_APP_TOKEN");
  s->add_option("--callback-signing-secret", serve.callback_signing_secret,
                "whsec_ secret that signs callbacks (default: generated into the data dir)")
      ->envname("IDEMPAY_CALLBACK_SIGNING_SECRET");
  s->add_option("--callback-retry-base-ms", serve.callback_retry_base_ms, "first callback retry delay")
      ->envname("IDEMPAY_CALLBACK_RETRY_BASE_MS")->capture_default_str();
  s->add_option("--callback-retry-window-ms", serve.callback_retry_window_ms,
                "a callback not delivered within this window becomes a dead letter")
      ->envname("IDEMPAY_CALLBACK_RETRY_WINDOW_MS")->capture_default_str();
  s->add_option("--callback-max-per-destination", serve.callback_max_per_destination,
                "callback attempts in flight per host")
      ->envname("IDEMPAY_CALLBACK_MAX_PER_DESTINATION")->capture_default_str();
  s->add_option("--callback-timeout-ms", serve.callback_timeout_ms, "total time of one callback attempt")
      ->envname("IDEMPAY_CALLBACK_TIMEOUT_MS")->capture_default_str();
  s->add_option("--reconcile-base-ms", serve.reconcile_base_ms,
                "first retry of a background status call for an unknown outcome (then doubling)")
      ->envname("IDEMPAY_RECONCILE_BASE_MS")->capture_default_str();
  s->add_option("--instance", serve.instance,
                "PostgreSQL: this instance's name among those sharing the database (default: host, pid and a "
                "random suffix; unique per process)")
      ->envname("IDEMPAY_INSTANCE");
  s->add_option("--lease-ms", serve.lease_ms,
                "PostgreSQL: how long a payment's lease or a callback's claim keeps other instances away "
                "(longer than the acquirer and callback timeouts)")
      ->envname("IDEMPAY_LEASE_MS")->capture_default_str()->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));
  s->add_option("--sweep-interval-ms", serve.sweep_interval_ms,
                "PostgreSQL: how often unfinished payments and pending callbacks are looked for (work a dead "
                "instance left)")
      ->envname("IDEMPAY_SWEEP_INTERVAL_MS")->capture_default_str()->check(CLI::Range(int64_t{10}, int64_t{3'600'000}));
  s->add_option("--follow-timeout-ms", serve.follow_timeout_ms,
                "PostgreSQL: how long a request waits for another instance's outcome before it answers "
                "'undefined' or 'retry'")
      ->envname("IDEMPAY_FOLLOW_TIMEOUT_MS")->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{600'000}));
  s->add_option("--reconcile-attempts", serve.reconcile_attempts,
                "failed status calls before a payment is marked orphaned")
      ->envname("IDEMPAY_RECONCILE_ATTEMPTS")->capture_default_str();
  s->add_option("--status-polls-per-second", serve.status_polls_per_second,
                "pending payments whose acquirer is asked on a schedule (API Pix): at most this many looks a "
                "second per acquirer entry")
      ->envname("IDEMPAY_STATUS_POLLS_PER_SECOND")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000));
  s->add_option("--public-url", serve.public_url,
                "base URL shoppers' devices reach this service at (default: http://LISTEN)")
      ->envname("IDEMPAY_PUBLIC_URL");
  s->add_option("--callback-ca-file", serve.callback_ca_file, "extra PEM CA trusted for https callbacks")
      ->envname("IDEMPAY_CALLBACK_CA_FILE");
  return {s, [config] { return run_serve(*config); }};
}

}  // namespace idempay::app
