#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "idempay/http/server.hpp"
#include "idempay/protocol/error.hpp"

namespace idempay::http {

/// `http://host:port/base` split into parts.
struct Url {
  std::string host;
  std::string port = "80";
  std::string base_path;  ///< without a trailing '/'
  static Result<Url> parse(std::string_view url);
};

struct ClientResponse {
  unsigned status = 0;
  std::string body;
};
using ClientCallback = std::function<void(Result<ClientResponse>)>;

/// Asynchronous HTTP/1.1 client on its own I/O thread. Each call opens a connection (the
/// acquirer is on the same network), sends, reads at most 1 MiB, and calls back exactly once
/// from the client's thread: kTimeout if no full answer came within `timeout`, kUnavailable
/// for connection failures.
class Client {
public:
  Client();
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void request(const Url& url, std::string method, std::string target, std::string body,
               std::chrono::milliseconds timeout, ClientCallback done);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idempay::http
