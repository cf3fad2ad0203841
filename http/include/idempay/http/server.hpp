#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/http/credentials.hpp"
#include "idempay/http/proxy_protocol.hpp"
#include "idempay/base/error.hpp"
#include "idempay/tracing/tracer.hpp"

namespace idempay::http {

struct Header {
  std::string name;  ///< lower-case
  std::string value;
};

/// An authenticated request as handed to a Handler.
struct Request {
  std::string method;
  std::string path;   ///< target without the query string
  std::string query;  ///< after '?', possibly empty
  std::vector<Header> headers;
  std::string body;
  std::string principal;  ///< the authenticated merchant's (or bearer's) name; empty on public routes
  bool bearer = false;    ///< the principal presented a bearer token (ServerOptions::bearer_prefix)
  std::string request_id;  ///< the caller's X-Request-Id if it is a safe one, else generated
  /// The SHA-256 (lower-case hex, of its DER) of the certificate the client presented on a TLS
  /// listener that asks for one (TlsListenerOptions::client_certificates); empty: none.
  std::string client_certificate_sha256;
  /// The request's server span: continued from a valid `traceparent` (and `tracestate`), else
  /// a new trace. The handler runs with it as the thread's current context.
  tracing::TraceContext trace;

  /// Value of the header named `lower_name`, empty if absent.
  std::string_view header(std::string_view lower_name) const;
};

struct Response {
  Response() = default;
  Response(unsigned s, std::string b, std::string type = "application/json")
      : status(s), body(std::move(b)), content_type(std::move(type)) {}

  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<Header> headers;
  /// What the access log line adds for this answer (route template, ids, outcome); never
  /// sent. Names are the log's keys.
  std::vector<std::pair<std::string, std::string>> log;
};

/// The one-shot reply channel of a request. Copyable and callable from any thread; the
/// first call wins. If every copy is destroyed unanswered (a crashed or stopped handler),
/// the client receives `if_dropped` (a 503) so that a connection can never hang. The answer
/// is shared, built once, since nearly every request is answered.
class Responder {
public:
  Responder(std::function<void(Response)> deliver, std::shared_ptr<const Response> if_dropped);
  void operator()(Response response) const;

private:
  struct State;
  std::shared_ptr<State> state_;
};

/// Application logic behind the server. `handle` must not block: answer later through
/// the responder from any thread. A HEAD request reaches it as a GET; the server sends that
/// answer's headers without its body.
class Handler {
public:
  virtual ~Handler() = default;
  virtual void handle(Request request, Responder respond) = 0;
};

/// Writes an error the server answers by itself (a malformed, refused or dropped request):
/// the application's error format, since the transport knows none. `code` is a short stable
/// name such as "unauthorized".
using ErrorWriter = std::function<Response(unsigned status, std::string_view code, std::string_view message)>;

/// Where a request carries its credentials: an AppKey header and its token header.
struct CredentialHeaders {
  std::string key;
  std::string token;
};

/// One answered request, for the access log: never a body, a query string or a credential.
struct AccessRecord {
  std::string_view request_id;
  std::string_view source;  ///< the client's address
  std::string_view method;
  std::string_view path;    ///< without the query string (which may carry tokens)
  unsigned status = 0;
  int64_t micros = 0;       ///< from the end of the headers to the answer handed to the socket
  std::string_view principal;
  const std::vector<std::pair<std::string, std::string>>* fields = nullptr;  ///< Response::log
  std::string_view trace_id;  ///< lower-case hex; empty for a request refused before its headers
  /// The request's server span, ended after the log has seen it (the log may name it by its
  /// route); not recording unless tracing is on and the trace sampled.
  tracing::Span* span = nullptr;
};
using AccessLog = std::function<void(const AccessRecord&)>;

/// A second listener speaking TLS (1.2 and 1.3 only; see server.cpp for the ciphers).
struct TlsListenerOptions {
  std::string host = "0.0.0.0";
  uint16_t port = 443;       ///< 0 picks a free port
  std::string cert_file;     ///< PEM: the certificate and its chain
  std::string key_file;      ///< PEM: its private key
  /// kRequest: clients are asked for a certificate, any is accepted (none too), and its
  /// fingerprint reaches the handler (Request::client_certificate_sha256), which pins the ones
  /// it trusts. kRequire: mutual TLS, a certificate signed by `client_ca_file` or no handshake.
  enum class ClientCertificates : uint8_t { kNone, kRequest, kRequire };
  ClientCertificates client_certificates = ClientCertificates::kNone;
  std::string client_ca_file;  ///< PEM: kRequire's CAs
};

struct ServerOptions {
  std::string host = "127.0.0.1";  ///< Default: loopback only
  uint16_t port = 8080;            ///< 0 picks a free port
  int io_threads = 2;              ///< Default: 2
  size_t body_limit = 256 * 1024;  ///< larger bodies get 413. Default: 256 KiB
  /// Time allowed to receive a whole request line and headers, counted from the connection's
  /// accept or its previous answer: cuts idle kept-alive connections and slow senders alike.
  /// Default: 20 s
  std::chrono::milliseconds header_timeout{20'000};
  /// Time allowed to receive a request's body once its headers are in. Default: 30 s
  std::chrono::milliseconds read_timeout{30'000};
  /// A request its handler has not answered within this is answered 503 (Retry-After) by the
  /// server, and the handler's later answer dropped: no client waits forever on a request
  /// stuck behind a fault. 0: no limit. Default: 0
  std::chrono::milliseconds answer_limit{0};
  /// Open connections at most; more are closed as soon as they are accepted. 0: half the
  /// process's descriptor limit, at most 10,000. Default: 0
  size_t max_connections = 0;
  /// Open connections from one IP address at most. Default: 512
  size_t max_connections_per_source = 512;
  /// Wrong credentials a source may present at once before it is throttled, and how many more
  /// it earns per second. A throttled source's further wrong or missing credentials get 429
  /// with Retry-After instead of 401; credentials that verify are never refused by it, so that
  /// nobody can lock a merchant out by guessing from the merchant's own address (or from the
  /// load balancer's). Default: 20, 1/s
  double auth_failure_burst = 20;
  double auth_failures_per_second = 1;
  /// Paths answered without credentials, e.g. "/manifest"; a trailing '*' matches any
  /// suffix ("/pos/*"). Default: none
  std::vector<std::string> public_paths;
  /// The paths the handler has routes for: anything else is a 404 (RFC 7807) before any
  /// credential is looked at, so that a browser's /favicon.ico or a scanner's probe neither
  /// counts as wrong credentials nor reaches the handler. Default: none (every path is handed on)
  std::function<bool(std::string_view path)> known_path;
  /// Load balancers whose connections begin with a PROXY protocol v2 header: the client
  /// address it carries is the one throttled, capped per source and logged. A connection from
  /// them without a valid header is closed; from anywhere else the header is never read (a
  /// stranger cannot claim an address). Default: none
  NetworkList trusted_proxies;
  /// Accepted credentials; null means no authentication at all (the acquirer stub).
  std::shared_ptr<const Credentials> credentials;
  /// The header pairs credentials may come in, tried in order (the first whose key header is
  /// present is used). Default: none
  std::vector<CredentialHeaders> credential_headers;
  /// Paths under this prefix (not public ones) authenticate with `Authorization: Bearer
  /// TOKEN` against `bearer_credentials` (Credentials::authenticate_bearer) and only so: the
  /// AppKey pairs never open them, and bearer tokens open nothing else. Wrong tokens count
  /// towards the same throttle. Empty: no such paths. Default: none
  std::string bearer_prefix;
  std::shared_ptr<const Credentials> bearer_credentials;
  /// A header whose value "true" (any case) marks a request from the gateway's homologation
  /// suite: only such requests may use the credentials limited to it, and without any key
  /// header they are tried with an empty key and token. Default: none
  std::string test_suite_header;
  /// Default: {"code":...,"message":...}
  ErrorWriter errors;
  /// Also serve the same routes over TLS on a listener of its own. Default: none
  std::optional<TlsListenerOptions> tls;
  /// Called once per answered request (refusals included), on the connection's I/O thread:
  /// it must not block. Every answer carries `X-Request-Id` either way. Default: none
  AccessLog access_log;
};

/// Boost.Beast HTTP/1.1 server: keep-alive, body limit, header and body timeouts, connection
/// caps (in all and per source address), and constant-time credential checks on every
/// non-public path (in the configured header pairs) as soon as the headers are in,
/// before any body byte is read. Framing is strict: HTTP/1.1 without Host, and any
/// Transfer-Encoding but "chunked", are refused and the connection closed. Sources that keep
/// presenting wrong credentials are throttled.
class Server {
public:
  Server(ServerOptions options, Handler& handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds, listens and starts the I/O threads; returns the bound (plain) port.
  Result<uint16_t> start();
  /// The TLS listener's bound port (0 without one).
  uint16_t tls_port() const;
  /// Reads the certificate and key again (SIGHUP): connections accepted from now on use
  /// them, those already open keep theirs. On error the previous ones stay.
  Status reload_tls();

  /// Replaces the accepted credentials (a reloaded file); requests already authenticated
  /// are not affected. Thread-safe.
  void set_credentials(std::shared_ptr<const Credentials> credentials);
  /// The same for the bearer tokens of ServerOptions::bearer_prefix.
  void set_bearer_credentials(std::shared_ptr<const Credentials> credentials);

  /// Stops accepting, waits up to `drain` for requests in flight to be answered, then stops
  /// the I/O threads. Returns the number of requests still unanswered (0 = clean).
  size_t stop(std::chrono::milliseconds drain);

  struct Impl;  // opaque; public only so that the connection sessions can name it

private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace idempay::http
