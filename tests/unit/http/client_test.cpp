// The HTTP client's connection reuse, against a raw-socket server that counts connections.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "idempay/http/client.hpp"

namespace idempay::http {
namespace {

// Answers every request "200 ok" as HTTP/1.1 (keep-alive by default). With
// `close_after_answer` it closes each connection right after its answer, without saying so:
// what a server does to a connection that sat idle past its timeout.
class CountingServer {
public:
  explicit CountingServer(bool close_after_answer) : close_after_answer_(close_after_answer) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listener_, 16);
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~CountingServer() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    std::lock_guard lock(mutex_);
    for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : connections_) t.join();
  }

  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }

private:
  void accept_loop() {
    for (;;) {
      int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      ++accepted_;
      std::lock_guard lock(mutex_);
      open_.push_back(fd);
      connections_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    std::string in;
    char buf[4096];
    for (;;) {
      auto header_end = in.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        auto cl = in.find("Content-Length: ");
        size_t body = cl == std::string::npos || cl > header_end ? 0 : std::stoul(in.substr(cl + 16));
        if (in.size() >= header_end + 4 + body) {
          in.erase(0, header_end + 4 + body);
          const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
          ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
          if (close_after_answer_) break;
          continue;
        }
      }
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
  }

  bool close_after_answer_;
  int listener_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<int> open_;
  std::vector<std::thread> connections_;
};

unsigned post(Client& client, uint16_t port) {
  auto base = Url::parse("http://127.0.0.1:" + std::to_string(port)).value();
  std::promise<unsigned> status;
  client.request(base, "POST", "/authorize", "{}", std::chrono::milliseconds(3000),
                 [&](Result<ClientResponse> r) { status.set_value(r ? r->status : 0); });
  return status.get_future().get();
}

TEST(ClientTest, ReusesAConnectionTheServerKeptAlive) {
  CountingServer server(false);
  Client client;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(post(client, server.port()), 200u);
  }
  EXPECT_EQ(server.accepted(), 1);
}

TEST(ClientTest, RetriesOnANewConnectionWhenTheReusedOneWasClosed) {
  CountingServer server(true);
  Client client;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(post(client, server.port()), 200u) << "request " << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the server's FIN arrives
  }
  EXPECT_EQ(server.accepted(), 3);
}

}  // namespace
}  // namespace idempay::http
