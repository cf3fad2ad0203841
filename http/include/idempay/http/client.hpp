#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "idempay/http/server.hpp"
#include "idempay/http/url.hpp"
#include "idempay/base/error.hpp"

namespace idempay::http {

struct ClientResponse {
  unsigned status = 0;
  std::string body;
  std::vector<Header> headers;  ///< lower-case names
  std::string_view header(std::string_view lower_name) const;
};
using ClientCallback = std::function<void(Result<ClientResponse>)>;

/// One outbound request. The URL is used exactly as given (query string included).
struct OutboundRequest {
  std::string method = "POST";
  std::string url;
  std::vector<Header> headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{5'000};  ///< resolve + connect + TLS handshake
  std::chrono::milliseconds total_timeout{15'000};   ///< the whole exchange
  size_t max_response_bytes = 64 * 1024;             ///< larger answers fail the request
  /// Connect to loopback, private, link-local, metadata and other non-public addresses.
  /// Default: false — such destinations fail with kForbidden (SSRF guard).
  bool allow_private = false;
};

struct ClientOptions {
  /// Extra PEM CA file trusted besides the system store (tests, private PKI). Default: none
  std::string extra_ca_file;
  /// Mutual TLS: the certificate (PEM, with its chain) and private key this client presents
  /// to servers that ask for one. Default: none
  std::string client_cert_file;
  std::string client_key_file;
};

/// Whether `options`' files load (readable PEM, a key that matches its certificate): the
/// Client itself cannot refuse them, so configurations check them here first.
Status check_client_options(const ClientOptions& options);

/// Asynchronous HTTP/1.1 client on its own I/O thread. Every call calls back exactly once,
/// from the client's thread. Redirects are never followed (a 3xx is returned as is).
/// Connections are kept alive and reused per destination (scheme, host, port, address
/// policy); a reused connection that fails before any answer is retried once on a new one,
/// so only idempotent requests belong here (all of idempay's outbound calls are).
/// All clients of a process together hold at most a quarter of its descriptor limit in open
/// connections, in use or idle (idle ones are kept while they are needed, up to 4 s): a call
/// beyond that waits for a place within its own deadline, and an idle connection is closed
/// to make one.
/// HTTPS verifies the certificate chain and the host name. The SSRF guard checks the
/// addresses a name resolves to and connects only to those that passed, so a DNS answer
/// cannot switch the destination between check and use. Errors: kForbidden (refused
/// destination), kTimeout, kUnavailable (resolution, connection, TLS or protocol failure).
class Client {
public:
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void send(OutboundRequest request, ClientCallback done);

  /// Shorthand for the acquirer: `base` + `target`, JSON body, private addresses allowed,
  /// `headers` added.
  void request(const Url& base, std::string method, std::string target, std::string body,
               std::chrono::milliseconds timeout, ClientCallback done, const std::vector<Header>& headers = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idempay::http
