// EventRecorder: repeats within 10 minutes bump one Event, and the de-duplication memory stays
// bounded however many distinct Events a long-running operator writes.
#include "operator/event_recorder.h"

#include <gtest/gtest.h>

#include <string>

#include "operator/testing/fake_kube_client.h"
#include "operator/time_source.h"

namespace paratune::kube {
namespace {

Json Campaign(int i) {
  return {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
          {"kind", "TuningCampaign"},
          {"metadata",
           {{"name", "c" + std::to_string(i)},
            {"namespace", "ns"},
            {"uid", "uid-" + std::to_string(i)}}}};
}

TEST(EventRecorderTest, RepeatsBumpOneEvent) {
  FakeKubeClient client;
  FakeTimeSource time;
  EventRecorder rec(&client, "paratune-operator", &time);
  for (int i = 0; i < 3; ++i) rec.Event(Campaign(1), "Normal", "Launched", "t001 launched");
  auto events = client.List(resources::kEvents, "ns", {});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(events->items[0]["count"], 3);
}

TEST(EventRecorderTest, MemoryIsBoundedByForgettingTheOldest) {
  FakeKubeClient client;
  FakeTimeSource time;
  EventRecorder rec(&client, "paratune-operator", &time);
  const int n = static_cast<int>(EventRecorder::kMaxSeen * 3 / 2) + 1;  // past the bound
  for (int i = 0; i < n; ++i) {
    rec.Event(Campaign(i), "Normal", "Launched", "trial " + std::to_string(i));
    time.Advance(Millis(10));
  }
  EXPECT_LE(rec.remembered(), EventRecorder::kMaxSeen);
  EXPECT_EQ(rec.recorded(), n);
  // The newest is still de-duplicated.
  rec.Event(Campaign(n - 1), "Normal", "Launched", "trial " + std::to_string(n - 1));
  auto events = client.List(resources::kEvents, "ns", {});
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->items.size(), static_cast<size_t>(n));
}

}  // namespace
}  // namespace paratune::kube
