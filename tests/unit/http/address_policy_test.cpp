#include <gtest/gtest.h>

#include "idempay/http/address_policy.hpp"

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

}  // namespace
}  // namespace idempay::http
