#include "systemd_notify.hpp"

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace idempay::app {

bool notify_systemd(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) {
    return false;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  size_t length = std::strlen(path);
  if (length >= sizeof(address.sun_path)) {
    return false;
  }
  std::memcpy(address.sun_path, path, length);
  if (address.sun_path[0] == '@') {
    address.sun_path[0] = '\0';  // an abstract socket
  }
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return false;
  }
  auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  bool sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&address), size) ==
              static_cast<ssize_t>(state.size());
  ::close(fd);
  return sent;
}

}  // namespace idempay::app
