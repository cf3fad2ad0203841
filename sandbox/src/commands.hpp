#pragma once
// The sandbox's subcommands: acquirers that move no money, as servers, for tests and local
// trials. Each adds its own options to the command line and says how it runs.
#include <CLI/CLI.hpp>

#include "idempay/cli/commands.hpp"

namespace idempay::sandbox {

/// `idempay-sandbox acquirer-stub`: the deterministic acquirer stub as its own HTTP server.
cli::Command add_acquirer_stub(CLI::App& root);
/// `idempay-sandbox pix-psp`: a fake API Pix PSP.
cli::Command add_pix_psp(CLI::App& root);
/// `idempay-sandbox adyen-fake`: a fake Adyen Checkout API.
cli::Command add_adyen_fake(CLI::App& root);

}  // namespace idempay::sandbox
