// Beast HTTP/1.1 server in the listener/session shape of Beast's own async examples:
// every connection runs on its own strand; replies from other threads are posted to it.
#include "idempay/http/server.hpp"

#include "ascii.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <unordered_map>
#include <string_view>
#include <thread>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>
#include <pthread.h>

#include "auth_throttle.hpp"
#include "idempay/http/problem.hpp"
#include "idempay/metrics/metrics.hpp"
#include "idempay/base/descriptors.hpp"
#include "idempay/base/json_writer.hpp"

namespace idempay::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
namespace ssl = net::ssl;

// -- Request and Responder ---------------------------------------------------------------

std::string_view Request::header(std::string_view lower_name) const {
  for (const Header& h : headers) {
    if (h.name == lower_name) {
      return h.value;
    }
  }
  return {};
}

struct Responder::State {
  std::function<void(Response)> deliver;
  std::shared_ptr<const Response> if_dropped;
  std::atomic<bool> answered{false};
  ~State() {
    if (!answered.exchange(true)) {
      deliver(*if_dropped);
    }
  }
};

Responder::Responder(std::function<void(Response)> deliver, std::shared_ptr<const Response> if_dropped)
    : state_(std::make_shared<State>()) {
  state_->deliver = std::move(deliver);
  state_->if_dropped = std::move(if_dropped);
}

void Responder::operator()(Response response) const {
  if (!state_->answered.exchange(true)) {
    state_->deliver(std::move(response));
  }
}

// -- Server ---------------------------------------------------------------------------------

namespace {

Response plain_error(unsigned status, std::string_view code, std::string_view message) {
  JsonWriter w;
  w.begin_object().key("code").string(code).key("message").string(message).end_object();
  return Response(status, std::move(w).take());
}

// Header text for a log line: printable ASCII only, at most 64 bytes.
std::string loggable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return out;
}

// The source a connection is counted and throttled under: the IPv4 address, or the /64 of
// an IPv6 address (one host usually holds a whole /64, and would otherwise have 2^64 sources).
std::string source_of(const net::ip::address& address) {
  if (address.is_v6() && !address.to_v6().is_v4_mapped()) {
    auto bytes = address.to_v6().to_bytes();
    std::fill(bytes.begin() + 8, bytes.end(), 0);
    return net::ip::address_v6(bytes).to_string() + "/64";
  }
  return address.is_v6() ? net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6()).to_string()
                         : address.to_string();
}

// TLS 1.2 and 1.3 only. For 1.2, forward-secret AEAD suites only (ECDHE with AES-GCM or
// ChaCha20-Poly1305: Mozilla's "intermediate" list); 1.3's own suites are all AEAD. No
// compression (CRIME), no renegotiation, the server's order of preference.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// Asks for a client certificate and accepts whichever comes (TlsListenerOptions::kRequest):
// the handler pins fingerprints, so the chain need not verify.
int accept_any_certificate(int, X509_STORE_CTX*) { return 1; }

Status ask_for_client_certificates(ssl::context& context, const TlsListenerOptions& tls) {
  SSL_CTX* native = context.native_handle();
  // Resumed sessions keep the certificate they were established with; OpenSSL refuses to
  // resume without a context id once certificates are asked for.
  static constexpr unsigned char kSessionContext[] = "idempay";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
  if (tls.client_certificates == TlsListenerOptions::ClientCertificates::kRequest) {
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER, accept_any_certificate);
    return {};
  }
  beast::error_code ec;
  context.load_verify_file(tls.client_ca_file, ec);
  STACK_OF(X509_NAME)* names = ec ? nullptr : SSL_load_client_CA_file(tls.client_ca_file.c_str());
  if (names == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, "client CA file " + tls.client_ca_file + ": " +
                                                       (ec ? ec.message() : "no certificate in it"));
  }
  SSL_CTX_set_client_CA_list(native, names);
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return {};
}

