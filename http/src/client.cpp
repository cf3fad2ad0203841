#include "idempay/http/client.hpp"

#include "ascii.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include <pthread.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "idempay/http/address_policy.hpp"
#include "connection_budget.hpp"

namespace idempay::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

std::string_view ClientResponse::header(std::string_view lower_name) const {
  for (const auto& h : headers) {
    if (h.name == lower_name) {
      return h.value;
    }
  }
  return {};
}

// -- one exchange ----------------------------------------------------------------------------

namespace {

using detail::ConnectionBudget;

// Idle keep-alive connections, by destination, each holding its place in the process's
// connection budget. Used only on the client's one I/O thread.
template <class Stream>
class IdlePool {
public:
  struct Connection {
    ConnectionBudget::SlotPtr slot;
    std::shared_ptr<Stream> stream;
  };

  Connection take(const std::string& destination) {
    auto found = idle_.find(destination);
    while (found != idle_.end() && !found->second.empty()) {
      Idle newest = std::move(found->second.back());
      found->second.pop_back();
      // Servers close idle connections after a while; a connection that old is not worth
      // a failed first attempt.
      if (Clock::now() - newest.since < kMaxIdle && beast::get_lowest_layer(*newest.stream).socket().is_open()) {
        ConnectionBudget::of_process().set_idle(*newest.slot, false);
        return {std::move(newest.slot), std::move(newest.stream)};
      }
    }
    return {};
  }

  void give(const std::string& destination, Connection connection) {
    auto& idle = idle_[destination];
    while (!idle.empty() && Clock::now() - idle.front().since >= kMaxIdle) {
      idle.pop_front();  // closed, and its place given back
    }
    beast::get_lowest_layer(*connection.stream).expires_never();
    ConnectionBudget::of_process().set_idle(*connection.slot, true);
    idle.push_back(Idle{std::move(connection.slot), std::move(connection.stream), Clock::now()});
  }

  /// Closes the connection idle the longest, for a call waiting for a place; false if none.
  bool close_oldest() {
    std::deque<Idle>* oldest = nullptr;
    for (auto& [destination, idle] : idle_) {
      if (!idle.empty() && (oldest == nullptr || idle.front().since < oldest->front().since)) {
        oldest = &idle;
      }
    }
    if (oldest == nullptr) {
      return false;
    }
    oldest->pop_front();
    return true;
  }

private:
  struct Idle {
    ConnectionBudget::SlotPtr slot;  // first: destroyed last, once the stream's descriptor is closed
    std::shared_ptr<Stream> stream;
    Clock::time_point since;
  };
  static constexpr auto kMaxIdle = std::chrono::seconds(4);
  std::map<std::string, std::deque<Idle>> idle_;
};

// (Reused connection | resolve -> check addresses -> connect -> (TLS)) -> write -> read, under
// one deadline. A reused connection that fails before any answer (the server closed it while
// idle) is retried once on a new one: every request idempay sends is idempotent (acquirer
// calls carry their key, callbacks their webhook-id), so a repeat is harmless.
template <class Stream>
class Exchange : public std::enable_shared_from_this<Exchange<Stream>> {
public:
  using MakeStream = std::function<std::shared_ptr<Stream>()>;

  Exchange(net::io_context& ioc, const void* client, OutboundRequest request, Url url, ClientCallback done,
           IdlePool<Stream>& pool, MakeStream make_stream)
      : ioc_(ioc),
        client_(client),
        resolver_(ioc),
        request_(std::move(request)),
        url_(std::move(url)),
        done_(std::move(done)),
        deadline_(Clock::now() + request_.total_timeout),
        pool_(pool),
        make_stream_(std::move(make_stream)),
        destination_((url_.tls ? "https://" : "http://") + url_.host_header() +
                     (request_.allow_private ? "" : " public-only")) {}

