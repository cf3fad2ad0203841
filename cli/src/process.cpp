#include "idempay/cli/process.hpp"

#include <csignal>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace idempay::cli {

namespace {
sigset_t service_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

int wait_for_service_signal() {
  sigset_t set = service_signals();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

void block_service_signals() {
  sigset_t set = service_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_termination_signal() {
  for (;;) {
    if (int sig = wait_for_service_signal(); sig != SIGHUP) {
      return sig;
    }
  }
}

bool split_host_port(const std::string& listen, std::string& host, uint16_t& port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return false;
  }
  host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  try {
    int p = std::stoi(listen.substr(colon + 1));
    if (p < 0 || p > 65535) {
      return false;
    }
    port = static_cast<uint16_t>(p);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

void configure_logging(const std::string& format, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("idempay");
  if (format == "json") {
    logger->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%v"})", spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace idempay::cli
