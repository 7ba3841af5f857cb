#include "operator/leader_election.h"

#include <gtest/gtest.h>

#include "testing/fakes/fake_kube_client.h"

namespace paratune::kube {
namespace {

using namespace std::chrono_literals;

LeaderElectionOptions Opts(const std::string& id) {
  LeaderElectionOptions o;
  o.lease_namespace = "paratune-system";
  o.lease_name = "paratune-operator";
  o.identity = id;
  return o;
}

TEST(LeaderElectionTest, OneLeaderAtATimeAndTakeoverAfterExpiry) {
  FakeKubeClient client;
  FakeTimeSource clock;
  LeaderElector a(&client, Opts("a"), &clock, nullptr);
  LeaderElector b(&client, Opts("b"), &clock, nullptr);
  EXPECT_TRUE(a.TryAcquireOrRenew());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock.Advance(10s);
  EXPECT_TRUE(a.TryAcquireOrRenew()) << "renewal";
  clock.Advance(14s);
  EXPECT_FALSE(b.TryAcquireOrRenew()) << "b first sees a's renewal now: valid for 15 s";
  clock.Advance(14s);
  EXPECT_FALSE(b.TryAcquireOrRenew()) << "14 s after b saw the record: still valid";
  clock.Advance(1s);
  EXPECT_TRUE(b.TryAcquireOrRenew()) << "15 s without a renewal seen by b: expired";
  Json lease = *client.Get(resources::kLeases, "paratune-system", "paratune-operator");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
  EXPECT_FALSE(a.TryAcquireOrRenew());
}

// Issue 17: a leader's renewal every 2 s is one request (a PUT of the Lease it last wrote), not
// a GET and a PUT; another candidate still sees every renewal.
TEST(LeaderElectionTest, RenewalsAreOneRequestEach) {
  FakeKubeClient client;
  FakeTimeSource clock;
  LeaderElector a(&client, Opts("a"), &clock, nullptr);
  std::stop_source stop;
  std::atomic<bool> started{false};
  std::thread t([&] {
    a.Run(
        stop.get_token(), [&] { started = true; }, [] {});
  });
  while (!started) std::this_thread::yield();
  client.ResetCalls();
  for (int i = 0; i < 2000 && client.Calls("update") < 5; ++i) {
    clock.Advance(2s);
    std::this_thread::sleep_for(2ms);
  }
  const int updates = client.Calls("update");
  const int gets = client.Calls("get");
  LeaderElector b(&client, Opts("b"), &clock, nullptr);
  EXPECT_FALSE(b.TryAcquireOrRenew()) << "a still holds it";
  stop.request_stop();
  t.join();
  EXPECT_GE(updates, 5);
  EXPECT_EQ(gets, 0) << "renewals must not read the Lease first";
}

TEST(LeaderElectionTest, ReleasedLeaseIsTakenAtOnce) {
  FakeKubeClient client;
  FakeTimeSource clock;
  LeaderElector a(&client, Opts("a"), &clock, nullptr);
  LeaderElector b(&client, Opts("b"), &clock, nullptr);
  std::stop_source stop;
  std::atomic<bool> started{false}, stopped{false};
  std::thread t([&] {
    a.Run(
        stop.get_token(), [&] { started = true; }, [&] { stopped = true; });
  });
  while (!started) std::this_thread::yield();
  EXPECT_TRUE(a.IsLeader());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  stop.request_stop();
  t.join();
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(b.TryAcquireOrRenew()) << "released on shutdown: no 15 s wait";
}

TEST(LeaderElectionTest, ReleasesTheLeaseOnlyAfterTheLeaderWorkStopped) {
  FakeKubeClient client;
  FakeTimeSource clock;
  LeaderElector a(&client, Opts("a"), &clock, nullptr);
  std::stop_source stop;
  std::atomic<bool> started{false};
  std::string holder_while_stopping;
  std::thread t([&] {
    a.Run(
        stop.get_token(), [&] { started = true; },
        [&] {
          // Workers still drain here: nobody else may lead yet.
          holder_while_stopping =
              (*client.Get(resources::kLeases, "paratune-system", "paratune-operator"))["spec"]
                  .value("holderIdentity", "");
        });
  });
  while (!started) std::this_thread::yield();
  stop.request_stop();
  t.join();
  EXPECT_EQ(holder_while_stopping, "a");
  Json lease = *client.Get(resources::kLeases, "paratune-system", "paratune-operator");
  EXPECT_EQ(lease["spec"].value("holderIdentity", ""), "") << "released after the work stopped";
  EXPECT_FALSE(a.IsLeader());
}

TEST(LeaderElectionTest, LosesLeadershipWhenRenewalsFailPastDeadline) {
  FakeKubeClient client;
  FakeTimeSource clock;
  MetricsRegistry metrics;
  LeaderElector a(&client, Opts("a"), &clock, &metrics);
  std::atomic<bool> started{false}, stopped{false};
  std::thread t([&] {
    a.Run(
        std::stop_token(), [&] { started = true; }, [&] { stopped = true; });
  });
  while (!started) std::this_thread::yield();
  EXPECT_EQ(metrics.Value(kLeaderGauge, {{"name", "paratune-operator"}}), 1);
  // The API server is down: renewals (PUTs) and the reads after them fail.
  client.InjectError("get", "leases", Status::Unavailable("apiserver down"), 1000);
  client.InjectError("update", "leases", Status::Unavailable("apiserver down"), 1000);
  for (int i = 0; i < 8 && !stopped; ++i) {
    clock.Advance(2s);
    std::this_thread::sleep_for(10ms);
  }
  t.join();
  EXPECT_TRUE(stopped);
  EXPECT_FALSE(a.IsLeader());
  EXPECT_EQ(metrics.Value(kLeaderGauge, {{"name", "paratune-operator"}}), 0);
}

}  // namespace
}  // namespace paratune::kube
