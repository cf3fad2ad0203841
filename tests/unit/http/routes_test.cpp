// The route table: templates, percent-decoding of segments, the canonical path of a match.
#include <gtest/gtest.h>

#include "idempay/http/routes.hpp"

namespace idempay::http {
namespace {

const RouteTable kTable({{"GET", "/manifest", 1},
                         {"POST", "/payments", 2},
                         {"POST", "/payments/{}/refunds", 3},
                         {"GET", "/payments/{}", 4},
                         {"POST", "/pos/{}/terminal", 5}});

TEST(RouteTableTest, MatchesTemplatesAndDecodesEachSegmentOnce) {
  auto found = kTable.find("POST", "/payments/a%3Ab/refunds");
  ASSERT_TRUE(found.match);
  EXPECT_EQ(found.match->id, 3);
  EXPECT_EQ(found.match->params, (std::vector<std::string>{"a:b"}));
  EXPECT_EQ(found.match->canonical(), "/payments/a:b/refunds");
  // %2541 is "%41" once decoded, not "A": decoded once, never twice.
  EXPECT_EQ(kTable.find("GET", "/payments/%2541").match->params[0], "%41");
}

TEST(RouteTableTest, OneRouteHasOneCanonicalPathWhateverItsSpelling) {
  auto plain = kTable.find("POST", "/payments/P1/refunds");
  auto slash = kTable.find("POST", "/payments/P1/refunds/");
  auto escaped = kTable.find("POST", "/payments/%50%31/refunds");
  ASSERT_TRUE(plain.match && slash.match && escaped.match);
  EXPECT_EQ(plain.match->canonical(), slash.match->canonical());
  EXPECT_EQ(plain.match->canonical(), escaped.match->canonical());
}

TEST(RouteTableTest, UnknownPathsWrongMethodsAndBadSegmentsMatchNothing) {
  EXPECT_FALSE(kTable.find("GET", "/favicon.ico").match);
  EXPECT_TRUE(kTable.find("GET", "/favicon.ico").allow.empty());
  auto wrong_method = kTable.find("GET", "/payments");
  EXPECT_FALSE(wrong_method.match);
  EXPECT_EQ(wrong_method.allow, "POST");
  EXPECT_EQ(kTable.find("POST", "/manifest").allow, "GET, HEAD") << "the server answers HEAD wherever GET is";
  for (const char* bad : {"/payments//refunds", "/payments/a%2Fb/refunds", "/payments/a%00/refunds",
                          "/payments/a%zz/refunds", "/payments/a%4/refunds", "/PAYMENTS", "payments", ""}) {
    EXPECT_FALSE(kTable.find("POST", bad).match) << bad;
    EXPECT_FALSE(kTable.knows(bad)) << bad;
  }
  EXPECT_TRUE(kTable.knows("/payments"));
  EXPECT_TRUE(kTable.knows("/pos/x/terminal"));
}

TEST(RouteTableTest, SegmentsDecodeToPrintableTextOnly) {
  EXPECT_EQ(decode_segment("a%20b").value(), "a b");
  EXPECT_FALSE(decode_segment("a%0d%0ab"));
  EXPECT_FALSE(decode_segment("%7f"));
  EXPECT_FALSE(decode_segment("%2f"));
  EXPECT_FALSE(decode_segment("%"));
}

}  // namespace
}  // namespace idempay::http