// The lower-case hex SHA-256 of the peer's certificate (DER); empty without one.
std::string peer_certificate_sha256(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (cert == nullptr || X509_digest(cert, EVP_sha256(), digest, &length) != 1) {
    return {};
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  return out;
}

Result<std::shared_ptr<ssl::context>> make_tls_context(const TlsListenerOptions& tls) {
  const std::string& cert_file = tls.cert_file;
  const std::string& key_file = tls.key_file;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_cipher_list(native, kTls12Ciphers);
  beast::error_code ec;
  context->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "--tls-cert " + cert_file + ": " + ec.message());
  }
  context->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec || SSL_CTX_check_private_key(native) != 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--tls-key " + key_file + ": " + (ec ? ec.message() : "does not match the certificate"));
  }
  if (tls.client_certificates != TlsListenerOptions::ClientCertificates::kNone) {
    if (auto asked = ask_for_client_certificates(*context, tls); !asked) {
      return tl::unexpected(asked.error());
    }
  }
  return context;
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  Handler& handler;
  net::io_context ioc;
  // Sessions waiting for their handler have no I/O pending; without this guard the loops
  // would return as soon as the acceptor closes, and late replies would never be written.
  net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(ioc);
  // One listening socket: the plain one, and the TLS one if configured.
  struct Listener {
    explicit Listener(net::io_context& io, bool is_tls) : acceptor(io), backoff_timer(io), tls(is_tls) {}
    tcp::acceptor acceptor;
    net::steady_timer backoff_timer;
    std::chrono::milliseconds backoff{0};
    std::chrono::steady_clock::time_point last_error_log;
    bool tls;
  };
  std::vector<std::unique_ptr<Listener>> listeners;
  std::shared_ptr<ssl::context> tls_context;  // read and replaced with atomic_load/store
  uint16_t tls_port = 0;
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::condition_variable drained;
  size_t in_flight = 0;
  // Open connections, in all and per source; guarded by `mutex`.
  size_t open_connections = 0;
  std::unordered_map<std::string, size_t> per_source;
  std::shared_ptr<const Credentials> credentials;  // read and replaced with atomic_load/store
  std::shared_ptr<const Credentials> bearer_credentials;  // the same
  AuthThrottle throttle;
  std::shared_ptr<const Response> dropped;  // the answer of a request no handler answered

  Impl(ServerOptions o, Handler& h)
      : options(std::move(o)),
        handler(h),
        ioc(options.io_threads),
        credentials(options.credentials),
        bearer_credentials(options.bearer_credentials),
        throttle(options.auth_failure_burst, options.auth_failures_per_second) {
    if (options.max_connections == 0) {
      options.max_connections = descriptor_share(2, 1, 10'000);  // half, as the store needs the rest
    }
    if (!options.errors) {
      options.errors = plain_error;
    }
    dropped = std::make_shared<const Response>(options.errors(503, "unavailable", "request was dropped"));
  }

  bool is_public(std::string_view path) const {
    for (const auto& p : options.public_paths) {
      bool prefix = !p.empty() && p.back() == '*';
      if (prefix ? path.substr(0, p.size() - 1) == std::string_view(p).substr(0, p.size() - 1) : path == p) {
        return true;
      }
    }
    return false;
  }

  bool authenticates() const { return options.credentials != nullptr; }

  bool is_bearer_path(std::string_view path) const {
    const auto& prefix = options.bearer_prefix;
    return !prefix.empty() && path.substr(0, prefix.size()) == prefix;
  }

  // The bearer's name when `Authorization: Bearer TOKEN` matches, empty otherwise.
  std::string authenticate_bearer(const bhttp::request_header<>& req) const {
    auto current = std::atomic_load(&bearer_credentials);
    std::string_view value = req[bhttp::field::authorization];
    constexpr std::string_view kScheme = "bearer ";
    if (current == nullptr || value.size() <= kScheme.size() || !beast::iequals(value.substr(0, kScheme.size()), kScheme)) {
      return {};
    }
    return current->authenticate_bearer(value.substr(kScheme.size()));
  }

  // The merchant the request's credentials identify; empty when they are wrong. Header names
  // are matched case-insensitively (Beast fields do that), pairs in the order configured.
  std::string authenticate(const bhttp::request_header<>& req, std::string_view& app_key) const {
    auto current = std::atomic_load(&credentials);
    bool from_test_suite = !options.test_suite_header.empty() &&
                           beast::iequals(req[options.test_suite_header], "true");
    for (const auto& headers : options.credential_headers) {
      auto key = req[headers.key];
      if (!key.empty()) {
        app_key = key;
        return current->authenticate(key, req[headers.token], from_test_suite);
      }
    }
    return from_test_suite ? current->authenticate({}, {}, true) : std::string();
  }

  // Admits a new connection unless a cap is reached, counting it against `source`'s own cap
  // unless `source` is empty (a trusted proxy's connection: counted under the client's address
  // once its PROXY header names it, by admit_source).
  bool admit(const std::string& source) {
    std::lock_guard lock(mutex);
    if (open_connections >= options.max_connections || (!source.empty() && !count_source(source))) {
      return false;
    }
    ++open_connections;
    return true;
  }

  bool admit_source(const std::string& source) {
    std::lock_guard lock(mutex);
    return count_source(source);
  }

  // With `mutex` held.
  bool count_source(const std::string& source) {
    size_t& from_source = per_source[source];
    if (from_source >= options.max_connections_per_source) {
      if (from_source == 0) {
        per_source.erase(source);
      }
      return false;
    }
    ++from_source;
    return true;
  }

  void release(const std::string& counted_source) {
    std::lock_guard lock(mutex);
    --open_connections;
    auto it = counted_source.empty() ? per_source.end() : per_source.find(counted_source);
    if (it != per_source.end() && --it->second == 0) {
      per_source.erase(it);
    }
  }

  void begin_request() {
    std::lock_guard lock(mutex);
    ++in_flight;
  }

  void end_request() {
    std::lock_guard lock(mutex);
    if (--in_flight == 0) {
      drained.notify_all();
    }
  }

  Result<uint16_t> listen(Listener& l, const std::string& host, uint16_t port);
  void do_accept(Listener& l);
  void on_accept_error(Listener& l, const beast::error_code& ec);
};

