// `idempay audit verify [--payment ID]`: every audit chain recomputed, and the records, the
// operations and the deliveries checked against them. Exit 0 when all agree, 2 with a report.
#include <iostream>
#include <optional>

#include "idempay/cli/commands.hpp"
#include "idempay/domain/inspection.hpp"
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
  auto problems = domain::verify_store(**store, only);
  if (!problems) {
    return failed(problems.error());
  }
  for (const auto& p : *problems) {
    std::cout << "INCONSISTENT payment " << visible(p.payment_id) << ": " << visible(p.problem) << "\n";
  }
  if (!problems->empty()) {
    std::cout << problems->size() << " inconsistencies found\n";
    return 2;
  }
  std::cout << "audit verified: every chain intact, payments, operations and deliveries agree\n";
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