  void start() {
    auto idle = pool_.take(destination_);
    if (idle.stream) {
      reused_ = true;
      slot_ = std::move(idle.slot);
      stream_ = std::move(idle.stream);
      return write();
    }
    slot_ = ConnectionBudget::of_process().acquire(client_, [self = this->shared_from_this()](auto slot) {
      net::post(self->ioc_, [self, slot = std::move(slot)]() mutable { self->on_slot(std::move(slot)); });
    });
    if (slot_) {
      return connect();
    }
    waiting_.emplace(ioc_, deadline_);
    waiting_->async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (!ec && !self->slot_) {
        self->finish(make_error(ErrorCode::kTimeout, "no connection to " + self->url_.host +
                                                         " was free before the deadline: timed out"));
      }
    });
  }

private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(*stream_); }

  // A place in the connection budget, after waiting for one.
  void on_slot(ConnectionBudget::SlotPtr slot) {
    if (!done_) {
      return;  // the call timed out while waiting: the place goes to the next one
    }
    waiting_->cancel();
    slot_ = std::move(slot);
    connect();
  }

  void connect() {
    stream_ = make_stream_();
    lowest().expires_after(request_.connect_timeout);
    resolver_.async_resolve(url_.host, url_.port, [self = this->shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
      self->on_resolve(ec, std::move(r));
    });
  }

  void on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) {
      return fail(ec, "cannot resolve " + url_.host);
    }
    std::vector<tcp::endpoint> allowed;
    for (const auto& entry : results) {
      if (request_.allow_private || is_public_address(entry.endpoint().address().to_string())) {
        allowed.push_back(entry.endpoint());
      }
    }
    if (allowed.empty()) {
      return finish(make_error(ErrorCode::kForbidden,
                               "destination " + url_.host + " resolves only to non-public addresses"));
    }
    lowest().async_connect(allowed, [self = this->shared_from_this()](beast::error_code ec2, const tcp::endpoint&) {
      if (ec2) {
        return self->fail(ec2, "cannot connect to " + self->url_.host);
      }
      self->after_connect();
    });
  }

  void after_connect() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      write();
    } else {
      if (!SSL_set_tlsext_host_name(stream_->native_handle(), url_.host.c_str())) {
        return finish(make_error(ErrorCode::kUnavailable, "cannot set TLS server name"));
      }
      stream_->set_verify_callback(ssl::host_name_verification(url_.host));
      stream_->async_handshake(ssl::stream_base::client, [self = this->shared_from_this()](beast::error_code ec) {
        if (ec) {
          return self->fail(ec, "TLS handshake with " + self->url_.host + " failed");
        }
        self->write();
      });
    }
  }

  void build_request() {
    req_.method(bhttp::string_to_verb(request_.method));
    req_.target(url_.target);
    req_.version(11);
    req_.set(bhttp::field::host, url_.host_header());
    req_.set(bhttp::field::user_agent, "idempay");
    for (const auto& h : request_.headers) {
      req_.set(h.name, h.value);
    }
    std::vector<Header>().swap(request_.headers);  // the request's fields hold them now
    req_.body() = std::move(request_.body);
    req_.prepare_payload();
  }

  void write() {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    lowest().expires_after(std::max(remaining, std::chrono::milliseconds(1)));
    if (!built_) {
      build_request();
      built_ = true;
    }
    bhttp::async_write(*stream_, req_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        return self->fail(ec, "sending to " + self->url_.host + " failed");
      }
      self->buffer_.clear();
      self->parser_.emplace();
      self->parser_->body_limit(self->request_.max_response_bytes);
      self->parser_->header_limit(16 * 1024);
      bhttp::async_read(*self->stream_, self->buffer_, *self->parser_, [self](beast::error_code ec2, size_t) {
        if (ec2) {
          return self->fail(ec2, "reading the answer of " + self->url_.host + " failed");
        }
        self->on_response();
      });
    });
  }

  void on_response() {
    auto& res = parser_->get();
    ClientResponse out;
    out.status = res.result_int();
    out.body = std::move(res.body());
    for (const auto& field : res) {
      out.headers.push_back(Header{ascii_lower(field.name_string()), std::string(field.value())});
    }
    if (res.keep_alive()) {
      pool_.give(destination_, {std::move(slot_), std::move(stream_)});
    } else {
      beast::error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    }
    finish(std::move(out));
  }

  void fail(beast::error_code ec, std::string what) {
    bool answer_started = parser_ && parser_->got_some();
    if (reused_ && !answer_started && ec != beast::error::timeout) {
      reused_ = false;  // once: the next failure is the destination's
      return connect();
    }
    if (ec == beast::error::timeout) {
      return finish(make_error(ErrorCode::kTimeout, what + ": timed out"));
    }
    finish(make_error(ErrorCode::kUnavailable, what + ": " + ec.message()));
  }

  void finish(Result<ClientResponse> r) {
    if (done_) {
      auto done = std::move(done_);
      done_ = nullptr;
      done(std::move(r));
    }
  }

  net::io_context& ioc_;
  const void* client_;  // whose calls these are, for the connection budget
  tcp::resolver resolver_;
  std::optional<net::steady_timer> waiting_;  // for a place in the connection budget, if it must wait
  ConnectionBudget::SlotPtr slot_;  // before the stream: given back once its descriptor is closed
  std::shared_ptr<Stream> stream_;
  OutboundRequest request_;
  Url url_;
  ClientCallback done_;
  Clock::time_point deadline_;
  IdlePool<Stream>& pool_;
  MakeStream make_stream_;
  std::string destination_;
  bool reused_ = false;
  bool built_ = false;
  bhttp::request<bhttp::string_body> req_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser_;
};

}  // namespace

