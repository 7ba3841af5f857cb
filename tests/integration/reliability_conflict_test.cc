// Reliability on the local control plane (issue 8): a user (or another tool) writes the campaign
// and its TrialRuns while the operator writes their status. Every such write moves the object's
// resourceVersion, so the operator's status updates from its cache meet 409 Conflict; it must
// retry (re-reading the object) until status converges, and nothing is lost or duplicated.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Annotates the campaign and each of its TrialRuns (GET + PUT, as kubectl annotate does with
// --resource-version, retried on its own conflicts) until stopped. Returns the writes done.
int Annotate(KubeClient* c, const std::string& ns, const std::atomic<bool>& stop) {
  int writes = 0;
  for (int i = 0; !stop.load(); ++i) {
    std::vector<std::pair<const GroupVersionResource*, Json>> objects;
    if (auto tc = c->Get(resources::kTuningCampaigns, ns, "conflict"); tc.ok()) {
      objects.emplace_back(&resources::kTuningCampaigns, *tc);
    }
    for (Json& tr : TrialRunsOf(c, ns, "conflict"))
      objects.emplace_back(&resources::kTrialRuns, tr);
    for (auto& [gvr, obj] : objects) {
      obj["kind"] = gvr->kind;  // list items carry no kind
      obj["apiVersion"] = gvr->ApiVersion();
      obj["metadata"]["annotations"]["reliability.paratune.dev/touch"] = std::to_string(i);
      writes += c->Update(*gvr, obj).ok() ? 1 : 0;
    }
    std::this_thread::sleep_for(milliseconds(30));
  }
  return writes;
}

TEST(ReliabilityTest, ConcurrentWritesAreRetriedAndStatusConverges) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("rel-conflict");
  constexpr int kTrials = 4;
  ASSERT_TRUE(
      admin->Create(resources::kTuningCampaigns, ns, SimCampaign("conflict", kTrials, 2)).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  std::atomic<bool> stop{false};
  int writes = 0;
  std::thread writer([&] { writes = Annotate(admin, ns, stop); });
  const bool finished =
      WaitFor([&] { return Finished(admin, ns, "conflict"); }, seconds(180), seconds(1));
  stop = true;
  writer.join();
  ASSERT_TRUE(finished) << Describe(admin, ns, "conflict") << "\noperator log: " << op.log_path();
  const double conflicts = op.Metric("rest_client_requests_total", {"code=\"409\""});
  // Status writes are merge patches of the /status subresource (no resourceVersion
  // precondition), so the concurrent annotations cannot make them conflict at all.
  const double status_patches =
      op.Metric("rest_client_requests_total",
                {"verb=\"PATCH\"", "tuningcampaigns.tuning.paratune.dev/status"});
  std::printf("%d concurrent writes; the operator met %.0f conflicts (409), %.0f status patches\n",
              writes, conflicts, status_patches);
  EXPECT_GT(writes, 20);
  EXPECT_GT(status_patches, 0) << "the campaign status was not written by patch";
  EXPECT_EQ(PhaseOf(admin, ns, "conflict"), "Succeeded") << Describe(admin, ns, "conflict");
  EXPECT_EQ(AuditCampaign(admin, ns, "conflict", kTrials), "");
  // Converged: every TrialRun reached a final phase and the campaign counts agree with them.
  auto tc = admin->Get(resources::kTuningCampaigns, ns, "conflict");
  ASSERT_TRUE(tc.ok());
  const Json& counts = (*tc)["status"]["trials"];
  // A trial the early-stopping rule ended (its log poll saw it could not beat the best; timing
  // decides whether one does) is final too, and counts among the successes with its partial
  // metrics.
  int succeeded = 0, failed = 0, early_stopped = 0;
  for (const Json& tr : TrialRunsOf(admin, ns, "conflict")) {
    std::string phase = tr.value("status", Json::object()).value("phase", "");
    EXPECT_TRUE(phase == "Succeeded" || phase == "EarlyStopped" || phase == "Failed")
        << NameOf(tr) << " " << phase;
    succeeded += phase == "Succeeded" || phase == "EarlyStopped";
    early_stopped += phase == "EarlyStopped";
    failed += phase == "Failed";
  }
  EXPECT_EQ(counts.value("succeeded", -1), succeeded) << counts.dump();
  EXPECT_EQ(counts.value("earlyStopped", -1), early_stopped) << counts.dump();
  EXPECT_EQ(counts.value("failed", -1), failed) << counts.dump();
  EXPECT_EQ(counts.value("running", -1), 0) << counts.dump();
  EXPECT_EQ((*tc)["status"].value("observedGeneration", int64_t{-1}),
            (*tc)["metadata"].value("generation", int64_t{-2}));
  // The annotations survived: the operator never overwrote what the user wrote.
  EXPECT_TRUE((*tc)["metadata"]["annotations"].contains("reliability.paratune.dev/touch"));
  (void)admin->Delete(resources::kNamespaces, "", ns);
}

}  // namespace
}  // namespace paratune::kube::testing