namespace {

// Transfer-Encoding is accepted only as exactly "chunked" (any case, surrounding blanks):
// a server that skipped an unknown coding would read its body as the next request.
bool is_plain_chunked(std::string_view te) {
  while (!te.empty() && (te.front() == ' ' || te.front() == '\t')) te.remove_prefix(1);
  while (!te.empty() && (te.back() == ' ' || te.back() == '\t')) te.remove_suffix(1);
  return beast::iequals(te, "chunked");
}

// The caller's X-Request-Id when it is safe to echo and log (1-64 of [A-Za-z0-9._:-]);
// otherwise a fresh one, 16 hex digits.
std::string request_id_of(std::string_view given) {
  bool safe = !given.empty() && given.size() <= 64 && std::all_of(given.begin(), given.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-';
  });
  if (safe) {
    return std::string(given);
  }
  thread_local std::mt19937_64 random{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random()));
  return hex;
}

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection: plain (Stream = beast::tcp_stream) or TLS (TlsStream), the same HTTP.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  // Beast reads as much as the buffer's free capacity, at least 512 bytes, and the parser
  // empties the buffer after each read: an empty buffer stays at 512 and a 2.6 KB Create
  // Payment took six recvmsg calls. 4 KB reads a typical request in one.
  static constexpr size_t kReadSize = 4096;

public:
  // `source` is the peer's address; `behind_proxy`: the peer is a trusted proxy, whose PROXY
  // header names the client (and the connection is not yet counted against any source).
  Session(tcp::socket socket, Server::Impl& server, std::string source, bool behind_proxy)
      : stream_(std::move(socket)), server_(server), source_(std::move(source)), behind_proxy_(behind_proxy) {
    buffer_.reserve(kReadSize);
    counted_source_ = behind_proxy_ ? std::string() : source_;
  }
  // TLS: the session keeps the context it was accepted under (a reload replaces it for the
  // connections that come next).
  Session(tcp::socket socket, std::shared_ptr<ssl::context> tls, Server::Impl& server, std::string source,
          bool behind_proxy)
      : tls_(std::move(tls)),
        stream_(std::move(socket), *tls_),
        server_(server),
        source_(std::move(source)),
        behind_proxy_(behind_proxy) {
    buffer_.reserve(kReadSize);
    counted_source_ = behind_proxy_ ? std::string() : source_;
  }
  ~Session() { server_.release(counted_source_); }

  void run() {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->behind_proxy_) {
        return self->read_proxy_header();
      }
      self->start();
    });
  }

