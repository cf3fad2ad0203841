#pragma once
// What every long-running command of the binary shares: its signals, its log, its listen address.
#include <cstdint>
#include <string>

namespace idempay::cli {

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and every thread started after it,
/// so that only the thread that waits for them sees them. Call before any thread starts.
void block_service_signals();
/// Waits for SIGINT, SIGTERM or SIGHUP; returns which.
int wait_for_service_signal();
/// Waits for SIGINT or SIGTERM (a SIGHUP is ignored); returns which.
int wait_for_termination_signal();

/// Raises the soft descriptor limit to the hard one: connections, store files and outbound
/// calls share descriptors, and the soft limit (often 1,024) is far below what a busy server
/// needs. Call before the listeners and the store are opened (their budgets are shares of it).
void raise_descriptor_limit();

/// Splits "host:port" ("[::1]:80" too); false if malformed.
bool split_host_port(const std::string& listen, std::string& host, uint16_t& port);

/// The process's log: "text" or "json" lines on stderr, at `level`.
void configure_logging(const std::string& format, const std::string& level);

}  // namespace idempay::cli
