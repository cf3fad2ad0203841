#pragma once
// The sandbox's subcommands: acquirers that move no money, as servers, for tests and local
// trials. Each adds its own options to the command line and says how it runs.
#include <cstdint>

#include <CLI/CLI.hpp>

#include "idempay/cli/commands.hpp"
#include "idempay/http/server.hpp"

namespace idempay::sandbox {

/// A fake's listener: it stands for an acquirer whose one client is the connector under test,
/// so every connection comes from one address — as many as the connector opens are taken
/// (thousands of calls in flight on a slow acquirer), not a public server's share per source.
inline http::ServerOptions fake_server_options() {
  http::ServerOptions options;
  options.max_connections_per_source = SIZE_MAX;  // max_connections still bounds them
  return options;
}

/// `idempay-sandbox acquirer-stub`: the deterministic acquirer stub as its own HTTP server.
cli::Command add_acquirer_stub(CLI::App& root);
/// `idempay-sandbox pix-psp`: a fake API Pix PSP.
cli::Command add_pix_psp(CLI::App& root);
/// `idempay-sandbox adyen-fake`: a fake Adyen Checkout API.
cli::Command add_adyen_fake(CLI::App& root);

}  // namespace idempay::sandbox