private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void start() {
    if constexpr (kTls) {
      // The handshake counts against the header timeout: a silent client is cut the same.
      lowest().expires_after(server_.options.header_timeout);
      stream_.async_handshake(ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
        if (ec) {
          return self->close();  // a failed handshake (a protocol below TLS 1.2, a scanner)
        }
        self->client_certificate_ = peer_certificate_sha256(self->stream_.native_handle());
        self->do_read();
      });
    } else {
      do_read();
    }
  }

  // -- the PROXY protocol v2 header of a trusted proxy, before anything else (TLS included) --

  void read_proxy_header() {
    lowest().expires_after(server_.options.header_timeout);
    proxy_header_.resize(kProxyV2PrefixBytes);
    net::async_read(lowest(), net::buffer(proxy_header_),
                    [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_proxy_prefix(ec); });
  }

  void on_proxy_prefix(beast::error_code ec) {
    auto length = ec ? Result<size_t>(0) : proxy_v2_block_length(proxy_header_);
    if (ec || !length) {
      return refuse_proxy(ec ? ec.message() : length.error().message);
    }
    proxy_header_.resize(kProxyV2PrefixBytes + *length);
    net::async_read(lowest(), net::buffer(proxy_header_.data() + kProxyV2PrefixBytes, *length),
                    [self = this->shared_from_this()](beast::error_code ec2, size_t) { self->on_proxy_header(ec2); });
  }

  void on_proxy_header(beast::error_code ec) {
    auto client = ec ? Result<std::string>(std::string()) : proxy_v2_source(proxy_header_);
    if (ec || !client) {
      return refuse_proxy(ec ? ec.message() : client.error().message);
    }
    beast::error_code bad_address;
    auto address = client->empty() ? net::ip::address() : net::ip::make_address(*client, bad_address);
    std::string source = client->empty() || bad_address ? source_ : source_of(address);
    if (!server_.admit_source(source)) {
      return close();  // over the client's own connection cap
    }
    source_ = counted_source_ = std::move(source);
    proxy_header_ = std::string();
    start();
  }

  // A trusted proxy's connection without a valid header: whatever follows could be a client's
  // own bytes passed through, so nothing of it is read.
  void refuse_proxy(const std::string& why) {
    spdlog::warn("connection from trusted proxy {} closed: {}", source_, why);
    close();
  }

  void do_read() {
    buffer_.reserve(kReadSize);  // given back while the previous request was answered
    parser_.emplace();
    parser_->body_limit(server_.options.body_limit);
    parser_->header_limit(16 * 1024);
    principal_.clear();
    head_ = false;
    lowest().expires_after(server_.options.header_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  bool is_quiet_close(const beast::error_code& ec) const {
    return ec == bhttp::error::end_of_stream || ec == beast::error::timeout || ec == net::error::operation_aborted ||
           ec == net::error::connection_reset || ec == net::error::eof;
  }

  // Everything about a request that can be judged from its headers is judged here, before
  // a body byte is read: framing, then the source's throttle, then its credentials.
  void on_header(beast::error_code ec) {
    if (is_quiet_close(ec)) {
      return close();
    }
    if (ec == bhttp::error::body_limit) {  // a Content-Length over the limit is known now
      return refuse(413, "payload-too-large", "request body exceeds the limit");
    }
    if (ec) {
      return refuse(400, "bad-request", "malformed HTTP request");
    }
    const auto& req = parser_->get();
    started_ = std::chrono::steady_clock::now();
    method_ = std::string(req.method_string());
    std::string_view target = req.target();
    path_ = std::string(target.substr(0, target.find('?')));
    request_id_ = request_id_of(req["x-request-id"]);
    start_server_span(req);
    head_ = req.method() == bhttp::verb::head;
    // RFC 9112 section 3.2: an HTTP/1.1 request has exactly one Host header.
    auto hosts = req.equal_range(bhttp::field::host);
    if (std::distance(hosts.first, hosts.second) > 1) {
      return refuse(400, "bad-request", "a request has one Host header at most");
    }
    if (req.version() >= 11 && hosts.first == hosts.second) {
      return refuse(400, "bad-request", "HTTP/1.1 requests need a Host header");
    }
    if (auto te = req.find(bhttp::field::transfer_encoding); te != req.end()) {
      if (!is_plain_chunked(te->value())) {
        return refuse(501, "not-implemented", "only the chunked transfer coding is accepted");
      }
      if (req.find(bhttp::field::content_length) != req.end()) {
        return refuse(400, "bad-request", "Content-Length and Transfer-Encoding together are refused");
      }
    }
    const std::string& path = path_;
    if (server_.options.known_path && !server_.options.known_path(path)) {
      keep_alive_ = false;  // its body, if any, is never read
      return write(refusal(problem(404, "Not Found", "no such route")));
    }
    bearer_ = server_.is_bearer_path(path) && !server_.is_public(path);
    if ((server_.authenticates() || bearer_) && !server_.is_public(path)) {
      std::string_view app_key;
      principal_ = bearer_ ? server_.authenticate_bearer(req) : server_.authenticate(req, app_key);
      if (principal_.empty()) {
        return refuse_credentials(app_key);
      }
    }
    lowest().expires_after(server_.options.read_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](beast::error_code ec2, size_t) { self->on_read(ec2); });
  }

  // Wrong or missing credentials: 401, or 429 once this source has failed too often. Only
  // unverified attempts are throttled: credentials that verify always pass (above).
  void refuse_credentials(std::string_view app_key) {
    auto now = std::chrono::steady_clock::now();
    if (int64_t wait = server_.throttle.retry_after(source_, now); wait > 0) {
      metrics::count_auth_failure(true);
      Response r = server_.options.errors(429, "too-many-requests",
                                          "too many wrong credentials from this address; retry later");
      r.headers.push_back({"retry-after", std::to_string(wait)});
      keep_alive_ = false;
      return write(refusal(std::move(r)));
    }
    metrics::count_auth_failure(false);
    if (server_.throttle.record_failure(source_, now)) {
      spdlog::warn("source {} throttled after repeated wrong credentials ({})", source_, presented(app_key));
    } else {
      spdlog::info("wrong credentials from {} ({})", source_, presented(app_key));
    }
    refuse(401, "unauthorized", bearer_ ? "missing or invalid bearer token" : "missing or invalid AppKey/AppToken");
  }

  // What a refused request presented, for the log: the appKey, or that it was a bearer token
  // (never any part of a token).
  std::string presented(std::string_view app_key) const {
    return bearer_ ? "bearer token on " + loggable(path_) : "appKey '" + loggable(app_key) + "'";
  }

  void on_read(beast::error_code ec) {
    if (is_quiet_close(ec)) {
      return close();
    }
    if (ec == bhttp::error::body_limit) {
      return refuse(413, "payload-too-large", "request body exceeds the limit");
    }
    if (ec) {
      return refuse(400, "bad-request", "malformed HTTP request");
    }
    dispatch(parser_->release());
  }

  // Nothing more is read from the connection until the request is answered: while it waits
  // on its payment (for as long as the acquirer takes, on a slow one) the session holds no read
  // buffer, unless the client already sent its next request. An answer given at once (a
  // replay, a refusal) keeps it: the next read would only allocate it again.
  void let_go_of_the_read_buffer() {
    if (!answered_.load(std::memory_order_relaxed) && buffer_.size() == 0) {
      buffer_.shrink_to_fit();
    }
  }

  // Answers and closes: the rest of the connection's bytes are never read as a request.
  void refuse(unsigned status, std::string_view code, std::string_view message) {
    keep_alive_ = false;
    write(refusal(server_.options.errors(status, code, message)));
  }

  // What the server answers by itself is never cached, nor read as anything but its type.
  static Response refusal(Response r) {
    r.headers.push_back({"cache-control", "no-store"});
    r.headers.push_back({"x-content-type-options", "nosniff"});
    return r;
  }

  void dispatch(bhttp::request<bhttp::string_body> req) {
    keep_alive_ = req.keep_alive();
    Request request;
    std::string_view target = req.target();
    auto q = target.find('?');
    request.path = std::string(target.substr(0, q));
    request.query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
    // HEAD is GET without the body (RFC 9110 section 9.3.2): handlers see a GET; write() sends
    // the headers the GET's answer has, Content-Length included, and no body.
    request.method = head_ ? std::string("GET") : std::string(req.method_string());
    request.principal = principal_;
    request.bearer = bearer_;
    request.request_id = request_id_;
    request.client_certificate_sha256 = client_certificate_;
    request.trace = span_.context();
    for (const auto& field : req) {
      request.headers.push_back(Header{ascii_lower(field.name_string()), std::string(field.value())});
    }
    request.body = std::move(req.body());
    parser_.reset();  // its request is moved out; the next read makes a new one
    answered_.store(false, std::memory_order_relaxed);
    lowest().expires_never();  // the handler's own deadlines govern from here
    server_.begin_request();
    Responder respond(
        [self = this->shared_from_this()](Response response) {
          self->answered_.store(true, std::memory_order_relaxed);
          net::post(self->stream_.get_executor(), [self, r = std::move(response)]() mutable {
            self->counted_ = true;  // counted until the answer is written
            self->write(std::move(r));
          });
        },
        server_.dropped);
    if (server_.options.answer_limit.count() > 0) {
      limit_answer_time(respond);
    }
    {
      tracing::Scope scope(span_.context());
      server_.handler.handle(std::move(request), std::move(respond));
    }
    let_go_of_the_read_buffer();
  }

  // W3C Trace Context: a request's `traceparent` is continued when valid and is the only one
  // (several make it ambiguous: ignored, as a malformed one is); its `tracestate` lines are
  // one list, kept only when valid. Neither is ever an error.
  template <class Req>
  void start_server_span(const Req& req) {
    std::optional<tracing::TraceContext> parent;
    auto parents = req.equal_range("traceparent");
    if (parents.first != parents.second && std::next(parents.first) == parents.second) {
      parent = tracing::parse_traceparent(parents.first->value());
    }
    if (parent) {
      std::string states;
      for (auto [it, end] = req.equal_range("tracestate"); it != end; ++it) {
        states.append(states.empty() ? "" : ",").append(it->value());
      }
      parent->trace_state = tracing::valid_tracestate(states);
    }
    span_ = tracing::start_span(method_, tracing::Kind::kServer, parent ? *parent : tracing::TraceContext{});
    if (span_.recording()) {  // OpenTelemetry's semantic conventions for HTTP server spans
      span_.set("http.request.method", method_).set("url.path", path_).set("url.scheme", kTls ? "https" : "http");
      span_.set("client.address", source_).set("network.protocol.version", req.version() == 10 ? "1.0" : "1.1");
    }
  }

  // The request is answered 503 once answer_limit has passed without an answer; write()
  // cancels the timer (whose handler then lets go of the responder and of this session).
  void limit_answer_time(const Responder& respond) {
    if (!answer_timer_) {
      answer_timer_.emplace(stream_.get_executor());
    }
    answer_timer_->expires_after(server_.options.answer_limit);
    // Nothing is copied for the common case, an answer in time: the request's method, path and
    // id are still the session's own when the limit passes, since it is still unanswered.
    answer_timer_->async_wait([self = this->shared_from_this(), respond](beast::error_code ec) {
      if (ec) {
        return;  // answered in time
      }
      spdlog::error("request {} ({} {}) unanswered after {} ms: answered 503 so that the client retries",
                    self->request_id_, self->method_, self->path_, self->server_.options.answer_limit.count());
      respond(self->server_.options.errors(503, "unavailable", "no answer in time; retry"));
    });
  }

  void end_server_span(unsigned status) {
    if (span_.recording()) {
      span_.set("http.response.status_code", static_cast<int64_t>(status));
      if (status >= 500) {  // a server span fails on 5xx only (the conventions' rule)
        span_.fail(std::to_string(status));
      }
    }
    span_.end();
    span_ = {};
  }

  void write(Response r) {
    if (answer_timer_) {
      answer_timer_->cancel();
    }
    res_ = {};
    res_.version(11);
    res_.result(r.status);
    res_.set(bhttp::field::server, "idempay");
    res_.set(bhttp::field::content_type, r.content_type);
    for (auto& h : r.headers) {
      res_.set(h.name, h.value);
    }
    // A 503 is always a "try again": it says when, so that a client (the gateway, a load
    // balancer) retries soon rather than after its own back-off, as during a failover.
    if (r.status == 503 && res_.find(bhttp::field::retry_after) == res_.end()) {
      res_.set(bhttp::field::retry_after, "1");
    }
    if (request_id_.empty()) {  // refused before its headers were read
      request_id_ = request_id_of({});
    }
    res_.set("x-request-id", request_id_);
    if (server_.options.access_log) {
      auto micros = started_ == std::chrono::steady_clock::time_point{}
                        ? 0
                        : std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started_)
                              .count();
      std::string trace_id = span_.context().valid() ? span_.context().trace_id_hex() : std::string();
      server_.options.access_log(
          AccessRecord{request_id_, source_, method_, path_, r.status, micros, principal_, &r.log, trace_id, &span_});
    }
    end_server_span(r.status);
    request_id_.clear();
    started_ = {};
    method_.clear();
    path_.clear();
    res_.keep_alive(keep_alive_);
    if (head_) {
      res_.content_length(r.body.size());
    } else {
      res_.body() = std::move(r.body);
      res_.prepare_payload();
    }
    lowest().expires_after(server_.options.read_timeout);
    bhttp::async_write(stream_, res_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      if (self->counted_) {
        self->counted_ = false;
        self->server_.end_request();
      }
      if (ec || !self->keep_alive_) {
        return self->close();
      }
      self->do_read();
    });
  }

  void close() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().socket().close(ignored);
  }

  std::shared_ptr<ssl::context> tls_;  // TLS sessions only; declared before the stream that uses it
  Stream stream_;
  Server::Impl& server_;
  std::string source_;          // the client: throttled, logged (its proxy's until the header names it)
  std::string counted_source_;  // what this connection counts against (Impl::release)
  bool behind_proxy_ = false;
  std::string proxy_header_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> res_;
  std::string principal_;  // of the request being read
  std::string client_certificate_;  // TLS: the fingerprint of the one the client presented
  bool bearer_ = false;    // it is on a bearer path
  // The request being answered, for X-Request-Id and the access log.
  std::string request_id_;
  std::string method_;
  std::string path_;
  std::chrono::steady_clock::time_point started_;
  tracing::Span span_;  // the request's server span
  bool keep_alive_ = true;
  bool head_ = false;     // the request being answered is a HEAD: its answer has no body
  bool counted_ = false;  // the answer being written was counted by begin_request
  // The handler answered the request being dispatched (set from whichever thread answers).
  std::atomic<bool> answered_{false};
  std::optional<net::steady_timer> answer_timer_;  // the request's answer_limit
};

}  // namespace

