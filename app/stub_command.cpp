#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "idempay/acquirers/stub_server.hpp"
#include "idempay/base/webhooks.hpp"

namespace idempay::app {

int run_acquirer_stub(const StubConfig& config) {
  http::ServerOptions options;
  if (!split_host_port(config.listen, options.host, options.port)) {
    spdlog::error("--listen must be HOST:PORT, got {}", config.listen);
    return 2;
  }
  acquirer::StubOptions stub_options;
  stub_options.latency = std::chrono::milliseconds(config.latency_ms);
  stub_options.pending_delay = std::chrono::milliseconds(config.pending_delay_ms);
  stub_options.refund_delay = std::chrono::milliseconds(config.refund_delay_ms);
  stub_options.over_capture_percent = config.over_capture_percent;
  for (const auto& kind : config.manual) {
    (kind == "cancel" ? stub_options.manual_cancel : stub_options.manual_refund) = true;
  }
  acquirer::StubAcquirer stub(stub_options);
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

}  // namespace idempay::app
