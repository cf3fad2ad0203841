#include <gtest/gtest.h>

#include "idempay/http/address_policy.hpp"
#include "idempay/http/client.hpp"

namespace idempay::http {
namespace {

TEST(AddressPolicyTest, RefusesEveryNonPublicRange) {
  for (const char* a : {"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                        "169.254.169.254", "100.64.0.1", "100.127.255.254", "0.0.0.0", "192.0.2.1",
                        "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "240.0.0.1",
                        "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
                        "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a00:1",
                        "2001:db8::1", "::127.0.0.1", "not an address", ""}) {
    EXPECT_FALSE(is_public_address(a)) << a;
  }
}

TEST(AddressPolicyTest, AcceptsPublicAddresses) {
  for (const char* a : {"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111",
                        "::ffff:8.8.8.8", "2a00:1450:4001::1"}) {
    EXPECT_TRUE(is_public_address(a)) << a;
  }
}

TEST(UrlTest, KeepsPathAndQueryExactly) {
  auto u = Url::parse("https://gw.example:8443/a/b?x=1&X-VTEX-signature=abc").value();
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.host, "gw.example");
  EXPECT_EQ(u.port, "8443");
  EXPECT_EQ(u.target, "/a/b?x=1&X-VTEX-signature=abc");
  EXPECT_EQ(u.host_header(), "gw.example:8443");
  auto v6 = Url::parse("http://[::1]:8080?q=1").value();
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.target, "/?q=1");
  EXPECT_EQ(v6.host_header(), "[::1]:8080");
  EXPECT_EQ(Url::parse("http://h").value().host_header(), "h");
  EXPECT_FALSE(Url::parse("ftp://h/x"));
  EXPECT_FALSE(Url::parse("http://user:pw@h/x"));
  EXPECT_FALSE(Url::parse("http://h:port/x"));
}

}  // namespace
}  // namespace idempay::http
