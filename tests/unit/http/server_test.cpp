// The HTTP transport against a fake handler, over real loopback sockets.
#include <mutex>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "auth_throttle.hpp"
#include "idempay/http/server.hpp"

namespace idempay::http {
namespace {

class EchoHandler final : public Handler {
public:
  std::atomic<int> calls{0};
  std::mutex held_mutex;
  std::vector<Responder> held;
  void handle(Request request, Responder respond) override {
    ++calls;
    if (request.path == "/drop") {
      return;  // never answered: the responder's destructor must answer 503
    }
    if (request.path == "/hold") {  // kept, never answered (a request stuck behind a fault)
      std::lock_guard lock(held_mutex);
      held.push_back(std::move(respond));
      return;
    }
    std::string body = request.method + " " + request.path + " " + request.principal + " " +
                       std::string(request.header("x-test")) + " " + request.body;
    respond(Response(200, body, "text/plain"));
  }
};

// A connected socket from `source` (any 127/8 address is this host's loopback), or -1.
int connect_from(uint16_t port, const char* source = "127.0.0.1") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends raw bytes, reads until the peer closes or `expect_responses` responses arrived.
std::string round_trip(uint16_t port, const std::string& raw, int expect_responses = 1,
                       const char* source = "127.0.0.1") {
  int fd = connect_from(port, source);
  if (fd < 0) {
    return "connect failed";
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    size_t count = 0;
    for (size_t pos = out.find("HTTP/1.1 "); pos != std::string::npos; pos = out.find("HTTP/1.1 ", pos + 1)) ++count;
    if (static_cast<int>(count) >= expect_responses && out.find("\r\n\r\n") != std::string::npos &&
        out.rfind("Content-Length") != std::string::npos) {
      // crude: good enough once the final body has arrived
      auto last = out.rfind("HTTP/1.1 ");
      auto header_end = out.find("\r\n\r\n", last);
      if (header_end != std::string::npos) {
        auto cl = out.find("Content-Length: ", last);
        size_t len = std::stoul(out.substr(cl + 16));
        if (out.size() >= header_end + 4 + len) break;
      }
    }
  }
  ::close(fd);
  return out;
}

const char* const kAuthHeaders = "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: token-1\r\n";

class ServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto creds = std::make_shared<Credentials>();
    ASSERT_TRUE(creds->add("shop", "key-1", {"token-1"}));
    ServerOptions options;
    options.port = 0;
    options.body_limit = 1024;
    options.read_timeout = std::chrono::milliseconds(2000);
    options.header_timeout = std::chrono::milliseconds(1000);
    options.public_paths = {"/manifest"};
    options.credentials = creds;
    options.credential_headers = {{"X-VTEX-API-AppKey", "X-VTEX-API-AppToken"},
                                  {"X-PROVIDER-API-AppKey", "X-PROVIDER-API-AppToken"}};
    configure(options);
    server = std::make_unique<Server>(options, handler);
    port = server->start().value();
  }
  void TearDown() override { server->stop(std::chrono::milliseconds(100)); }
  virtual void configure(ServerOptions&) {}

