// The request threads' cache of resolved payments' Create Payment answers (repeat_cache.hpp).
#include <gtest/gtest.h>

#include "repeat_cache.hpp"

namespace idempay::actors {
namespace {

domain::Reply approved() { return domain::Reply(domain::Outcome::kDone, R"({"status":"approved"})"); }

TEST(RepeatCacheTest, AKeyNamesTheMerchantTheSuiteMarkAndTheExactBytes) {
  RepeatCache cache(8, 1000);
  std::string key = cache.key("alpha", false, "{\"paymentId\":\"p\"}");
  EXPECT_EQ(key, cache.key("alpha", false, "{\"paymentId\":\"p\"}"));
  EXPECT_NE(key, cache.key("beta", false, "{\"paymentId\":\"p\"}"));
  EXPECT_NE(key, cache.key("alpha", true, "{\"paymentId\":\"p\"}"));
  EXPECT_NE(key, cache.key("alpha", false, "{\"paymentId\":\"p\"} "));
  // A merchant's name cannot run into the body: the mark and the digest have fixed lengths.
  EXPECT_NE(cache.key("a", false, "b"), cache.key(std::string_view("a\0f", 3), false, "b"));
  // Keyed per process: a digest of a body holding card data is worthless to anyone else.
  EXPECT_NE(key, RepeatCache(8, 1000).key("alpha", false, "{\"paymentId\":\"p\"}"));
  EXPECT_EQ(key.find("paymentId"), std::string::npos);
}

TEST(RepeatCacheTest, OnlyRememberedRequestsAreAnsweredAndEachArrivalWaitsForTheTrail) {
  RepeatCache cache(8, 1000);
  std::string key = cache.key("alpha", false, "body");
  std::string due;
  EXPECT_FALSE(cache.answer(key, 1, due));
  EXPECT_TRUE(cache.settled()) << "an unknown request is not counted here: its actor counts it";
  cache.remember(key, "p-1", "alpha", "fp", approved());
  auto got = cache.answer(key, 100, due);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->body, approved().body);
  EXPECT_TRUE(cache.answer(key, 101, due));
  EXPECT_TRUE(due.empty());
  EXPECT_FALSE(cache.settled());
  EXPECT_EQ(cache.due(), std::vector<std::string>{"p-1"});
  EXPECT_TRUE(cache.due().empty()) << "handed out once until taken";
  cache.hand_back("p-1");  // its actor could not read the record
  EXPECT_EQ(cache.due(), std::vector<std::string>{"p-1"});
  auto arrivals = cache.take("p-1");
  ASSERT_EQ(arrivals.size(), 2u);
  EXPECT_EQ(arrivals[0].time, 100);
  EXPECT_EQ(arrivals[1].time, 101);
  EXPECT_EQ(arrivals[0].merchant, "alpha");
  EXPECT_EQ(arrivals[0].fingerprint, "fp");
  EXPECT_TRUE(cache.settled());
  EXPECT_TRUE(cache.take("p-1").empty());
}

TEST(RepeatCacheTest, AFullBatchIsDueAtOnce) {
  RepeatCache cache(8, 1000);
  std::string key = cache.key("alpha", false, "body");
  cache.remember(key, "p-1", "alpha", "fp", approved());
  std::string due;
  for (size_t i = 1; i < RepeatCache::kBatch; ++i) {
    ASSERT_TRUE(cache.answer(key, static_cast<int64_t>(i), due));
    ASSERT_TRUE(due.empty());
  }
  ASSERT_TRUE(cache.answer(key, 99, due));
  EXPECT_EQ(due, "p-1");
  EXPECT_TRUE(cache.due().empty()) << "handed out already";
  EXPECT_EQ(cache.take("p-1").size(), RepeatCache::kBatch);
}

TEST(RepeatCacheTest, TheOldestAnswerGoesWhenFull) {
  RepeatCache cache(2, 1000);
  std::string due;
  for (int i = 0; i < 3; ++i) {
    cache.remember(cache.key("alpha", false, std::to_string(i)), "p-" + std::to_string(i), "alpha", "fp", approved());
  }
  EXPECT_FALSE(cache.answer(cache.key("alpha", false, "0"), 1, due));
  EXPECT_TRUE(cache.answer(cache.key("alpha", false, "1"), 1, due));
  EXPECT_TRUE(cache.answer(cache.key("alpha", false, "2"), 1, due));
}

// Past many rehashes of its table, and with keys remembered twice, the cache still keeps
// exactly the newest `capacity` answers (the eviction order points at the table's own keys).
TEST(RepeatCacheTest, EvictionKeepsTheNewestThroughRehashesAndRepeats) {
  constexpr int kCapacity = 100;
  RepeatCache cache(kCapacity, 100000);
  auto key = [&](int i) { return cache.key("alpha", false, "body-" + std::to_string(i)); };
  for (int i = 0; i < 1000; ++i) {
    cache.remember(key(i), "p-" + std::to_string(i), "alpha", "fp", approved());
    cache.remember(key(i), "p-" + std::to_string(i), "alpha", "fp", approved());  // a repeat adds nothing
  }
  std::string due;
  int answered = 0;
  for (int i = 0; i < 1000; ++i) {
    bool known = cache.answer(key(i), 1, due).has_value();
    EXPECT_EQ(known, i >= 1000 - kCapacity) << i;
    answered += known;
  }
  EXPECT_EQ(answered, kCapacity);
}

TEST(RepeatCacheTest, ForgottenOrClosedItAnswersNothingButKeepsTheArrivals) {
  RepeatCache cache(8, 1000);
  std::string key = cache.key("alpha", false, "body");
  cache.remember(key, "p-1", "alpha", "fp", approved());
  std::string due;
  ASSERT_TRUE(cache.answer(key, 1, due));
  cache.forget_answers();
  EXPECT_FALSE(cache.answer(key, 2, due));
  cache.remember(key, "p-1", "alpha", "fp", approved());
  cache.close();
  EXPECT_FALSE(cache.answer(key, 3, due));
  cache.remember(key, "p-1", "alpha", "fp", approved());
  EXPECT_FALSE(cache.answer(key, 4, due)) << "nothing is remembered once closed";
  EXPECT_EQ(cache.take("p-1").size(), 1u);
}

TEST(RepeatCacheTest, ArrivalsTheTrailsCannotTakeStopTheShortcut) {
  RepeatCache cache(8, 3);
  std::string key = cache.key("alpha", false, "body");
  cache.remember(key, "p-1", "alpha", "fp", approved());
  std::string due;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cache.answer(key, i, due));
  }
  EXPECT_FALSE(cache.answer(key, 3, due)) << "the store is out of reach: the actor answers, as it would anyway";
  EXPECT_EQ(cache.take("p-1").size(), 3u);
  EXPECT_TRUE(cache.answer(key, 4, due)) << "taken: the shortcut is open again";
}

}  // namespace
}  // namespace idempay::actors
