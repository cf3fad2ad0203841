// `idempay deliveries list [--json]` and `idempay deliveries replay ID`.
#include <iostream>

#include "idempay/base/json_writer.hpp"
#include "idempay/cli/commands.hpp"
#include "idempay/domain/deliveries.hpp"
#include "store_access.hpp"

namespace idempay::cli {

namespace {

int list(const StoreOptions& where, bool json) {
  auto store = open_for_operator(where);
  if (!store) {
    return failed(store.error());
  }
  auto deliveries = domain::list_deliveries(**store);
  if (!deliveries) {
    return failed(deliveries.error());
  }
  if (json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& d : *deliveries) {
      w.begin_object().key("id").string(d.id).key("paymentId").string(d.payment_id);
      w.key("url").string(d.url.substr(0, d.url.find('?'))).key("state").string(d.dead ? "dead" : "pending");
      w.key("attempts").number(d.attempts).key("lastStatus").number(d.last_status);
      w.key("lastError").string(d.last_error).key("reason").string(d.dead_reason).end_object();
    }
    w.end_array();
    std::cout << terminal_safe_json(w.str()) << "\n";
    return 0;
  }
  for (const auto& d : *deliveries) {
    std::cout << (d.dead ? "dead    " : "pending ") << visible(d.id) << "  payment=" << visible(d.payment_id)
              << "  attempts=" << d.attempts << "  last=" << d.last_status << " " << visible(d.last_error)
              << (d.dead ? "  reason=" + visible(d.dead_reason) : "") << "  url=" << without_query(d.url)
              << "\n";
  }
  return 0;
}

// Needs the connector stopped: a running one replays through the operator API.
int replay(const StoreOptions& where, const std::string& id) {
  auto store = open_for_operator(where, true);
  if (!store) {
    return failed(store.error());
  }
  if (auto s = domain::replay_dead_letter(**store, id); !s) {
    return failed(s.error());
  }
  std::cout << "replayed " << visible(id) << ": it is delivered when the connector runs\n";
  return 0;
}

}  // namespace

Command add_deliveries(CLI::App& root) {
  struct Options {
    StoreOptions where;
    bool json = false;
    std::string id;
  };
  auto options = std::make_shared<Options>();
  auto* command = root.add_subcommand("deliveries", "list callback deliveries or replay a dead letter (stopped connector)");
  command->require_subcommand(1);
  auto* list_command = command->add_subcommand("list", "pending deliveries and dead letters");
  add_store_options(*list_command, options->where);
  list_command->add_flag("--json", options->json, "machine-readable output");
  auto* replay_command = command->add_subcommand("replay", "move a dead letter back to the outbox (same webhook-id)");
  replay_command->add_option("ID", options->id, "delivery id")->required();
  add_store_options(*replay_command, options->where);
  return {command, [options, replay_command] {
            return replay_command->parsed() ? replay(options->where, options->id) : list(options->where, options->json);
          }};
}

}  // namespace idempay::cli
