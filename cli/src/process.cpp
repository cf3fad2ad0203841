#include "idempay/cli/process.hpp"

#include <csignal>

#include <sys/resource.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include "idempay/base/json_writer.hpp"
#include "idempay/base/visible_text.hpp"

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

namespace {

// The message of a log line, whatever outside text it carries (a PSP's field, a header): one
// line, no control reaching the terminal (visible_text.hpp), and valid JSON in the JSON format.
class MessageFlag final : public spdlog::custom_flag_formatter {
public:
  explicit MessageFlag(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string_view text(msg.payload.data(), msg.payload.size());
    std::string shown;
    if (json_) {
      append_json_string(shown, text);  // quoted: the pattern has the quotes already
      shown = terminal_safe_json(std::string_view(shown).substr(1, shown.size() - 2));
    } else {
      append_visible(shown, text);
    }
    dest.append(shown.data(), shown.data() + shown.size());
  }
  std::unique_ptr<spdlog::custom_flag_formatter> clone() const override {
    return std::make_unique<MessageFlag>(json_);
  }

private:
  bool json_;
};

}  // namespace

void configure_logging(const std::string& format, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("idempay");
  bool json = format == "json";
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<MessageFlag>('*', json).set_pattern(
      json ? R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"})" : "%Y-%m-%dT%H:%M:%S.%fZ %l %*");
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace idempay::cli
