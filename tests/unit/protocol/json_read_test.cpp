#include <gtest/gtest.h>

#include "idempay/base/json_read.hpp"

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

// A number is kept as written: money read from it must never pass through a binary double
// (1.999999999999999999999 would be 2).
TEST(JsonReadTest, NumbersKeepTheirTextAsWritten) {
  auto v = JsonValue::parse(R"({"a":1.999999999999999999999,"b":1.00,"c":-0.5e-3,"d":12345678901234567890123})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->find("a")->text(), "1.999999999999999999999");
  EXPECT_EQ(v->find("b")->text(), "1.00");
  EXPECT_EQ(v->find("c")->text(), "-0.5e-3");
  EXPECT_EQ(v->find("d")->text(), "12345678901234567890123");
  EXPECT_EQ(v->find("a")->type(), JsonValue::Type::kNumber);
}

TEST(JsonReadTest, MalformedDocumentsAreRefused) {
  for (const char* bad : {R"({"a":01})", R"({"a":1.})", R"({"a":.5})", R"({"a":1e})", R"({"a":+1})",
                          R"({"a":tru})", R"({"a":nul})", R"({"a":1} x)", R"({"a":1}{})", "[1,]", "{",
                          R"({"a":"\x"})", "\xff"}) {
    EXPECT_FALSE(JsonValue::parse(bad)) << bad;
  }
  std::string deep(65, '[');
  deep += std::string(65, ']');
  EXPECT_FALSE(JsonValue::parse(deep)) << "deeper than 64";
  std::string ok_depth(64, '[');
  ok_depth += std::string(64, ']');
  EXPECT_TRUE(JsonValue::parse(ok_depth));
}

TEST(JsonReadTest, ScalarsAndNestingReadBack) {
  auto v = JsonValue::parse(R"( {"s":"x\u00e9","t":true,"f":false,"n":null,"arr":[1,"2",[3]]} )");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->string_or("s"), "x\xc3\xa9");
  EXPECT_TRUE(v->bool_or("t"));
  EXPECT_FALSE(v->bool_or("f", true));
  EXPECT_TRUE(v->find("n")->is_null());
  EXPECT_EQ(v->find("arr")->items()[2].items()[0].text(), "3");
  EXPECT_EQ(JsonValue::parse("42")->text(), "42");
  EXPECT_EQ(JsonValue::parse(R"("just a string")")->text(), "just a string");
}

}  // namespace
}  // namespace idempay
