// W3C Trace Context parsing as the specification's test cases put it, the ambient context, and
// the span queue's bound. The OTLP encoding is checked by an independent decoder in the
// integration tests (tests/integration/test_traces.py).
#include <gtest/gtest.h>

#include "idempay/tracing/context.hpp"
#include "idempay/tracing/otlp.hpp"
#include "idempay/tracing/recent.hpp"
#include "idempay/tracing/tracer.hpp"

namespace idempay::tracing {
namespace {

constexpr const char* kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceparentTest, AValidOneIsReadAndWrittenBackTheSame) {
  auto c = parse_traceparent(kValid);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->sampled);
  EXPECT_EQ(c->trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->span_id_hex(), "00f067aa0ba902b7");
  EXPECT_EQ(c->traceparent(), kValid);
  EXPECT_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->sampled);
}

TEST(TraceparentTest, MalformedOnesAreRefused) {
  for (const char* bad : {
           "", "00", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",              // version ff
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",              // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",              // zero span id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",             // 00 with more
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",               // short flags
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",              // separators
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",              // not hex
           "0-04bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
       }) {
    EXPECT_FALSE(parse_traceparent(bad)) << bad;
  }
}

TEST(TraceparentTest, ALaterVersionIsReadByItsFirstFields) {
  EXPECT_TRUE(parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-adds"));
  EXPECT_TRUE(parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  EXPECT_FALSE(parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"));
}

TEST(TracestateTest, ValidListsAreKeptAndAnythingElseDropped) {
  EXPECT_EQ(valid_tracestate("vendor=abc, other@sys=1,,"), "vendor=abc,other@sys=1");
  EXPECT_EQ(valid_tracestate("rojo=00f067aa0ba902b7"), "rojo=00f067aa0ba902b7");
  EXPECT_EQ(valid_tracestate("Upper=1"), "");                // keys are lower case
  EXPECT_EQ(valid_tracestate("a=1,a=2"), "");                // a key twice
  EXPECT_EQ(valid_tracestate("a=1\r\nx-injected: y"), "");   // no control characters
  EXPECT_EQ(valid_tracestate("a=b=c"), "");
  EXPECT_EQ(valid_tracestate(std::string(600, 'a') + "=1"), "");
  std::string many;
  for (int i = 0; i < 33; ++i) {
    many += "k" + std::to_string(i) + "=v,";
  }
  EXPECT_EQ(valid_tracestate(many), "");  // more than 32 members
}

TEST(ScopeTest, NestedScopesRestoreTheOuterContext) {
  EXPECT_FALSE(current().valid());
  auto outer = *parse_traceparent(kValid);
  {
    Scope a(outer);
    EXPECT_EQ(current().traceparent(), kValid);
    {
      Scope b(TraceContext{});
      EXPECT_FALSE(current().valid());
    }
    EXPECT_EQ(current().traceparent(), kValid);
  }
  EXPECT_FALSE(current().valid());
}

TEST(SpanTest, OffNothingIsRecordedButTheContextPropagates) {
  disable();
  auto parent = *parse_traceparent(kValid);
  auto span = start_span("x", Kind::kInternal, parent);
  EXPECT_FALSE(span.recording());
  EXPECT_EQ(span.context().trace_id, parent.trace_id);
  EXPECT_NE(span.context().span_id, parent.span_id);
  EXPECT_TRUE(span.context().sampled);
  auto root = start_span("y", Kind::kInternal, TraceContext{});
  EXPECT_TRUE(root.context().valid());
  EXPECT_FALSE(root.context().sampled);
}

TEST(SpanTest, SamplingFollowsTheParentAndTheRatioForRoots) {
  configure(TracerOptions{0.0, 100});
  auto sampled = *parse_traceparent(kValid);
  EXPECT_TRUE(start_span("child", Kind::kInternal, sampled).recording());
  auto unsampled = sampled;
  unsampled.sampled = false;
  EXPECT_FALSE(start_span("child", Kind::kInternal, unsampled).recording());
  EXPECT_FALSE(start_span("root", Kind::kInternal, TraceContext{}).recording());
  EXPECT_TRUE(start_root_span("forced", Kind::kInternal, true).recording());
  configure(TracerOptions{1.0, 100});
  EXPECT_TRUE(start_span("root", Kind::kInternal, TraceContext{}).recording());
  disable();
  take(1000, std::chrono::milliseconds(0));
}

TEST(SpanTest, AFullQueueDropsAndCountsNeverWaits) {
  take(100000, std::chrono::milliseconds(0));
  configure(TracerOptions{1.0, 10});
  auto before = counters();
  for (int i = 0; i < 25; ++i) {
    start_span("s", Kind::kInternal, TraceContext{}).end();
  }
  auto after = counters();
  EXPECT_EQ(after.queued, 10u);
  EXPECT_EQ(after.dropped_full - before.dropped_full, 15u);
  auto batch = take(4, std::chrono::milliseconds(0));
  EXPECT_EQ(batch.size(), 4u);
  EXPECT_EQ(counters().queued, 6u);
  disable();
  take(100, std::chrono::milliseconds(0));
}

TEST(OtlpTest, TheRequestNestsResourceScopeAndSpans) {
  SpanData s;
  s.trace_id = parse_traceparent(kValid)->trace_id;
  s.span_id = new_span_id();
  s.name = "payment create";
  auto bytes = encode_export_request(Resource{{{"service.name", "idempay", 0, false}}}, {s});
  // ExportTraceServiceRequest field 1 (ResourceSpans), length-delimited: tag 0x0a.
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x0a);
  EXPECT_NE(bytes.find("payment create"), std::string::npos);
  EXPECT_NE(bytes.find("service.name"), std::string::npos);
}

TEST(OtlpTest, TextFromOutsideGoesInAsValidUtf8) {
  SpanData s;
  s.trace_id = parse_traceparent(kValid)->trace_id;
  s.span_id = new_span_id();
  s.name = "GET unknown";
  s.attributes.push_back(Attribute{"url.path", "/payments/\xff\xfe\x1b[31m", 0, false});
  auto bytes = encode_export_request(Resource{}, {s});
  EXPECT_EQ(bytes.find('\xff'), std::string::npos);  // a collector may refuse a batch for one such byte
  EXPECT_EQ(bytes.find('\x1b'), std::string::npos);
  EXPECT_NE(bytes.find("/payments/\\x"), std::string::npos);
}

TEST(RecentTraceparentsTest, KeepsTheLatestThousandOldestFirst) {
  RecentTraceparents recent;
  recent.note("POST /a", "");  // none sent: nothing kept
  for (int i = 0; i < 1005; ++i) {
    recent.note("POST /a", "t" + std::to_string(i));
  }
  JsonWriter w;
  recent.write(w);
  std::string json = std::move(w).take();
  EXPECT_EQ(json.find("\"t4\""), std::string::npos);
  EXPECT_LT(json.find("\"t5\""), json.find("\"t1004\""));
  EXPECT_EQ(json.find("\"\""), std::string::npos);
}

}  // namespace
}  // namespace idempay::tracing