Result<uint16_t> Server::Impl::listen(Listener& l, const std::string& host, uint16_t port) {
  beast::error_code ec;
  auto address = net::ip::make_address(host, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "invalid listen address " + host);
  }
  tcp::endpoint endpoint(address, port);
  l.acceptor.open(endpoint.protocol(), ec);
  if (!ec) l.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) l.acceptor.bind(endpoint, ec);
  if (!ec) l.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return make_error(ErrorCode::kUnavailable, "cannot listen on " + host + ":" + std::to_string(port) + ": " +
                                                   ec.message());
  }
  return l.acceptor.local_endpoint().port();
}

void Server::Impl::do_accept(Listener& l) {
  l.acceptor.async_accept(net::make_strand(ioc), [this, &l](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !l.acceptor.is_open()) {
      return;
    }
    if (ec) {
      return on_accept_error(l, ec);
    }
    l.backoff = std::chrono::milliseconds(0);
    beast::error_code ignored;
    auto peer = socket.remote_endpoint(ignored);
    std::string source = ignored ? std::string("unknown") : source_of(peer.address());
    bool behind_proxy = !ignored && options.trusted_proxies.contains(peer.address().to_string());
    if (admit(behind_proxy ? std::string() : source)) {
      socket.set_option(tcp::no_delay(true), ignored);
      if (l.tls) {
        std::make_shared<Session<TlsStream>>(std::move(socket), std::atomic_load(&tls_context), *this,
                                             std::move(source), behind_proxy)
            ->run();
      } else {
        std::make_shared<Session<beast::tcp_stream>>(std::move(socket), *this, std::move(source), behind_proxy)
            ->run();
      }
    } else {
      socket.close(ignored);  // over a cap: closed at once, before any byte is read
    }
    do_accept(l);
  });
}

