// `idempay-sandbox adyen-fake`: the fake Adyen Checkout API as its own HTTP server, to try the whole
// card flow locally and to test the adyen adapter: payments under Idempotency-Keys, captures,
// refunds and cancels carried out afterwards, signed notifications, and a ledger.
#include <spdlog/spdlog.h>

#include "idempay/acquirers/adyen_fake.hpp"
#include "commands.hpp"
#include "idempay/cli/process.hpp"
#include "idempay/base/private_files.hpp"

namespace idempay::sandbox {

using cli::Command;
using cli::split_host_port;
using cli::wait_for_termination_signal;

namespace {

struct FakeConfig {
  std::string listen = "127.0.0.1:0";
  std::string api_key_file;
  std::vector<std::string> merchant_accounts;
  std::string notification_url;
  std::string hmac_key_file;
  std::string notification_username;
  std::string notification_password_file;
  int64_t pending_delay_ms = 500;
  int64_t latency_ms = 0;
  bool notify_before_answer = false;
};

int run(const FakeConfig& config) {
  acquirer::AdyenFakeOptions options;
  auto key = read_secret_file(config.api_key_file);
  auto hmac = config.hmac_key_file.empty() ? Result<std::string>(std::string()) : read_secret_file(config.hmac_key_file);
  auto password = config.notification_password_file.empty() ? Result<std::string>(std::string())
                                                            : read_secret_file(config.notification_password_file);
  for (auto* r : {&key, &hmac, &password}) {
    if (!*r) {
      spdlog::error("{}", r->error().message);
      return 2;
    }
  }
  options.api_key = *key;
  options.hmac_key = *hmac;
  options.merchant_accounts = config.merchant_accounts;
  options.notification_url = config.notification_url;
  options.notification_username = config.notification_username;
  options.notification_password = *password;
  options.pending_delay = std::chrono::milliseconds(config.pending_delay_ms);
  options.latency = std::chrono::milliseconds(config.latency_ms);
  options.notify_before_answer = config.notify_before_answer;
  http::ServerOptions server = fake_server_options();
  if (!split_host_port(config.listen, server.host, server.port)) {
    spdlog::error("--listen must be HOST:PORT, got {}", config.listen);
    return 2;
  }
  acquirer::AdyenFake fake(std::move(options));
  http::Server listener(server, fake);
  auto port = listener.start();
  if (!port) {
    spdlog::error("{}", port.error().message);
    return 1;
  }
  spdlog::info("adyen-fake listening on {}:{} (plain HTTP)", server.host, *port);  // tests read the port here
  wait_for_termination_signal();
  listener.stop(std::chrono::milliseconds(2000));
  return 0;
}

}  // namespace

Command add_adyen_fake(CLI::App& root) {
  auto config = std::make_shared<FakeConfig>();
  auto* c = root.add_subcommand("adyen-fake", "run a fake Adyen Checkout API (for tests and local trials; never for money)");
  c->add_option("--listen", config->listen, "HOST:PORT of its HTTP listener (port 0 = any free port)")->capture_default_str();
  c->add_option("--api-key-file", config->api_key_file, "a file holding the X-API-Key it accepts")->required();
  c->add_option("--merchant-account", config->merchant_accounts, "a merchant account payments may name (repeatable; none: any)");
  c->add_option("--notification-url", config->notification_url, "where it sends its standard notifications");
  c->add_option("--hmac-key-file", config->hmac_key_file, "a file holding the hex HMAC key that signs them");
  c->add_option("--notification-username", config->notification_username, "Basic authentication on notifications");
  c->add_option("--notification-password-file", config->notification_password_file, "its password, in a file");
  c->add_option("--pending-delay-ms", config->pending_delay_ms, "how long a Received or redirected payment stays open")
      ->capture_default_str();
  c->add_option("--latency-ms", config->latency_ms, "hold every answer this long after doing what was asked")
      ->capture_default_str();
  c->add_flag("--notify-before-answer", config->notify_before_answer,
              "send a payment's AUTHORISATION notification before answering /payments");
  return {c, [config] { return run(*config); }};
}

}  // namespace idempay::sandbox
