// `idempay pix-webhook register|show|delete`: where a merchant's API Pix PSP sends its
// notifications, set through the PSP's own API with the acquirer's credentials from the
// merchants file.
#include <iostream>

#include <spdlog/spdlog.h>

#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/acquirers/kinds.hpp"
#include "idempay/cli/commands.hpp"
#include "idempay/config/merchants.hpp"
#include "store_access.hpp"

namespace idempay::cli {

namespace {

struct WebhookConfig {
  std::string action;
  std::string credentials;
  std::string merchant;
  std::string acquirer;
  std::string public_url;
};

// The URL the connector takes the notifications on: the acquirer's webhookUrl, else the
// public URL's /webhooks/bcb-pix/{merchant}/{acquirer}.
std::string webhook_url(const WebhookConfig& config, const acquirer::BcbPixSettings& entry) {
  if (!entry.webhook.url.empty()) {
    return entry.webhook.url;
  }
  std::string base = config.public_url;
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  return base + "/webhooks/bcb-pix/" + config.merchant + "/" + config.acquirer;
}

int run(const WebhookConfig& config) {
  auto file = config::load_merchant_file(config.credentials, acquirer::acquirer_kinds());
  if (!file) {
    return failed(file.error(), 2);
  }
  auto settings = file->settings.find(config.merchant);
  const config::AcquirerEntry* named =
      settings == file->settings.end() ? nullptr : config::acquirer_named(settings->second.acquirers, config.acquirer);
  const acquirer::BcbPixSettings* entry = named == nullptr ? nullptr : acquirer::bcb_pix_settings(*named->settings);
  if (entry == nullptr) {
    std::cerr << "merchant " << visible(config.merchant) << " has no bcb-pix acquirer named "
              << visible(config.acquirer) << " in " << config.credentials << "\n";
    return 2;
  }
  if (config.action == "show") {
    auto shown_webhook = acquirer::show_pix_webhook(entry->pix);
    if (!shown_webhook) {
      return failed(shown_webhook.error());
    }
    std::cout << visible(*shown_webhook) << "\n";
    return 0;
  }
  if (config.action == "delete") {
    auto deleted = acquirer::delete_pix_webhook(entry->pix);
    return deleted ? 0 : failed(deleted.error());
  }
  std::string url = webhook_url(config, *entry);
  if (url.rfind("https://", 0) != 0) {
    std::cerr << "the webhook URL must be https:// (give the acquirer a webhookUrl, or --public-url): "
              << visible(url) << "\n";
    return 2;
  }
  auto registered = acquirer::register_pix_webhook(entry->pix, url);
  if (!registered) {
    return failed(registered.error());
  }
  std::cout << "the PSP notifies " << visible(url) << "/pix of the Pix received for key "
            << visible(entry->pix.pix_key) << "\n";
  return 0;
}

}  // namespace

Command add_pix_webhook(CLI::App& root) {
  auto config = std::make_shared<WebhookConfig>();
  auto* c = root.add_subcommand("pix-webhook", "register where an API Pix PSP sends its notifications");
  c->add_option("action", config->action, "register, show or delete")->required()
      ->check(CLI::IsMember({"register", "show", "delete"}));
  c->add_option("--credentials", config->credentials, "the merchants file")->required()->envname("IDEMPAY_CREDENTIALS");
  c->add_option("--merchant", config->merchant, "the merchant's name")->required();
  c->add_option("--acquirer", config->acquirer, "the name of its bcb-pix acquirer")->required();
  c->add_option("--public-url", config->public_url, "the connector's public https:// URL, when the acquirer has no webhookUrl")
      ->envname("IDEMPAY_PUBLIC_URL");
  return {c, [config] { return run(*config); }};
}

}  // namespace idempay::cli
