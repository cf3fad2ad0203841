#pragma once
// systemd's readiness protocol (Type=notify): a datagram to $NOTIFY_SOCKET. Without that
// variable (not started by systemd) every call does nothing.
#include <string_view>

namespace idempay::app {

/// Sends `state` ("READY=1", "STOPPING=1", "RELOADING=1", ...); false if it could not be sent.
bool notify_systemd(std::string_view state);

}  // namespace idempay::app
