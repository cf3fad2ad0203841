#pragma once
// The command line's subcommands besides `serve` (app/): the operators' tools over a
// connector's store and the Pix webhook's registration. Each adds its own options to the
// command line and says how it runs; main() runs the one that was named. (The acquirers that
// move no money are idempay-sandbox's: sandbox/.)
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace idempay::cli {

/// A subcommand as the command line knows it; `run` once it is the one parsed (the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// The log options of every binary's command line (--log-format, --log-level).
struct LogOptions {
  std::string format = "text";
  std::string level = "info";
};
void add_log_options(CLI::App& root, LogOptions& log);

/// Parses the command line, sets up the log and runs the one of `commands` that was named;
/// the exit code (a parse error's is CLI11's).
int parse_and_run(CLI::App& root, int argc, char** argv, const LogOptions& log, const std::vector<Command>& commands);

/// `idempay deliveries list|replay`: callback deliveries and dead letters.
Command add_deliveries(CLI::App& root);
/// `idempay inspect PAYMENT_ID`: a payment's whole story.
Command add_inspect(CLI::App& root);
/// `idempay audit verify`: every audit chain recomputed, records cross-checked.
Command add_audit(CLI::App& root);
/// `idempay receipt PAYMENT_ID`: a payment's signed receipt.
Command add_receipt(CLI::App& root);
/// `idempay keys show`: the anchor, every key receipts were signed with.
Command add_keys(CLI::App& root);
/// `idempay migrate [--data-dir DIR | --store URI]`: the PostgreSQL schema and the stored form
/// brought to this release's (domain/stored_form.hpp).
Command add_migrate(CLI::App& root);
/// `idempay copy-store --from URI --to URI`: a stopped connector's store into an empty one.
Command add_copy_store(CLI::App& root);
/// `idempay pix-webhook register|show|delete`: where an API Pix PSP sends its notifications.
Command add_pix_webhook(CLI::App& root);

}  // namespace idempay::cli
