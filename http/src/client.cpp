#include "idempay/http/client.hpp"

#include <thread>

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

Result<Url> Url::parse(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return make_error(ErrorCode::kInvalidArgument, "only http:// URLs are supported: " + std::string(url));
  }
  url.remove_prefix(kScheme.size());
  auto slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  Url out;
  out.base_path = slash == std::string_view::npos ? std::string() : std::string(url.substr(slash));
  while (!out.base_path.empty() && out.base_path.back() == '/') {
    out.base_path.pop_back();
  }
  auto colon = authority.rfind(':');
  out.host = std::string(authority.substr(0, colon));
  if (colon != std::string_view::npos) {
    out.port = std::string(authority.substr(colon + 1));
  }
  if (out.host.empty() || out.port.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "URL needs a host: " + std::string(url));
  }
  return out;
}

namespace {

// One request/response exchange: resolve, connect, write, read, all under one deadline.
class Exchange : public std::enable_shared_from_this<Exchange> {
public:
  Exchange(net::io_context& ioc, ClientCallback done)
      : resolver_(net::make_strand(ioc)), stream_(resolver_.get_executor()), done_(std::move(done)) {}

  void start(const Url& url, bhttp::request<bhttp::string_body> req, std::chrono::milliseconds timeout) {
    req_ = std::move(req);
    stream_.expires_after(timeout);
    resolver_.async_resolve(url.host, url.port,
                            [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
                              if (ec) return self->fail(ec);
                              self->stream_.async_connect(r, [self](beast::error_code ec2, const auto&) {
                                if (ec2) return self->fail(ec2);
                                self->write();
                              });
                            });
  }

private:
  void write() {
    bhttp::async_write(stream_, req_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->fail(ec);
      self->parser_.body_limit(1024 * 1024);
      bhttp::async_read(self->stream_, self->buffer_, self->parser_,
                        [self](beast::error_code ec2, size_t) {
                          if (ec2) return self->fail(ec2);
                          beast::error_code ignored;
                          self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
                          auto& res = self->parser_.get();
                          self->done_(ClientResponse{res.result_int(), std::move(res.body())});
                        });
    });
  }

  void fail(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      return done_(make_error(ErrorCode::kTimeout, "HTTP request timed out"));
    }
    done_(make_error(ErrorCode::kUnavailable, "HTTP request failed: " + ec.message()));
  }

  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  ClientCallback done_;
  bhttp::request<bhttp::string_body> req_;
  beast::flat_buffer buffer_;
  bhttp::response_parser<bhttp::string_body> parser_;
};

}  // namespace

struct Client::Impl {
  net::io_context ioc{1};
  net::executor_work_guard<net::io_context::executor_type> guard = net::make_work_guard(ioc);
  std::thread thread{[this] { ioc.run(); }};
};

Client::Client() : impl_(std::make_unique<Impl>()) {}

Client::~Client() {
  impl_->guard.reset();
  impl_->ioc.stop();
  impl_->thread.join();
}

void Client::request(const Url& url, std::string method, std::string target, std::string body,
                     std::chrono::milliseconds timeout, ClientCallback done) {
  bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(method), url.base_path + target, 11};
  req.set(bhttp::field::host, url.host);
  req.set(bhttp::field::content_type, "application/json");
  req.set(bhttp::field::accept, "application/json");
  req.body() = std::move(body);
  req.prepare_payload();
  auto exchange = std::make_shared<Exchange>(impl_->ioc, std::move(done));
  net::post(impl_->ioc, [exchange, url, req = std::move(req), timeout]() mutable {
    exchange->start(url, std::move(req), timeout);
  });
}

}  // namespace idempay::http
