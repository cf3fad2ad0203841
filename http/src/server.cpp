// Beast HTTP/1.1 server in the listener/session shape of Beast's own async examples:
// every connection runs on its own strand; replies from other threads are posted to it.
#include "idempay/http/server.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace idempay::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

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
  std::atomic<bool> answered{false};
  ~State() {
    if (!answered.exchange(true)) {
      deliver(Response{503, R"({"status":"error","code":"unavailable","message":"request was dropped"})"});
    }
  }
};

Responder::Responder(std::function<void(Response)> deliver)
    : state_(std::make_shared<State>()) {
  state_->deliver = std::move(deliver);
}

void Responder::operator()(Response response) const {
  if (!state_->answered.exchange(true)) {
    state_->deliver(std::move(response));
  }
}

// -- Server ---------------------------------------------------------------------------------

namespace {

// Header names are ASCII tokens (RFC 9110): folding them needs no locale.
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

Response error_response(unsigned status, std::string_view code, std::string_view message) {
  return Response{status, R"({"status":"error","code":")" + std::string(code) +
                              R"(","message":")" + std::string(message) + "\"}"};
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  Handler& handler;
  net::io_context ioc;
  // Sessions waiting for their handler have no I/O pending; without this guard the loops
  // would return as soon as the acceptor closes, and late replies would never be written.
  net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(ioc);
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::condition_variable drained;
  size_t in_flight = 0;

  Impl(ServerOptions o, Handler& h) : options(std::move(o)), handler(h), ioc(options.io_threads) {}

  bool is_public(std::string_view path) const {
    for (const auto& p : options.public_paths) {
      bool prefix = !p.empty() && p.back() == '*';
      if (prefix ? path.substr(0, p.size() - 1) == std::string_view(p).substr(0, p.size() - 1) : path == p) {
        return true;
      }
    }
    return false;
  }

  // The merchant the request's credentials identify; empty when they are wrong. Header names
  // are matched case-insensitively (Beast fields do that); VTEX names are tried first.
  std::string authenticate(const bhttp::request<bhttp::string_body>& req) const {
    static constexpr std::pair<std::string_view, std::string_view> kCredentialHeaders[] = {
        {"X-VTEX-API-AppKey", "X-VTEX-API-AppToken"}, {"X-PROVIDER-API-AppKey", "X-PROVIDER-API-AppToken"}};
    for (const auto& [key_header, token_header] : kCredentialHeaders) {
      auto key = req[key_header];
      if (!key.empty()) {
        return options.credentials->authenticate(key, req[token_header]);
      }
    }
    return {};
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

  void do_accept();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
public:
  Session(tcp::socket socket, Server::Impl& server) : stream_(std::move(socket)), server_(server) {}

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
  }

private:
  void do_read() {
    parser_.emplace();
    parser_->body_limit(server_.options.body_limit);
    parser_->header_limit(16 * 1024);
    stream_.expires_after(server_.options.read_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == net::error::eof) {
      return close();
    }
    if (ec == bhttp::error::body_limit) {
      keep_alive_ = false;
      return write(error_response(413, "payload-too-large", "request body exceeds the limit"));
    }
    if (ec) {
      keep_alive_ = false;
      return write(error_response(400, "bad-request", "malformed HTTP request"));
    }
    dispatch(parser_->release());
  }

  void dispatch(bhttp::request<bhttp::string_body> req) {
    keep_alive_ = req.keep_alive();
    Request request;
    std::string_view target = req.target();
    auto q = target.find('?');
    request.path = std::string(target.substr(0, q));
    request.query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
    request.method = std::string(req.method_string());
    if (server_.options.credentials && !server_.is_public(request.path)) {
      request.principal = server_.authenticate(req);
      if (request.principal.empty()) {
        return write(error_response(401, "unauthorized", "missing or invalid AppKey/AppToken"));
      }
    }
    for (const auto& field : req) {
      request.headers.push_back(Header{lower(field.name_string()), std::string(field.value())});
    }
    request.body = std::move(req.body());
    stream_.expires_never();  // the handler's own deadlines govern from here
    server_.begin_request();
    Responder respond([self = shared_from_this()](Response response) {
      net::post(self->stream_.get_executor(), [self, r = std::move(response)]() mutable {
        self->counted_ = true;  // counted until the answer is written
        self->write(std::move(r));
      });
    });
    server_.handler.handle(std::move(request), std::move(respond));
  }

  void write(Response r) {
    res_ = {};
    res_.version(11);
    res_.result(r.status);
    res_.set(bhttp::field::server, "idempay");
    res_.set(bhttp::field::content_type, r.content_type);
    for (auto& h : r.headers) {
      res_.set(h.name, h.value);
    }
    res_.keep_alive(keep_alive_);
    res_.body() = std::move(r.body);
    res_.prepare_payload();
    stream_.expires_after(server_.options.read_timeout);
    bhttp::async_write(stream_, res_, [self = shared_from_this()](beast::error_code ec, size_t) {
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
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  Server::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> res_;
  bool keep_alive_ = true;
  bool counted_ = false;  // the answer being written was counted by begin_request
};

}  // namespace

void Server::Impl::do_accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) {
      return;
    }
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);
      std::make_shared<Session>(std::move(socket), *this)->run();
    }
    do_accept();
  });
}

Server::Server(ServerOptions options, Handler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

Server::~Server() { stop(std::chrono::milliseconds(0)); }

Result<uint16_t> Server::start() {
  beast::error_code ec;
  auto address = net::ip::make_address(impl_->options.host, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "invalid listen address " + impl_->options.host);
  }
  tcp::endpoint endpoint(address, impl_->options.port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return make_error(ErrorCode::kUnavailable, "cannot listen on " + impl_->options.host + ":" +
                                                   std::to_string(impl_->options.port) + ": " +
                                                   ec.message());
  }
  uint16_t port = acceptor.local_endpoint().port();
  impl_->do_accept();
  for (int i = 0; i < std::max(1, impl_->options.io_threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  }
  return port;
}

size_t Server::stop(std::chrono::milliseconds drain) {
  if (impl_->threads.empty()) {
    return 0;
  }
  net::post(impl_->ioc, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
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
