#include "operator/work_queue.h"

#include <gtest/gtest.h>

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
