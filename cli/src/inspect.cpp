// `idempay inspect PAYMENT_ID [--json]`: a payment's whole story, on a running connector's
// store too.
#include <iostream>

#include "idempay/base/money.hpp"
#include "idempay/cli/commands.hpp"
#include "idempay/answers/report.hpp"
#include "idempay/domain/inspection.hpp"
#include "store_access.hpp"

namespace idempay::cli {

namespace {

void write_report_text(const domain::PaymentReport& r) {
  std::cout << "payment " << visible(r.payment_id) << ": " << r.state << " (" << visible(r.payment_method)
            << ", " << visible(r.currency) << ", merchant "
            << (r.owner.empty() ? "(stored before owners)" : visible(r.owner)) << ")\n"
            << "  authorized " << format_amount(r.authorized) << ", settled " << format_amount(r.settled)
            << ", refunded " << format_amount(r.refunded) << "\n"
            << "  tid " << visible(r.tid) << ", nsu " << visible(r.nsu) << ", authorizationId "
            << visible(r.authorization_id) << "\n"
            << "  card " << (r.card_bin.empty() ? "-" : visible(r.card_bin) + "..." + visible(r.card_last4))
            << ", callback " << visible(r.callback_url) << (r.pos_phase.empty() ? "" : ", POS " + r.pos_phase)
            << "\n"
            << "  answer: " << visible(r.response) << "\n";
  std::cout << "operations:\n";
  for (const auto& op : r.operations) {
    std::cout << "  " << visible(op.request_id) << "  " << op.kind << "  " << op.phase << "  "
              << format_amount(op.amount) << "  " << op.outcome << "\n";
  }
  std::cout << "deliveries:\n";
  for (const auto& d : r.deliveries) {
    std::cout << "  " << visible(d.id) << "  " << (d.dead ? "dead" : "pending") << "  attempts " << d.attempts
              << "\n";
  }
  std::cout << "audit trail:\n";
  for (const auto& a : r.audit) {
    std::cout << "  #" << a.seq << "  " << visible(a.kind) << "  " << visible(a.ref);
    if (!a.merchant.empty()) {
      std::cout << "  by " << visible(a.merchant);
    }
    if (!a.before.empty() || !a.after.empty()) {
      std::cout << "  " << (a.before.empty() ? "-" : visible(a.before)) << " -> " << visible(a.after);
    }
    if (!a.detail.empty() && a.kind != "arrivals_counted") {
      std::cout << "  (" << visible(a.detail) << ")";
    }
    std::cout << (a.signer.empty() ? "  unsigned" : "  signed by key " + visible(a.signer)) << "\n";
  }
  if (!r.counted.empty()) {
    std::cout << "arrivals counted, not chained one by one (the chain was long):\n";
    for (const auto& c : r.counted) {
      std::cout << "  " << c.count << " x " << visible(c.kind)
                << (c.merchant.empty() ? "" : " by " + visible(c.merchant)) << "  first " << c.first
                << "  last " << c.last
                << (c.sealed_in ? "  in #" + std::to_string(c.sealed_in) : "  not sealed yet") << "\n";
    }
  }
}

int inspect(const StoreOptions& where, const std::string& payment_id, bool json) {
  auto store = open_for_operator(where);
  if (!store) {
    return failed(store.error());
  }
  auto report = domain::inspect_payment(**store, payment_id);
  if (!report) {
    return failed(report.error(), report.error().code == ErrorCode::kNotFound ? 3 : 1);
  }
  if (json) {
    std::cout << terminal_safe_json(answers::payment_report_json(*report)) << "\n";
  } else {
    write_report_text(*report);
  }
  return 0;
}

}  // namespace

Command add_inspect(CLI::App& root) {
  struct Options {
    StoreOptions where;
    std::string payment_id;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  auto* command = root.add_subcommand("inspect", "show one payment: state, answers, operations, deliveries, audit trail");
  command->add_option("PAYMENT_ID", options->payment_id, "the paymentId")->required();
  add_store_options(*command, options->where);
  command->add_flag("--json", options->json, "machine-readable output (the operator API's payment document)");
  return {command, [options] { return inspect(options->where, options->payment_id, options->json); }};
}

}  // namespace idempay::cli
