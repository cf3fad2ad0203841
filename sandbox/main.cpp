// idempay-sandbox: acquirers that move no money — the deterministic stub as a server, a fake API
// Pix PSP and a fake Adyen — for tests and for trying the connector locally. A binary (and a
// package) of its own: the connector's binary links none of them.
#include <sys/stat.h>

#include <CLI/CLI.hpp>

#include "idempay/cli/process.hpp"
#include "src/commands.hpp"

int main(int argc, char** argv) {
  using namespace idempay;
  cli::block_service_signals();
  ::umask(077);
  cli::raise_descriptor_limit();  // a fake takes thousands of connections from one connector

  CLI::App root{"idempay-sandbox: acquirers that move no money, for tests and local trials of idempay"};
  root.set_version_flag("--version", std::string("idempay-sandbox ") + IDEMPAY_VERSION + " (commit " + IDEMPAY_COMMIT + ")");
  root.require_subcommand(1);
  cli::LogOptions log;
  cli::add_log_options(root, log);
  const std::vector<cli::Command> commands = {sandbox::add_acquirer_stub(root), sandbox::add_pix_psp(root),
                                              sandbox::add_adyen_fake(root)};
  return cli::parse_and_run(root, argc, argv, log, commands);
}
