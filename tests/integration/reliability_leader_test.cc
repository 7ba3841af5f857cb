// Reliability on the local control plane (issue 8): two operator replicas with --leader-elect, as
// the Deployment runs them. Only the leader reconciles (the standby's metrics count no
// reconcile and its log names no campaign); when the leader is SIGKILLed (no graceful release)
// the standby takes the Lease within its duration (15 s) plus a retry period and finishes the
// campaign without duplicating anything.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kLeaseNs[] = "paratune-system";
constexpr char kLease[] = "paratune-operator-leader";

bool Leads(const OperatorProcess& op) { return op.Metric("leader_election_master_status") >= 1; }
double Reconciles(const OperatorProcess& op) {
  return op.Metric("controller_runtime_reconcile_total");
}

TEST(ReliabilityTest, StandbyTakesOverFromAKilledLeader) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  (void)admin->Delete(resources::kLeases, kLeaseNs, kLease);  // no holder from an earlier run
  const std::string ns = cluster->NewNamespace("rel-leader");
  const std::vector<std::string> flags = {"--namespace", ns, "--leader-elect"};
  OperatorProcess a(cluster, flags, cluster->dir() + "/" + ns + "-operator-a.log");
  OperatorProcess b(cluster, flags, cluster->dir() + "/" + ns + "-operator-b.log");
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(WaitFor([&] { return Leads(a); }, seconds(60))) << a.Log();
  ASSERT_TRUE(b.Start());
  ASSERT_TRUE(WaitFor([&] { return b.Http("/readyz").rfind("ok", 0) == 0; }, seconds(60)))
      << "the standby's caches never synced: " << b.Log();

  constexpr int kTrials = 4;
  ASSERT_TRUE(
      admin->Create(resources::kTuningCampaigns, ns, SimCampaign("leader", kTrials, 2)).ok());
  ASSERT_TRUE(WaitFor([&] { return !JobsOf(admin, ns, "leader").empty(); }, seconds(90)))
      << Describe(admin, ns, "leader");
  // The standby watches (ready) but does not reconcile.
  EXPECT_FALSE(Leads(b));
  EXPECT_EQ(Reconciles(b), 0) << "the standby reconciled while the leader held the Lease";
  EXPECT_GT(Reconciles(a), 0);
  EXPECT_EQ(b.Log().find("campaign " + ns + "/leader"), std::string::npos) << b.Log();

  a.Stop(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return Leads(b); }, seconds(60), milliseconds(200)))
      << "the standby never took over: " << b.Log();
  const double takeover_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::printf("standby took over %.1f s after the leader was killed (lease 15 s)\n", takeover_s);
  // Lease duration 15 s + retry period 2 s, with slack for a loaded 2-core machine.
  EXPECT_LT(takeover_s, 30.0);
  auto lease = admin->Get(resources::kLeases, kLeaseNs, kLease);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", "").find(std::to_string(b.pid())) !=
                std::string::npos,
            true)
      << lease->dump();

  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "leader"); }, seconds(180), seconds(1)))
      << Describe(admin, ns, "leader") << "\nstandby log: " << b.log_path();
  EXPECT_EQ(PhaseOf(admin, ns, "leader"), "Succeeded") << Describe(admin, ns, "leader");
  EXPECT_EQ(AuditCampaign(admin, ns, "leader", kTrials), "");
  EXPECT_GT(Reconciles(b), 0);
  // A graceful stop gives the Lease up at once (the next replica need not wait 15 s).
  b.Stop(SIGTERM);
  lease = admin->Get(resources::kLeases, kLeaseNs, kLease);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "") << lease->dump();
  (void)admin->Delete(resources::kNamespaces, "", ns);
}

}  // namespace
}  // namespace paratune::kube::testing
