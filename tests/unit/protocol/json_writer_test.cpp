// The JSON writer every document is written with: escaping and numbers at their edges.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"

namespace idempay {
namespace {

TEST(JsonWriterTest, StringsAreEscaped) {
  std::string out;
  append_json_string(out, "a\"b\\c\n\x01");
  EXPECT_EQ(out, R"("a\"b\\c\n\u0001")");
}

TEST(JsonWriterTest, NumbersAreWrittenInFullAtTheirExtremes) {
  JsonWriter w;
  w.begin_array();
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{3190}, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()}) {
    w.number(v);
  }
  w.end_array();
  EXPECT_EQ(w.str(), "[0,-1,3190,9223372036854775807,-9223372036854775808]");
}

// The writer finds characters to escape eight at a time: compare it with the plain
// byte-by-byte rule on random strings of every length around the word size, with special
// characters at every position.
TEST(JsonWriterTest, EscapingMatchesTheByteByByteRule) {
  auto reference = [](std::string_view v) {
    std::string out = "\"";
    for (unsigned char u : v) {
      char buf[8];
      if (u == '"' || u == '\\') {
        out += '\\';
        out += static_cast<char>(u);
      } else if (u == '\n') {
        out += "\\n";
      } else if (u == '\r') {
        out += "\\r";
      } else if (u == '\t') {
        out += "\\t";
      } else if (u < 0x20) {
        std::snprintf(buf, sizeof buf, "\\u%04x", u);
        out += buf;
      } else {
        out += static_cast<char>(u);
      }
    }
    return out + "\"";
  };
  std::mt19937 random(7);
  const std::string specials = std::string("\"\\\n\r\t\x01\x1f\x20\x7f\x80\xff", 11) + std::string(1, '\0');
  for (size_t length = 0; length < 40; ++length) {
    for (int trial = 0; trial < 200; ++trial) {
      std::string s(length, 'a');
      for (char& c : s) {
        c = (random() % 4 == 0) ? specials[random() % specials.size()] : static_cast<char>('a' + random() % 26);
      }
      std::string out;
      append_json_string(out, s);
      ASSERT_EQ(out, reference(s));
    }
  }
}

TEST(JsonWriterTest, EscapesAtEitherEndAndInRowsAndEveryAsciiByteRoundTrips) {
  std::string out;
  append_json_string(out, "");
  append_json_string(out, "\"\r\tx\t\\");
  append_json_string(out, "caf\xc3\xa9 \x7f");
  EXPECT_EQ(out, std::string(R"("""\"\r\tx\t\\")") + "\"caf\xc3\xa9 \x7f\"");
  std::string all;
  for (int c = 0; c < 0x80; ++c) {
    all.push_back(static_cast<char>(c));
  }
  std::string doc = "{\"v\":";
  append_json_string(doc, all);
  doc += "}";
  auto parsed = JsonValue::parse(doc);
  ASSERT_TRUE(parsed.has_value()) << doc;
  EXPECT_EQ(parsed->string_or("v"), all);
}

}  // namespace
}  // namespace idempay
