// idempay: the payment connector (`serve`) and the operators' tools; each subcommand adds its
// own options (app/serve_options.cpp, cli/). The acquirers that move no money are
// idempay-sandbox's (sandbox/).
#include <sys/stat.h>

#include <CLI/CLI.hpp>

#include "idempay/cli/commands.hpp"
#include "idempay/cli/process.hpp"
#include "serve.hpp"

int main(int argc, char** argv) {
  using namespace idempay;
  // Before any thread exists, so that every thread inherits the mask and only the thread that
  // waits for signals sees SIGINT, SIGTERM and SIGHUP.
  cli::block_service_signals();
  // Everything the process creates (data directory, store files, secrets, logs it opens) is
  // readable by its own user only.
  ::umask(077);

  CLI::App root{"idempay: exactly-once payment connector for the VTEX Payment Provider Protocol"};
  root.set_version_flag("--version", std::string("idempay ") + IDEMPAY_VERSION + " (commit " + IDEMPAY_COMMIT + ")");
  root.require_subcommand(1);
  root.set_config("--config", "", "read options from a TOML/INI file");
  cli::LogOptions log;
  cli::add_log_options(root, log);

  const std::vector<cli::Command> commands = {app::add_serve(root),      cli::add_deliveries(root),
                                              cli::add_inspect(root),    cli::add_audit(root),
                                              cli::add_migrate(root),    cli::add_copy_store(root),
                                              cli::add_pix_webhook(root), cli::add_receipt(root),
                                              cli::add_keys(root)};
  return cli::parse_and_run(root, argc, argv, log, commands);
}
