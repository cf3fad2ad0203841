#include "idempay/cli/commands.hpp"

#include "idempay/cli/process.hpp"

namespace idempay::cli {

void add_log_options(CLI::App& root, LogOptions& log) {
  root.add_option("--log-format", log.format, "text or json")->envname("IDEMPAY_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}));
  root.add_option("--log-level", log.level, "trace, debug, info, warn or error")->envname("IDEMPAY_LOG_LEVEL");
}

int parse_and_run(CLI::App& root, int argc, char** argv, const LogOptions& log, const std::vector<Command>& commands) {
  CLI11_PARSE(root, argc, argv);
  configure_logging(log.format, log.level);
  for (const auto& command : commands) {
    if (command.app->parsed()) {
      return command.run();
    }
  }
  return 2;
}

}  // namespace idempay::cli