  static std::string post(const std::string& path, const std::string& headers, const std::string& body) {
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + headers + "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  EchoHandler handler;
  std::unique_ptr<Server> server;
  uint16_t port = 0;
};

TEST_F(ServerTest, MissingOrWrongCredentialsAre401AndNeverReachTheHandler) {
  EXPECT_NE(round_trip(port, post("/payments", "", "{}")).find("HTTP/1.1 401"), std::string::npos);
  EXPECT_NE(round_trip(port, post("/payments", "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: token-2\r\n", "{}"))
                .find("HTTP/1.1 401"), std::string::npos);
  EXPECT_NE(round_trip(port, post("/payments", "X-VTEX-API-AppKey: key-2\r\nX-VTEX-API-AppToken: token-1\r\n", "{}"))
                .find("HTTP/1.1 401"), std::string::npos);
  EXPECT_EQ(handler.calls.load(), 0);
}

TEST_F(ServerTest, BothHeaderFamiliesInAnyCaseAuthenticate) {
  auto vtex = round_trip(port, post("/p", "x-vtex-api-appkey: key-1\r\nX-VTEX-API-APPTOKEN: token-1\r\nX-Test: t\r\n", "b"));
  EXPECT_NE(vtex.find("HTTP/1.1 200"), std::string::npos) << vtex;
  EXPECT_NE(vtex.find("POST /p shop t b"), std::string::npos) << vtex;
  auto provider = round_trip(port, post("/p", "X-PROVIDER-API-AppKey: key-1\r\nx-provider-api-apptoken: token-1\r\n", "b"));
  EXPECT_NE(provider.find("HTTP/1.1 200"), std::string::npos) << provider;
}

TEST_F(ServerTest, PublicPathNeedsNoCredentials) {
  auto r = round_trip(port, "GET /manifest HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
}

TEST_F(ServerTest, OversizedBodyIs413) {
  auto r = round_trip(port, post("/p", "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: token-1\r\n", std::string(4096, 'x')));
  EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
  EXPECT_EQ(handler.calls.load(), 0);
}

TEST_F(ServerTest, GarbageIs400) {
  auto r = round_trip(port, "NOT HTTP AT ALL\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 400"), std::string::npos) << r;
}

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::string auth = "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: token-1\r\n";
  auto r = round_trip(port, post("/a", auth, "1") + post("/b", auth, "2"), 2);
  EXPECT_NE(r.find("POST /a shop  1"), std::string::npos) << r;
  EXPECT_NE(r.find("POST /b shop  2"), std::string::npos) << r;
}

TEST_F(ServerTest, UnansweredRequestGets503) {
  std::string auth = "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: token-1\r\n";
  auto r = round_trip(port, post("/drop", auth, ""));
  EXPECT_NE(r.find("HTTP/1.1 503"), std::string::npos) << r;
}

class AnswerLimitTest : public ServerTest {
protected:
  void configure(ServerOptions& options) override { options.answer_limit = std::chrono::milliseconds(300); }
};

TEST_F(AnswerLimitTest, ARequestHeldPastTheLimitGets503WithRetryAfterAndTheLateAnswerIsDropped) {
  auto started = std::chrono::steady_clock::now();
  auto r = round_trip(port, post("/hold", kAuthHeaders, "") + post("/echo", kAuthHeaders, "next"), 2);
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(300));
  EXPECT_EQ(r.find("HTTP/1.1 503"), 0u) << r;
  EXPECT_NE(r.find("Retry-After: 1"), std::string::npos) << r;
  EXPECT_NE(r.find("POST /echo shop  next"), std::string::npos) << r;  // the connection serves on
  std::lock_guard lock(handler.held_mutex);
  ASSERT_EQ(handler.held.size(), 1u);
  handler.held.front()(Response(200, "too late", "text/plain"));  // first answer wins: dropped
  handler.held.clear();  // its session must not outlive the server
  EXPECT_EQ(r.find("too late"), std::string::npos);
}

TEST_F(ServerTest, AnsweredRequestsAreNotCutByTheLimitOff) {
  auto r = round_trip(port, post("/echo", kAuthHeaders, "x"));
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
}

TEST_F(ServerTest, IdleConnectionIsClosedAfterTheReadTimeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::send(fd, "GET /manifest HTTP/1.1\r\n", 24, MSG_NOSIGNAL);  // never finished
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto start = std::chrono::steady_clock::now();
  char buf[64];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  auto waited = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_LE(n, 0);  // closed, nothing served
  EXPECT_LT(waited, std::chrono::seconds(8));
}

const std::string kAuth = "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: token-1\r\n";

TEST_F(ServerTest, WrongCredentialsAre401BeforeTheBodyIsRead) {
  // The headers announce a body that never comes: the answer must not wait for it.
  auto start = std::chrono::steady_clock::now();
  auto r = round_trip(port, "POST /payments HTTP/1.1\r\nHost: x\r\nX-VTEX-API-AppKey: key-1\r\n"
                            "X-VTEX-API-AppToken: wrong\r\nContent-Length: 1000\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 401"), std::string::npos) << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));  // read timeout: 2 s
  EXPECT_EQ(handler.calls.load(), 0);
}

TEST_F(ServerTest, Http11WithoutHostIs400) {
  auto r = round_trip(port, "GET /manifest HTTP/1.1\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 400"), std::string::npos) << r;
  auto old = round_trip(port, "GET /manifest HTTP/1.0\r\n\r\n");
  EXPECT_NE(old.find("HTTP/1.1 200"), std::string::npos) << old;
}

