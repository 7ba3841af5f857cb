#include "operator/work_queue.h"

#include <gtest/gtest.h>

#include <string>

namespace paratune::kube {
namespace {

TEST(WorkQueueTest, DeduplicatesQueuedKeys) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  q.Add("a");
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.Len(), 2u);
}

TEST(WorkQueueTest, KeyAddedWhileProcessingWaitsForDone) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  q.Add("a");
  auto k = q.TryGet();
  ASSERT_EQ(k, "a");
  q.Add("a");
  EXPECT_FALSE(q.TryGet().has_value()) << "a second worker must not get a key in flight";
  q.Done("a");
  EXPECT_EQ(q.TryGet(), "a");
}

TEST(WorkQueueTest, AddAfterWaitsForTheClock) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  q.AddAfter("a", Millis(1000));
  EXPECT_FALSE(q.TryGet().has_value());
  clock.Advance(Millis(999));
  EXPECT_FALSE(q.TryGet().has_value());
  clock.Advance(Millis(1));
  EXPECT_EQ(q.TryGet(), "a");
}

TEST(WorkQueueTest, ADelayedKeyKeepsItsEarliestTimeAndAnAddCancelsTheDelay) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  q.AddAfter("a", Millis(1000));
  q.AddAfter("a", Millis(5000));  // later: the earlier time stands
  q.AddAfter("b", Millis(3000));
  q.AddAfter("b", Millis(2000));  // earlier: replaces the later one
  q.AddAfter("c", Millis(4000));
  EXPECT_EQ(q.DelayedLen(), 3u);
  q.Add("c");  // now: no longer delayed
  EXPECT_EQ(q.DelayedLen(), 2u);
  EXPECT_EQ(q.TryGet(), "c");
  q.Done("c");
  clock.Advance(Millis(1000));
  EXPECT_EQ(q.TryGet(), "a");
  q.Done("a");
  EXPECT_FALSE(q.TryGet().has_value());
  clock.Advance(Millis(1000));
  EXPECT_EQ(q.TryGet(), "b");
  q.Done("b");
  clock.Advance(Millis(10000));
  EXPECT_FALSE(q.TryGet().has_value()) << "c's delay was cancelled, a's later one superseded";
  EXPECT_EQ(q.DelayedLen(), 0u);
}

TEST(WorkQueueTest, ManyDelayedKeysComeOutWhenDueInTheOrderTheyAreDue) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  constexpr int kKeys = 5000;
  for (int i = kKeys - 1; i >= 0; --i) q.AddAfter("k" + std::to_string(i), Millis(10 + i));
  clock.Advance(Millis(10 + kKeys / 2 - 1));
  for (int i = 0; i < kKeys / 2; ++i) {
    auto k = q.TryGet();
    ASSERT_EQ(k, "k" + std::to_string(i));
    q.Done(*k);
  }
  EXPECT_FALSE(q.TryGet().has_value());
  EXPECT_EQ(q.DelayedLen(), static_cast<size_t>(kKeys / 2));
}

TEST(WorkQueueTest, PerItemBackoffDoublesAndForgetResets) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  for (int i = 0; i < 4; ++i) {  // 5, 10, 20, 40 ms
    q.AddRateLimited("a");
    Millis expected(5 << i);
    clock.Advance(expected - Millis(1));
    EXPECT_FALSE(q.TryGet().has_value()) << "attempt " << i;
    clock.Advance(Millis(1));
    auto k = q.TryGet();
    ASSERT_EQ(k, "a") << "attempt " << i;
    q.Done("a");
  }
  EXPECT_EQ(q.NumRequeues("a"), 4);
  q.Forget("a");
  q.AddRateLimited("a");
  clock.Advance(Millis(5));
  EXPECT_EQ(q.TryGet(), "a");
}

TEST(WorkQueueTest, PerItemBackoffIsCappedAt1000Seconds) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  for (int i = 0; i < 40; ++i) {
    q.AddRateLimited("a");
    clock.Advance(Millis(1000 * 1000));
    ASSERT_EQ(q.TryGet(), "a");
    q.Done("a");
  }
}

TEST(WorkQueueTest, OverallBucketLimitsBurstsOfDistinctKeys) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  for (int i = 0; i < 110; ++i) q.AddRateLimited("k" + std::to_string(i));
  clock.Advance(Millis(5));
  int ready = 0;
  while (auto k = q.TryGet()) ++ready;
  EXPECT_EQ(ready, 100) << "burst of 100, then 10 per second";
  clock.Advance(Millis(1000));
  while (auto k = q.TryGet()) ++ready;
  EXPECT_EQ(ready, 110);
}

TEST(WorkQueueTest, ShutDownWakesBlockedGet) {
  FakeTimeSource clock;
  WorkQueue q(&clock);
  std::thread t([&] { EXPECT_FALSE(q.Get().has_value()); });
  std::this_thread::sleep_for(Millis(20));
  q.ShutDown();
  t.join();
}

}  // namespace
}  // namespace paratune::kube