// Out of descriptors (or buffers): the pending connection stays in the backlog, so accepting
// again at once would fail again at once. Wait, doubling up to a second, then try again.
void Server::Impl::on_accept_error(Listener& l, const beast::error_code& ec) {
  l.backoff = std::clamp(l.backoff * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  auto now = std::chrono::steady_clock::now();
  if (now - l.last_error_log > std::chrono::seconds(10)) {
    l.last_error_log = now;
    size_t open = 0;
    {
      std::lock_guard lock(mutex);
      open = open_connections;
    }
    // strerror, not ec.message(): accept errors are the OS's own, and a first virtual call into
    // an error category while out of descriptors trips the sanitizers' type checks.
    spdlog::error("accept failed: {} (retrying every {} ms at most; open connections: {})",
                  std::strerror(ec.value()), l.backoff.count(), open);
  }
  l.backoff_timer.expires_after(l.backoff);
  l.backoff_timer.async_wait([this, &l](beast::error_code wait_ec) {
    if (!wait_ec && l.acceptor.is_open()) {
      do_accept(l);
    }
  });
}

Server::Server(ServerOptions options, Handler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

Server::~Server() { stop(std::chrono::milliseconds(0)); }

Result<uint16_t> Server::start() {
  auto& impl = *impl_;
  impl.listeners.push_back(std::make_unique<Impl::Listener>(impl.ioc, false));
  auto port = impl.listen(*impl.listeners.back(), impl.options.host, impl.options.port);
  if (!port) {
    return port;
  }
  if (impl.options.tls) {
    auto context = make_tls_context(*impl.options.tls);
    if (!context) {
      return tl::unexpected(context.error());
    }
    impl.tls_context = std::move(*context);
    impl.listeners.push_back(std::make_unique<Impl::Listener>(impl.ioc, true));
    auto tls_port = impl.listen(*impl.listeners.back(), impl.options.tls->host, impl.options.tls->port);
    if (!tls_port) {
      return tls_port;
    }
    impl.tls_port = *tls_port;
  }
  for (auto& l : impl.listeners) {
    impl.do_accept(*l);
  }
  for (int i = 0; i < std::max(1, impl.options.io_threads); ++i) {
    impl.threads.emplace_back([this] {
      pthread_setname_np(pthread_self(), "idempay-http");  // for top -H, perf and the harness
      impl_->ioc.run();
    });
  }
  return port;
}

uint16_t Server::tls_port() const { return impl_->tls_port; }

Status Server::reload_tls() {
  if (!impl_->options.tls) {
    return {};
  }
  auto context = make_tls_context(*impl_->options.tls);
  if (!context) {
    return tl::unexpected(context.error());
  }
  std::atomic_store(&impl_->tls_context, std::move(*context));
  return {};
}

void Server::set_bearer_credentials(std::shared_ptr<const Credentials> credentials) {
  std::atomic_store(&impl_->bearer_credentials, std::move(credentials));
}

void Server::set_credentials(std::shared_ptr<const Credentials> credentials) {
  std::atomic_store(&impl_->credentials, std::move(credentials));
}

size_t Server::stop(std::chrono::milliseconds drain) {
  if (impl_->threads.empty()) {
    return 0;
  }
  net::post(impl_->ioc, [this] {
    beast::error_code ignored;
    for (auto& l : impl_->listeners) {
      l->acceptor.close(ignored);
      l->backoff_timer.cancel();
    }
  });
  size_t left = 0;
  {
    std::unique_lock lock(impl_->mutex);
    impl_->drained.wait_for(lock, drain, [this] { return impl_->in_flight == 0; });
    left = impl_->in_flight;
  }
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) {
    t.join();
  }
  impl_->threads.clear();
  return left;
}

}  // namespace idempay::http