// A coding the server skipped would leave the body to be read as the next request.
TEST_F(ServerTest, UnknownTransferEncodingsAreRefusedNeverSkipped) {
  const std::string smuggled = "GET /manifest HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const char* te : {"xchunked", "chunked, identity", "gzip, chunked", "identity", "chunked\x0b"}) {
    auto r = round_trip(port, "POST /p HTTP/1.1\r\nHost: x\r\n" + kAuth + "Transfer-Encoding: " + te + "\r\n\r\n" +
                                  "0\r\n\r\n" + smuggled, 2);
    EXPECT_EQ(r.find("HTTP/1.1 200"), std::string::npos) << te << ": " << r;
    EXPECT_TRUE(r.find("HTTP/1.1 501") != std::string::npos || r.find("HTTP/1.1 400") != std::string::npos) << te << r;
  }
  auto both = round_trip(port, "POST /p HTTP/1.1\r\nHost: x\r\n" + kAuth +
                                   "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled, 2);
  EXPECT_NE(both.find("HTTP/1.1 400"), std::string::npos) << both;
  EXPECT_EQ(both.find("HTTP/1.1 200"), std::string::npos) << both;
  EXPECT_EQ(handler.calls.load(), 0);
  auto chunked = round_trip(port, "POST /p HTTP/1.1\r\nHost: x\r\n" + kAuth +
                                      "Transfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_NE(chunked.find("POST /p shop  abc"), std::string::npos) << chunked;
}

TEST_F(ServerTest, RepeatedWrongCredentialsAreThrottledPerSourceButValidOnesAlwaysPass) {
  std::string wrong = post("/p", "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: guess\r\n", "{}");
  int unauthorized = 0;
  std::string throttled;
  for (int i = 0; i < 25; ++i) {
    auto r = round_trip(port, wrong, 1, "127.0.0.3");
    unauthorized += r.find("HTTP/1.1 401") != std::string::npos;
    if (r.find("HTTP/1.1 429") != std::string::npos) throttled = r;
  }
  EXPECT_EQ(unauthorized, 20);  // the default burst
  ASSERT_FALSE(throttled.empty());
  EXPECT_NE(throttled.find("retry-after: "), std::string::npos) << throttled;
  // The right token from the throttled source is never refused (a stranger's guesses must not
  // lock a merchant out); its further guesses are; other sources are unaffected.
  EXPECT_NE(round_trip(port, post("/p", kAuth, "x"), 1, "127.0.0.3").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(round_trip(port, wrong, 1, "127.0.0.3").find("HTTP/1.1 429"), std::string::npos);
  EXPECT_NE(round_trip(port, post("/p", kAuth, "x"), 1, "127.0.0.4").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(round_trip(port, "GET /manifest HTTP/1.1\r\nHost: x\r\n\r\n", 1, "127.0.0.3").find("HTTP/1.1 200"),
            std::string::npos) << "public paths need no credentials, so nothing to throttle";
}

TEST(ServerLimitsTest, ConnectionsOverTheCapsAreClosedAtOnce) {
  EchoHandler handler;
  ServerOptions options;
  options.port = 0;
  options.max_connections = 3;
  options.max_connections_per_source = 2;
  options.public_paths = {"/manifest"};
  Server server(options, handler);
  uint16_t port = server.start().value();
  auto closed_at_once = [](int fd) {
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    return ::recv(fd, &c, 1, 0) == 0;
  };
  int a1 = connect_from(port, "127.0.0.5"), a2 = connect_from(port, "127.0.0.5");
  int a3 = connect_from(port, "127.0.0.5");
  EXPECT_TRUE(closed_at_once(a3)) << "a third connection from one source";
  int b1 = connect_from(port, "127.0.0.6");
  int b2 = connect_from(port, "127.0.0.6");
  EXPECT_TRUE(closed_at_once(b2)) << "a fourth connection in all";
  for (int fd : {a1, a2, a3, b1, b2}) ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server sees them go
  auto r = round_trip(port, "GET /manifest HTTP/1.1\r\nHost: x\r\n\r\n", 1, "127.0.0.5");
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << "served again once connections closed: " << r;
  server.stop(std::chrono::milliseconds(100));
}

TEST(AuthThrottleTest, BurstThenRefillAndBoundedMemory) {
  AuthThrottle throttle(20, 1);
  auto t0 = AuthThrottle::Clock::now();
  for (int i = 0; i < 19; ++i) {
    EXPECT_FALSE(throttle.record_failure("a", t0));
  }
  EXPECT_TRUE(throttle.record_failure("a", t0)) << "the 20th failure throttles";
  EXPECT_EQ(throttle.retry_after("a", t0), 1);
  EXPECT_EQ(throttle.retry_after("b", t0), 0) << "other sources are unaffected";
  EXPECT_EQ(throttle.retry_after("a", t0 + std::chrono::seconds(1)), 0) << "one more try a second later";
  // Addresses without end: memory stays bounded, and a source throttled just now stays so.
  for (int s = 0; s < 3 * static_cast<int>(AuthThrottle::kMaxSources); ++s) {
    for (int i = 0; i < 20; ++i) {
      throttle.record_failure("x" + std::to_string(s), t0);
    }
  }
  EXPECT_LE(throttle.tracked(), AuthThrottle::kMaxSources);
  EXPECT_GT(throttle.retry_after("x" + std::to_string(3 * AuthThrottle::kMaxSources - 1), t0), 0);
}

TEST(CredentialsTest, HashedTokensRotationAndRefusals) {
  Credentials c;
  ASSERT_TRUE(c.add_hashed("m", "k", {"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}));  // sha256("x")
  EXPECT_EQ(c.authenticate("k", "x"), "m");
  EXPECT_TRUE(c.authenticate("k", "nope").empty());
  EXPECT_TRUE(c.authenticate("other", "x").empty());
  EXPECT_FALSE(c.add_hashed("n", "k2", {"not-hex"}));
  ASSERT_TRUE(c.add("rotating", "k3", {"old-token", "new-token"}));
  EXPECT_EQ(c.authenticate("k3", "old-token"), "rotating");
  EXPECT_EQ(c.authenticate("k3", "new-token"), "rotating");
  EXPECT_TRUE(c.authenticate("k3", "x").empty()) << "another merchant's token never opens this key";
  EXPECT_FALSE(c.add("empty", "k4", {""}));
  EXPECT_FALSE(c.add("none", "k5", {}));
  EXPECT_FALSE(c.add("m", "k6", {"t"})) << "names are unique";
  EXPECT_FALSE(c.add("dup-key", "k", {"t"})) << "appKeys are unique";
  EXPECT_TRUE(c.authenticate("", "").empty());
  EXPECT_EQ(c.names(), (std::vector<std::string>{"m", "rotating"}));
}

// -- routes and the PROXY protocol -------------------------------------------------------------

// A PROXY protocol v2 header (haproxy's send-proxy-v2) naming `client` as the source.
std::string proxy_header(const char* client) {
  std::string h("\r\n\r\n\0\r\nQUIT\n", 12);
  h += '\x21';  // version 2, PROXY
  h += '\x11';  // IPv4, stream
  h += std::string("\0\x0c", 2);
  in_addr src{}, dst{};
  ::inet_pton(AF_INET, client, &src);
  ::inet_pton(AF_INET, "127.0.0.1", &dst);
  h.append(reinterpret_cast<const char*>(&src), 4).append(reinterpret_cast<const char*>(&dst), 4);
  h += std::string("\x9c\x40\x1f\x90", 4);  // ports 40000, 8080
  return h;
}

class RoutedServerTest : public ServerTest {
protected:
  void configure(ServerOptions& options) override {
    options.known_path = [](std::string_view path) { return path == "/p" || path == "/manifest"; };
    options.trusted_proxies = NetworkList::parse("127.0.0.7/32, ::1").value();
  }
};

TEST_F(RoutedServerTest, UnknownPathsAre404BeforeCredentialsAndNeverCountAsWrongOnes) {
  std::string unknown = "GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 30; ++i) {
    auto r = round_trip(port, unknown, 1, "127.0.0.9");
    ASSERT_NE(r.find("HTTP/1.1 404"), std::string::npos) << r;
    ASSERT_NE(r.find("application/problem+json"), std::string::npos) << r;
  }
  std::string wrong = post("/p", "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: guess\r\n", "{}");
  EXPECT_NE(round_trip(port, wrong, 1, "127.0.0.9").find("HTTP/1.1 401"), std::string::npos)
      << "30 unknown paths must not have throttled the source";
  EXPECT_EQ(handler.calls.load(), 0);
}

TEST_F(RoutedServerTest, ATrustedProxysHeaderNamesTheSourceThatIsThrottled) {
  std::string wrong = post("/p", "X-VTEX-API-AppKey: key-1\r\nX-VTEX-API-AppToken: guess\r\n", "{}");
  std::string last;
  for (int i = 0; i < 25; ++i) {
    last = round_trip(port, proxy_header("203.0.113.5") + wrong, 1, "127.0.0.7");
  }
  EXPECT_NE(last.find("HTTP/1.1 429"), std::string::npos) << last;
  // Another client behind the same proxy is another source: not throttled.
  EXPECT_NE(round_trip(port, proxy_header("203.0.113.6") + wrong, 1, "127.0.0.7").find("HTTP/1.1 401"),
            std::string::npos);
  EXPECT_NE(round_trip(port, proxy_header("203.0.113.6") + post("/p", kAuth, "x"), 1, "127.0.0.7")
                .find("HTTP/1.1 200"), std::string::npos);
}

TEST_F(RoutedServerTest, AProxyHeaderIsReadFromTrustedProxiesOnlyAndRequiredFromThem) {
  // From the trusted proxy without a header: closed unanswered (its bytes could be a client's).
  EXPECT_EQ(round_trip(port, post("/p", kAuth, "x"), 1, "127.0.0.7"), "");
  // From anyone else, a header is not a request: refused, nothing reaches the handler.
  auto refused = round_trip(port, proxy_header("10.0.0.1") + post("/p", kAuth, "x"), 1, "127.0.0.8");
  EXPECT_EQ(refused.find("HTTP/1.1 200"), std::string::npos) << refused;
  EXPECT_EQ(handler.calls.load(), 0);
  // A LOCAL header (the proxy's health check) stands for the proxy itself.
  std::string local("\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00", 16);
  EXPECT_NE(round_trip(port, local + "GET /manifest HTTP/1.1\r\nHost: x\r\n\r\n", 1, "127.0.0.7").find("HTTP/1.1 200"),
            std::string::npos);
}

TEST(ProxyProtocolTest, ParsesVersionTwoAndRefusesEverythingElse) {
  std::string h = proxy_header("198.51.100.7");
  ASSERT_EQ(proxy_v2_block_length(h.substr(0, kProxyV2PrefixBytes)).value(), 12u);
  EXPECT_EQ(proxy_v2_source(h).value(), "198.51.100.7");
  EXPECT_FALSE(proxy_v2_block_length("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n"));  // version 1
  EXPECT_FALSE(proxy_v2_block_length("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string huge = h.substr(0, 14) + std::string("\xff\xff", 2);
  EXPECT_FALSE(proxy_v2_block_length(huge));
  EXPECT_FALSE(proxy_v2_source(h.substr(0, h.size() - 1)));  // shorter than it says
  std::string v1_version = h;
  v1_version[12] = '\x11';
  EXPECT_FALSE(proxy_v2_block_length(v1_version.substr(0, 16)));
}

TEST(NetworkListTest, MatchesCidrNetworksOfBothFamilies) {
  auto list = NetworkList::parse("10.0.0.0/8, 192.168.1.7,fd00::/8").value();
  EXPECT_TRUE(list.contains("10.200.3.4"));
  EXPECT_TRUE(list.contains("::ffff:10.0.0.1"));  // as a dual-stack socket names it
  EXPECT_TRUE(list.contains("192.168.1.7"));
  EXPECT_FALSE(list.contains("192.168.1.8"));
  EXPECT_TRUE(list.contains("fd12::1"));
  EXPECT_FALSE(list.contains("fe80::1"));
  EXPECT_FALSE(list.contains("not an address"));
  EXPECT_FALSE(NetworkList::parse("10.0.0.0/33"));
  EXPECT_FALSE(NetworkList::parse("example.com"));
  EXPECT_TRUE(NetworkList::parse("").value().empty());
}

}  // namespace
}  // namespace idempay::http