// One I/O thread runs every handler of a client: its streams and resolvers need no strand (a
// strand's executor is one more allocation per operation and per connection).
struct Client::Impl {
  net::io_context ioc{1};
  ssl::context tls{ssl::context::tls_client};
  IdlePool<beast::tcp_stream> plain_idle;
  IdlePool<beast::ssl_stream<beast::tcp_stream>> tls_idle;
  net::executor_work_guard<net::io_context::executor_type> guard = net::make_work_guard(ioc);
  std::thread thread;
};

namespace {

// Loads `options`' CA and client certificate into `tls`; the first file that fails is named.
Status configure_tls(ssl::context& tls, const ClientOptions& options) {
  tls.set_default_verify_paths();
  tls.set_verify_mode(ssl::verify_peer);
  tls.set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                  ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  if (!options.extra_ca_file.empty()) {
    tls.load_verify_file(options.extra_ca_file, ec);
  }
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "CA file " + options.extra_ca_file + ": " + ec.message());
  }
  if (options.client_cert_file.empty() != options.client_key_file.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "a client certificate needs both its certificate and its key");
  }
  if (options.client_cert_file.empty()) {
    return {};
  }
  tls.use_certificate_chain_file(options.client_cert_file, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument,
                      "client certificate " + options.client_cert_file + ": " + ec.message());
  }
  tls.use_private_key_file(options.client_key_file, ssl::context::pem, ec);
  if (ec || SSL_CTX_check_private_key(tls.native_handle()) != 1) {
    return make_error(ErrorCode::kInvalidArgument, "client key " + options.client_key_file + ": " +
                                                       (ec ? ec.message() : "does not match the certificate"));
  }
  return {};
}

}  // namespace

Status check_client_options(const ClientOptions& options) {
  ssl::context tls{ssl::context::tls_client};
  return configure_tls(tls, options);
}

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>()) {
  // A file that does not load leaves the client without it (its handshakes fail, and say
  // so); check_client_options is where a configuration learns why.
  (void)configure_tls(impl_->tls, options);
  ConnectionBudget::of_process().enrol(impl_.get(), [impl = impl_.get()] {
    net::post(impl->ioc, [impl] {
      if (!impl->plain_idle.close_oldest() && !impl->tls_idle.close_oldest()) {
        ConnectionBudget::of_process().eviction_missed();
      }
    });
  });
  impl_->thread = std::thread([this] {
    pthread_setname_np(pthread_self(), "idempay-client");  // for top -H, perf and the harness
    impl_->ioc.run();
  });
}

Client::~Client() {
  ConnectionBudget::of_process().leave(impl_.get());
  impl_->guard.reset();
  impl_->ioc.stop();
  impl_->thread.join();
}

namespace {
// RFC 9110 token characters: what a method or a header name may hold.
bool is_token(std::string_view s) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           kSpecials.find(c) != std::string_view::npos;
  });
}

