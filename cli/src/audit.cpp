// `idempay audit verify [--payment ID]`: every audit chain recomputed, each signed entry's key
// looked for among the published ones, and the records, the operations and the deliveries
// checked against them; then (for the whole store) the
// transparency log against the chains, its nodes, tree heads and signatures. Exit 0 when all
// agree, 2 with a report.
#include <iostream>
#include <optional>
#include <set>

#include "idempay/cli/commands.hpp"
#include "idempay/domain/inspection.hpp"
#include "idempay/receipts/key_ring.hpp"
#include "idempay/receipts/log_audit.hpp"
#include "store_access.hpp"

namespace idempay::cli {

namespace {

int verify(const StoreOptions& where, const std::string& payment_id) {
  auto store = open_for_operator(where);
  if (!store) {
    return failed(store.error());
  }
  std::optional<std::string> only;
  if (!payment_id.empty()) {
    only = payment_id;
  }
  auto keys = receipts::published_keys(**store);
  if (!keys) {
    return failed(keys.error());
  }
  std::set<std::string> published;
  for (const auto& key : *keys) {
    published.insert(key.kid);
  }
  auto problems = domain::verify_store(**store, only, &published);
  if (!problems) {
    return failed(problems.error());
  }
  for (const auto& p : *problems) {
    std::cout << "INCONSISTENT payment " << visible(p.payment_id) << ": " << visible(p.problem) << "\n";
  }
  size_t found = problems->size();
  if (!only) {
    auto log = receipts::verify_log(**store);
    if (!log) {
      return failed(log.error());
    }
    for (const auto& p : *log) {
      std::cout << "INCONSISTENT log, " << visible(p.place) << ": " << visible(p.problem) << "\n";
    }
    found += log->size();
  }
  if (found > 0) {
    std::cout << found << " inconsistencies found\n";
    return 2;
  }
  std::cout << "audit verified: every chain intact, payments, operations and deliveries agree"
            << (only ? "" : "; the transparency log holds them, its tree heads and signatures check") << "\n";
  return 0;
}

}  // namespace

Command add_audit(CLI::App& root) {
  struct Options {
    StoreOptions where;
    std::string payment_id;
  };
  auto options = std::make_shared<Options>();
  auto* command = root.add_subcommand("audit", "audit trail tools");
  command->require_subcommand(1);
  auto* verify_command = command->add_subcommand("verify", "recompute every audit chain and cross-check the records");
  verify_command->add_option("--payment", options->payment_id, "only this payment");
  add_store_options(*verify_command, options->where);
  return {command, [options] { return verify(options->where, options->payment_id); }};
}

}  // namespace idempay::cli
