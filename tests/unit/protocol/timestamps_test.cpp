// RFC 3339 timestamps as the acquirers' APIs write them (API Pix's `criacao`, Adyen's
// `eventDate`): what idempay writes, and what it reads back.
#include <gtest/gtest.h>

#include "idempay/base/timestamps.hpp"

namespace idempay {
namespace {

TEST(TimestampsTest, WrittenInUtcWithMilliseconds) {
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(1599682500358), "2020-09-09T20:15:00.358Z");
  EXPECT_EQ(format_rfc3339(253402300799999), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(format_rfc3339(253402300800000), "10000-01-01T00:00:00.000Z");  // not cut short
  EXPECT_EQ(format_rfc3339(-1), "1969-12-31T23:59:59.999Z");  // before 1970: still a valid date-time
  EXPECT_EQ(format_rfc3339(-1000), "1969-12-31T23:59:59.000Z");
}

TEST(TimestampsTest, ReadWithAnyFractionAndOffset) {
  EXPECT_EQ(parse_rfc3339("2020-09-09T20:15:00.358Z").value(), 1599682500358);
  EXPECT_EQ(parse_rfc3339("2020-09-09T17:15:00.358-03:00").value(), 1599682500358);
  EXPECT_EQ(parse_rfc3339("2020-09-09t20:15:00z").value(), 1599682500000);
  EXPECT_EQ(parse_rfc3339("2020-09-09 20:15:00.3Z").value(), 1599682500300);
  EXPECT_EQ(parse_rfc3339("2020-09-09T20:15:00.358999Z").value(), 1599682500358);  // below a millisecond: dropped
  EXPECT_EQ(parse_rfc3339("2020-09-09T23:45:00+03:30").value(), 1599682500000);
}

TEST(TimestampsTest, AnythingElseIsRefused) {
  for (const char* text : {"", "2020-09-09", "2020-09-09T20:15:00", "2020-13-09T20:15:00Z", "2020-09-09T24:15:00Z",
                           "2020-09-09T20:15:00.Z", "2020-09-09T20:15:00+0300", "2020-09-09T20:15:00Z ",
                           "20-09-09T20:15:00Z"}) {
    auto parsed = parse_rfc3339(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << text;
  }
}

TEST(TimestampsTest, WhatIsWrittenReadsBackTheSame) {
  for (int64_t ms : {int64_t{-62167219200000}, int64_t{-1500}, int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{999},
                     int64_t{1599682500358}, int64_t{1796256000123}, int64_t{253402300799999}}) {
    EXPECT_EQ(parse_rfc3339(format_rfc3339(ms)).value(), ms) << ms;
  }
}

}  // namespace
}  // namespace idempay
