#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "idempay/actors/deliveries.hpp"
#include "idempay/protocol/json_writer.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::app {

namespace {
// The callback URL's query carries the gateway's X-VTEX-signature: never print it.
std::string without_query(const std::string& url) { return url.substr(0, url.find('?')); }

Result<std::unique_ptr<storage::Store>> open_for_operator(const std::string& data_dir) {
  auto store = storage::open_rocks_store({(std::filesystem::path(data_dir) / "rocksdb").string(), true});
  if (!store) {
    return make_error(ErrorCode::kUnavailable,
                      store.error().message + " (is the connector still running on this data directory?)");
  }
  return store;
}
}  // namespace

int run_deliveries(const DeliveriesConfig& config) {
  auto store = open_for_operator(config.data_dir);
  if (!store) {
    std::cerr << store.error().message << "\n";
    return 1;
  }
  if (config.action == "replay") {
    auto s = actors::replay_dead_letter(**store, config.id);
    if (!s) {
      std::cerr << s.error().message << "\n";
      return 1;
    }
    std::cout << "replayed " << config.id << ": it is delivered when the connector runs\n";
    return 0;
  }
  auto list = actors::list_deliveries(**store);
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
    std::cout << (d.dead ? "dead    " : "pending ") << d.id << "  payment=" << d.payment_id
              << "  attempts=" << d.attempts << "  last=" << d.last_status << " " << d.last_error
              << (d.dead ? "  reason=" + d.dead_reason : "") << "  url=" << without_query(d.url) << "\n";
  }
  return 0;
}

}  // namespace idempay::app
