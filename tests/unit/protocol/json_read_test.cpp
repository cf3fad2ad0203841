#include <gtest/gtest.h>

#include "idempay/protocol/json_read.hpp"

namespace idempay {
namespace {

// The reader behind webhooks, the credentials file and stored records: one policy with the
// PPP parser, a member name twice is an error at any depth.
TEST(JsonReadTest, DuplicateMemberNamesAreRefusedAtAnyDepth) {
  EXPECT_FALSE(JsonValue::parse(R"({"a":1,"a":2})"));
  EXPECT_FALSE(JsonValue::parse(R"({"data":{"status":"approved","status":"denied"}})"));
  EXPECT_FALSE(JsonValue::parse(R"([{"x":1},{"y":1,"y":1}])"));
  EXPECT_FALSE(JsonValue::parse(R"({"a":1,"\u0061":2})"));
  auto ok = JsonValue::parse(R"({"a":{"a":1},"b":[{"a":1},{"a":2}]})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->find("a")->find("a")->text(), "1");
}

}  // namespace
}  // namespace idempay
