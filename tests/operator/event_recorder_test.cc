#include "operator/event_recorder.h"

#include <gtest/gtest.h>

#include "testing/fakes/fake_kube_client.h"

namespace paratune::kube {
namespace {

using namespace std::chrono_literals;

Json Campaign(FakeKubeClient* client, const std::string& name = "c") {
  return *client->Create(resources::kTuningCampaigns, "ns",
                         Json{{"metadata", {{"name", name}, {"namespace", "ns"}}}});
}

std::vector<Json> Events(FakeKubeClient* client) {
  return client->List(resources::kEvents, "ns", {})->items;
}

const Json* WithReason(const std::vector<Json>& events, const std::string& reason) {
  for (const Json& e : events) {
    if (e.value("reason", "") == reason) return &e;
  }
  return nullptr;
}

// A repeat inside the patch interval costs no request; the next PATCH carries its count.
TEST(EventRecorderTest, RepeatsBumpOneEventAndArePatchedAtMostOncePerInterval) {
  FakeKubeClient client;
  FakeTimeSource clock;
  EventRecorder rec(&client, "paratune-operator", &clock);
  const Json obj = Campaign(&client);
  client.ResetCalls();
  rec.Event(obj, "Normal", "TrialStarted", "trial 1 started");
  rec.Event(obj, "Normal", "TrialStarted", "trial 1 started");
  rec.Event(obj, "Warning", "TrialFailed", "trial 1 failed: CudaOOM");
  EXPECT_EQ(client.TotalCalls(), 2) << "the repeat must be skipped, not patched at once";
  clock.Advance(31s);
  rec.Event(obj, "Normal", "TrialStarted", "trial 1 started");
  EXPECT_EQ(client.TotalCalls(), 3);
  const auto events = Events(&client);
  ASSERT_EQ(events.size(), 2u);
  const Json* started = WithReason(events, "TrialStarted");
  ASSERT_NE(started, nullptr);
  EXPECT_EQ((*started)["count"], 3);
  EXPECT_EQ((*started)["involvedObject"]["kind"], "TuningCampaign");
  EXPECT_EQ((*started)["involvedObject"]["uid"], UidOf(obj));
  EXPECT_EQ(rec.recorded(), 4);
  EXPECT_EQ(rec.requests(), 3);
}

// Like client-go's EventAggregator: many distinct messages with one reason on one object become
// a bounded number of Events.
TEST(EventRecorderTest, SimilarEventsBeyondTheLimitAreCombined) {
  FakeKubeClient client;
  FakeTimeSource clock;
  EventRecorderOptions opts;
  opts.max_similar = 3;
  EventRecorder rec(&client, "paratune-operator", &clock, opts);
  const Json obj = Campaign(&client);
  for (int i = 0; i < 50; ++i) {
    rec.Event(obj, "Normal", "Launched", "t" + std::to_string(i) + " launched");
    clock.Advance(1s);
  }
  const auto events = Events(&client);
  ASSERT_EQ(events.size(), 4u);  // three as they were, one combined
  int combined = 0;
  for (const Json& e : events) {
    if (e["message"].get<std::string>().rfind("(combined from similar events)", 0) == 0) {
      ++combined;
      EXPECT_GT(e["count"].get<int>(), 1);
    }
  }
  EXPECT_EQ(combined, 1);
  EXPECT_LT(rec.requests(), 10);
}

TEST(EventRecorderTest, CorrelationStateIsPrunedAfterTheWindow) {
  FakeKubeClient client;
  FakeTimeSource clock;
  EventRecorder rec(&client, "paratune-operator", &clock);
  for (int i = 0; i < 600; ++i) {
    const Json obj = Campaign(&client, "c" + std::to_string(i));
    rec.Event(obj, "Normal", "Proposed", "proposed");
    clock.Advance(5s);  // 600 x 5 s: most entries are older than the 10-minute window
  }
  EXPECT_LT(rec.tracked(), 2u * 400u);
}

TEST(EventRecorderTest, AsyncRecorderWritesFromItsOwnThread) {
  FakeKubeClient client;
  EventRecorderOptions opts;
  opts.async = true;
  EventRecorder rec(&client, "paratune-operator", RealTimeSource::Get(), opts);
  const Json obj = Campaign(&client);
  for (int i = 0; i < 5; ++i) rec.Event(obj, "Normal", "Proposed", "t" + std::to_string(i));
  rec.Flush();
  EXPECT_EQ(Events(&client).size(), 5u);
  EXPECT_EQ(rec.recorded(), 5);
  EXPECT_EQ(rec.dropped(), 0);
}

// Issue 17: the same Warning 50 times in a burst is one Event whose count says 50 (two
// requests), not one Event with count 1 and 49 repeats forgotten.
TEST(EventRecorderTest, ABurstOfOneWarningIsOneEventCountingEveryRepeat) {
  FakeKubeClient client;
  FakeTimeSource clock;
  EventRecorder rec(&client, "paratune-operator", &clock);
  const Json obj = Campaign(&client);
  for (int i = 0; i < 50; ++i) rec.Event(obj, "Warning", "TrialFailed", "t1 failed: CudaOOM");
  rec.Flush();
  const auto events = Events(&client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["count"], 50);
  EXPECT_EQ(rec.requests(), 2) << "one create, one patch of the count";
  rec.Flush();
  EXPECT_EQ(rec.requests(), 2) << "nothing held: no further request";
}

TEST(EventRecorderTest, CountsHeldWhenTheRecorderStopsAreWritten) {
  FakeKubeClient client;
  const Json obj = Campaign(&client);
  {
    EventRecorderOptions opts;
    opts.async = true;
    EventRecorder rec(&client, "paratune-operator", RealTimeSource::Get(), opts);
    for (int i = 0; i < 10; ++i) rec.Event(obj, "Warning", "NodeSuspect", "gpu-3 is suspect");
  }
  const auto events = Events(&client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 10);
}

}  // namespace
}  // namespace paratune::kube
