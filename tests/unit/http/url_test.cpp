#include <gtest/gtest.h>

#include "idempay/http/url.hpp"

namespace idempay::http {
namespace {

TEST(UrlTest, KeepsPathAndQueryExactly) {
  auto u = Url::parse("https://gw.example:8443/a/b?x=1&X-VTEX-signature=abc%2F%3D").value();
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.host, "gw.example");
  EXPECT_EQ(u.port, "8443");
  EXPECT_EQ(u.target, "/a/b?x=1&X-VTEX-signature=abc%2F%3D");
  EXPECT_EQ(u.host_header(), "gw.example:8443");
  auto v6 = Url::parse("http://[::1]:8080?q=1").value();
  EXPECT_EQ(v6.host, "::1");
  EXPECT_TRUE(v6.host_is_ip);
  EXPECT_EQ(v6.target, "/?q=1");
  EXPECT_EQ(v6.host_header(), "[::1]:8080");
  EXPECT_EQ(Url::parse("http://h").value().host_header(), "h");
  EXPECT_EQ(Url::parse("HTTPS://GW.Example/x#frag").value().host, "gw.example");
  EXPECT_EQ(Url::parse("https://gw.example/x#frag").value().target, "/x");
}

// Each of these would reach a request line or a header if it were accepted.
TEST(UrlTest, RefusesEverythingThatCouldSplitARequest) {
  for (std::string bad : {"https://gw.example/cb\r\nX-Evil: 1", "https://gw.example/cb\nGET /x HTTP/1.1",
                          "https://gw.example/a b", "https://gw.example/a\tb", "https://gw.example/\x01",
                          "https://gw.example/\x7f", "https://gw.example/\xc3\xa9", "https://gw.example/a\"b",
                          "https://gw.example/<x>", "https://gw.example/a\\b", "https://gw.example/{x}",
                          "https://gw.example/a|b", "https://gw.example/a^b", "https://gw.example/a`b",
                          "https://gw.example/%zz", "https://gw.example/%4", "https://gw.ex\r\nample/",
                          "https://gw.example:443\r\n/", "https://gw.example/#a#b", "https://gw.example/#a b"}) {
    EXPECT_FALSE(Url::parse(bad)) << bad;
  }
  std::string nul = std::string("https://gw.example/a") + '\0' + "b";
  EXPECT_FALSE(Url::parse(nul));
}

TEST(UrlTest, RefusesMalformedAuthorities) {
  for (const char* bad : {"ftp://h/x", "javascript:alert(1)", "//h/x", "http://user:pw@h/x", "http://user@h/x",
                          "http://h:port/x", "http://h:0/x", "http://h:65536/x", "http://h:/x", "http:///x",
                          "http://-h/x", "http://h-/x", "http://h..example/x", "http://h_x.example/x",
                          "http://[::1/x", "http://[nothex]/x", "http://[::1]x/x", "http://256.1.1.1/x",
                          "http://h%2eexample/x", "http://h example/x"}) {
    EXPECT_FALSE(Url::parse(bad)) << bad;
  }
}

TEST(HostAllowlistTest, MatchesExactHostsSubdomainsAndIpLiterals) {
  auto list = HostAllowlist::parse(" .vtexpayments.com.br, gateway.example ,127.0.0.1,[::1]").value();
  auto allows = [&](const char* url) { return list.allows(Url::parse(url).value()); };
  EXPECT_TRUE(allows("https://acct.vtexpayments.com.br/cb"));
  EXPECT_TRUE(allows("https://a.b.VTEXPAYMENTS.com.br/cb"));
  EXPECT_FALSE(allows("https://vtexpayments.com.br/cb")) << "a '.' entry matches subdomains only";
  EXPECT_FALSE(allows("https://evilvtexpayments.com.br/cb"));
  EXPECT_FALSE(allows("https://vtexpayments.com.br.evil.example/cb"));
  EXPECT_TRUE(allows("https://gateway.example/cb"));
  EXPECT_FALSE(allows("https://x.gateway.example/cb")) << "an entry without '.' matches only itself";
  EXPECT_TRUE(allows("http://127.0.0.1:9/cb"));
  EXPECT_FALSE(allows("http://127.0.0.2/cb"));
  EXPECT_TRUE(allows("http://[0:0::1]/cb")) << "IPv6 literals compare canonically";
  EXPECT_FALSE(HostAllowlist::parse("bad host"));
  EXPECT_FALSE(HostAllowlist::parse("[::zz]"));
  EXPECT_TRUE(HostAllowlist::parse("").value().empty());
}

TEST(DestinationRulesTest, HttpsOnlyAllowedHostsAndPublicLiterals) {
  DestinationRules rules{HostAllowlist::parse(".vtexpayments.com.br,127.0.0.1,10.0.0.1,8.8.8.8").value(), false};
  EXPECT_TRUE(check_destination("https://a.vtexpayments.com.br/cb?X-VTEX-signature=s", rules));
  EXPECT_EQ(check_destination("http://a.vtexpayments.com.br/cb", rules).error().code, ErrorCode::kForbidden);
  EXPECT_EQ(check_destination("https://evil.example/cb", rules).error().code, ErrorCode::kForbidden);
  EXPECT_EQ(check_destination("https://127.0.0.1/cb", rules).error().code, ErrorCode::kForbidden);
  EXPECT_EQ(check_destination("https://10.0.0.1/cb", rules).error().code, ErrorCode::kForbidden);
  EXPECT_TRUE(check_destination("https://8.8.8.8/cb", rules));
  EXPECT_EQ(check_destination("https://a.vtexpayments.com.br/\r\n", rules).error().code,
            ErrorCode::kInvalidArgument);
  rules.allow_private = true;
  EXPECT_TRUE(check_destination("http://127.0.0.1:8080/cb", rules));
  EXPECT_EQ(check_destination("http://evil.example/cb", rules).error().code, ErrorCode::kForbidden)
      << "allow_private never lifts the allowlist";
}

TEST(HeaderSafetyTest, ControlCharactersAreRefused) {
  EXPECT_TRUE(is_safe_header_value("Bearer abc\tdef"));
  EXPECT_FALSE(is_safe_header_value("a\r\nb"));
  EXPECT_FALSE(is_safe_header_value(std::string("a\0b", 3)));
  EXPECT_TRUE(is_safe_target("/a?b=c"));
  EXPECT_FALSE(is_safe_target("a"));
  EXPECT_FALSE(is_safe_target("/a b"));
}

}  // namespace
}  // namespace idempay::http