// The last line of defence against request splitting: whatever the caller built, nothing
// reaches the wire that could end the request line or a header early.
Status check_request(const OutboundRequest& request, const Url& url) {
  if (!is_token(request.method) || !is_safe_target(url.target)) {
    return make_error(ErrorCode::kInvalidArgument, "refused to send a malformed request line");
  }
  for (const auto& h : request.headers) {
    if (!is_token(h.name) || !is_safe_header_value(h.value)) {
      return make_error(ErrorCode::kInvalidArgument, "refused to send a malformed header: " + h.name);
    }
  }
  return {};
}
}  // namespace

namespace {

// The thread's current trace goes out with the request (W3C `traceparent`, `tracestate`) as a
// client span's context; the span ends with the answer, and the callback runs in the
// caller's context again, so that a call made from it (a token, then the payment) is one
// trace too. Without a current trace nothing is added.
ClientCallback traced(OutboundRequest& request, const Url& url, ClientCallback done) {
  const tracing::TraceContext& parent = tracing::current();
  if (!parent.valid()) {
    return done;
  }
  auto span = std::make_shared<tracing::Span>(tracing::start_span(request.method, tracing::Kind::kClient, parent));
  request.headers.push_back(Header{"traceparent", span->context().traceparent()});
  if (!span->context().trace_state.empty()) {
    request.headers.push_back(Header{"tracestate", span->context().trace_state});
  }
  if (span->recording()) {  // OpenTelemetry's conventions for HTTP client spans; no query string
    auto path = url.target.substr(0, url.target.find('?'));
    span->set("http.request.method", request.method).set("server.address", url.host);
    span->set("server.port", static_cast<int64_t>(std::stoi(url.port)));
    span->set("url.full", std::string(url.tls ? "https://" : "http://") + url.host_header() + path);
  }
  return [span, parent, done = std::move(done)](Result<ClientResponse> r) {
    if (span->recording()) {
      if (r) {
        span->set("http.response.status_code", static_cast<int64_t>(r->status));
        if (r->status >= 400) {
          span->fail(std::to_string(r->status));
        }
      } else {
        span->fail(std::string(to_string(r.error().code)));
      }
    }
    span->end();
    tracing::Scope scope(parent);
    done(std::move(r));
  };
}

}  // namespace

void Client::send(OutboundRequest request, ClientCallback done) {
  auto url = Url::parse(request.url);
  if (!url) {
    return done(tl::unexpected(url.error()));
  }
  if (auto checked = check_request(request, *url); !checked) {
    return done(tl::unexpected(checked.error()));
  }
  done = traced(request, *url, std::move(done));
  net::post(impl_->ioc, [this, request = std::move(request), url = std::move(*url), done = std::move(done)]() mutable {
    auto& ioc = impl_->ioc;
    if (url.tls) {
      using Stream = beast::ssl_stream<beast::tcp_stream>;
      std::make_shared<Exchange<Stream>>(ioc, impl_.get(), std::move(request), std::move(url), std::move(done), impl_->tls_idle,
                                         [&ioc, &tls = impl_->tls] { return std::make_shared<Stream>(ioc, tls); })
          ->start();
    } else {
      using Stream = beast::tcp_stream;
      std::make_shared<Exchange<Stream>>(ioc, impl_.get(), std::move(request), std::move(url), std::move(done), impl_->plain_idle,
                                         [&ioc] { return std::make_shared<Stream>(ioc); })
          ->start();
    }
  });
}

void Client::request(const Url& base, std::string method, std::string target, std::string body,
                     std::chrono::milliseconds timeout, ClientCallback done, const std::vector<Header>& headers) {
  OutboundRequest r;
  r.method = std::move(method);
  r.url = std::string(base.tls ? "https://" : "http://") + base.host_header() +
          (base.target == "/" ? "" : base.target) + target;
  r.headers = {{"content-type", "application/json"}, {"accept", "application/json"}};
  r.headers.insert(r.headers.end(), headers.begin(), headers.end());
  r.body = std::move(body);
  r.connect_timeout = timeout;
  r.total_timeout = timeout;
  r.max_response_bytes = 1024 * 1024;
  r.allow_private = true;  // the acquirer is configured by the operator, not by a request
  send(std::move(r), std::move(done));
}

}  // namespace idempay::http
