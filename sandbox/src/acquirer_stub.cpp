// `idempay-sandbox acquirer-stub`: the deterministic acquirer stub as its own HTTP server, speaking
// idempay's acquirer protocol, with a ledger, a trigger and signed outcome webhooks.
#include <spdlog/spdlog.h>

#include "idempay/acquirers/stub_server.hpp"
#include "idempay/base/webhooks.hpp"
#include "commands.hpp"
#include "idempay/cli/process.hpp"

namespace idempay::sandbox {

using cli::Command;
using cli::split_host_port;
using cli::wait_for_termination_signal;

namespace {

struct StubConfig {
  std::string listen = "127.0.0.1:9090";
  int64_t latency_ms = 0;
  int64_t pending_delay_ms = 2'000;
  int64_t refund_delay_ms = 0;        ///< refunds stay pending this long
  int over_capture_percent = 0;       ///< approvals may be captured this much over (maxValue)
  std::vector<std::string> manual;    ///< "cancel", "refund": answered manual
  std::string webhook_url;
  std::string webhook_secret;
  std::vector<std::string> api_keys;  ///< required as `Authorization: Bearer KEY` when set
};

acquirer::StubOptions stub_options(const StubConfig& config) {
  acquirer::StubOptions options;
  options.latency = std::chrono::milliseconds(config.latency_ms);
  options.pending_delay = std::chrono::milliseconds(config.pending_delay_ms);
  options.refund_delay = std::chrono::milliseconds(config.refund_delay_ms);
  options.over_capture_percent = config.over_capture_percent;
  for (const auto& kind : config.manual) {
    (kind == "cancel" ? options.manual_cancel : options.manual_refund) = true;
  }
  return options;
}

int run(const StubConfig& config) {
  http::ServerOptions options = fake_server_options();
  if (!split_host_port(config.listen, options.host, options.port)) {
    spdlog::error("--listen must be HOST:PORT, got {}", config.listen);
    return 2;
  }
  acquirer::StubAcquirer stub(stub_options(config));
  if (!config.webhook_url.empty()) {
    auto key = webhooks::decode_secret(config.webhook_secret);
    if (!key) {
      spdlog::error("--webhook-secret: {}", key.error().message);
      return 2;
    }
    stub.enable_webhooks({config.webhook_url, *key});
  }
  acquirer::StubHandler handler(stub, config.api_keys);
  http::Server server(options, handler);
  auto port = server.start();
  if (!port) {
    spdlog::error("{}", port.error().message);
    return 1;
  }
  spdlog::info("acquirer stub listening on {}:{}", options.host, *port);
  wait_for_termination_signal();
  server.stop(std::chrono::milliseconds(2000));
  return 0;
}

}  // namespace

Command add_acquirer_stub(CLI::App& root) {
  auto config = std::make_shared<StubConfig>();
  auto* st = root.add_subcommand("acquirer-stub", "run the deterministic acquirer stub as an HTTP server");
  st->add_option("--listen", config->listen, "HOST:PORT to listen on")->capture_default_str();
  st->add_option("--latency-ms", config->latency_ms, "added to every answer")->capture_default_str();
  st->add_option("--pending-delay-ms", config->pending_delay_ms, "how long async cards stay pending")
      ->capture_default_str();
  st->add_option("--over-capture-percent", config->over_capture_percent,
                 "approvals may be captured up to this percent over their amount (maxValue)")
      ->check(CLI::Range(0, 100))->capture_default_str();
  st->add_option("--refund-delay-ms", config->refund_delay_ms, "how long a refund stays pending once accepted")
      ->capture_default_str();
  st->add_option("--manual", config->manual, "operations this acquirer cannot do by API (repeatable)")
      ->check(CLI::IsMember({"cancel", "refund"}));
  st->add_option("--webhook-url", config->webhook_url, "where to POST signed outcome webhooks");
  st->add_option("--webhook-secret", config->webhook_secret, "whsec_ secret that signs them");
  st->add_option("--api-key", config->api_keys, "require Authorization: Bearer KEY on acquirer calls (repeatable)");
  return {st, [config] { return run(*config); }};
}

}  // namespace idempay::sandbox
