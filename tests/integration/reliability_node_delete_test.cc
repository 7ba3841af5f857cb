// Reliability on the local control plane (issue 8): the node a running trial is on is removed
// (its Node object deleted, as when a cloud VM is reclaimed). The test registers its own node
// (labelled for this campaign's spec.hardware.nodeSelector) and plays its kubelet: it marks the
// trial's pod Running, then the node vanishes and its kubelet with it. The control plane's pod
// garbage collector deletes the orphaned pod (kube-controller-manager's podgc, after its 40 s
// quarantine), the Job controller makes a replacement pod (a deleted pod is not a failed one),
// which lands on a healthy node labelled meanwhile; the trial finishes there and the campaign
// goes on. A trial whose node dies must never stay Running forever.
#include <gtest/gtest.h>

#include <chrono>

#include "base/time_source.h"
#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kPoolLabel[] = "reliability.paratune.dev/pool";
constexpr char kHealthyNode[] = "paratune-gpu-3";

Json FakeNode(const std::string& name, const std::string& pool) {
  Json resources = {{"cpu", "96"}, {"memory", "1Ti"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels",
         {{"kubernetes.io/hostname", name},
          {"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"},
          {kPoolLabel, pool}}}}},
      {"spec", Json::object()},
      {"status",
       {{"capacity", resources},
        {"allocatable", resources},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}}}}}};
}

// The trial's pod (label tuning.paratune.dev/trial) bound to `node`, or null.
Json PodOn(KubeClient* c, const std::string& ns, const std::string& node) {
  ListOptions o;
  o.field_selector = "spec.nodeName=" + node;
  auto l = c->List(resources::kPods, ns, o);
  return l.ok() && !l->items.empty() ? l->items.front() : Json();
}

// Leaves the cluster as it was even when an assertion fails.
struct NodeCleanup {
  KubeClient* c;
  std::string fake;
  ~NodeCleanup() {
    (void)c->Delete(resources::kNodes, "", fake);
    (void)c->Patch(resources::kNodes, "", kHealthyNode, PatchType::kMerge,
                   Json{{"metadata", {{"labels", {{kPoolLabel, nullptr}}}}}});
  }
};

TEST(ReliabilityTest, TrialOnARemovedNodeIsRescheduledAndTheCampaignGoesOn) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  if (!admin->Get(resources::kNodes, "", kHealthyNode).ok()) {
    GTEST_FAIL() << "no simulated node " << kHealthyNode << " (paratune-kubelet-sim not running)";
  }
  const std::string ns = cluster->NewNamespace("rel-node");
  const std::string fake = "rel-doomed-" + std::to_string(getpid());
  NodeCleanup cleanup{admin, fake};
  auto node = admin->Create(resources::kNodes, "", FakeNode(fake, ns));
  ASSERT_TRUE(node.ok()) << StatusText(node.status());
  constexpr int kTrials = 2;
  Json campaign = SimCampaign("node", kTrials, 1);
  campaign["spec"]["hardware"]["nodeSelector"] = {{kPoolLabel, ns}};
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, campaign).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());

  // Play the doomed node's kubelet: the trial's pod starts running there.
  Json pod;
  ASSERT_TRUE(WaitFor([&] { return !(pod = PodOn(admin, ns, fake)).is_null(); }, seconds(90)))
      << Describe(admin, ns, "node");
  const std::string trial = pod["metadata"]["labels"].value("tuning.paratune.dev/trial", "");
  const std::string now = FormatRfc3339(std::chrono::system_clock::now());
  Json running = {{"status",
                   {{"phase", "Running"},
                    {"startTime", now},
                    {"containerStatuses",
                     {{{"name", "trainer"},
                       {"ready", true},
                       {"restartCount", 0},
                       {"image", "paratune/paratune:latest"},
                       {"imageID", ""},
                       {"state", {{"running", {{"startedAt", now}}}}}}}}}}};
  ASSERT_TRUE(
      admin->Patch(resources::kPods, ns, NameOf(pod), PatchType::kMerge, running, {}, "status")
          .ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto tr = admin->Get(resources::kTrialRuns, ns, trial);
        // A TrialRun has no status for its first seconds (first_status_wait).
        return tr.ok() && tr->value("status", Json::object()).value("phase", "") == "Running";
      },
      seconds(60)))
      << Describe(admin, ns, "node");

  // The node goes away; a healthy node joins the campaign's pool.
  ASSERT_TRUE(admin
                  ->Patch(resources::kNodes, "", kHealthyNode, PatchType::kMerge,
                          Json{{"metadata", {{"labels", {{kPoolLabel, ns}}}}}})
                  .ok());
  ASSERT_TRUE(admin->Delete(resources::kNodes, "", fake).ok());
  const auto removed = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return !admin->Get(resources::kPods, ns, NameOf(pod)).ok(); },
                      seconds(150), seconds(1)))
      << "the pod of the removed node was never garbage collected";
  const double gc_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - removed).count();
  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "node"); }, seconds(180), seconds(1)))
      << Describe(admin, ns, "node") << "\noperator log: " << op.log_path();
  const double done_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - removed).count();
  std::printf("orphaned pod collected %.1f s after the node was removed; campaign done at %.1f s\n",
              gc_s, done_s);
  EXPECT_EQ(PhaseOf(admin, ns, "node"), "Succeeded") << Describe(admin, ns, "node");
  EXPECT_EQ(AuditCampaign(admin, ns, "node", kTrials), "");
  auto tr = admin->Get(resources::kTrialRuns, ns, trial);
  ASSERT_TRUE(tr.ok());
  const Json& st = (*tr)["status"];
  const std::string phase = st.value("phase", "");
  if (phase == "Succeeded") {
    // Re-run by the Job on the healthy node.
    EXPECT_EQ(st.value("nodeNames", Json::array()), Json::array({kHealthyNode})) << st.dump();
  } else {
    // Or failed with a node-level diagnosis worth retrying.
    EXPECT_EQ(phase, "Failed") << st.dump();
    EXPECT_TRUE(st["failure"].value("retryable", false)) << st.dump();
  }
  EXPECT_TRUE(op.Alive());
  (void)admin->Delete(resources::kNamespaces, "", ns);
}

}  // namespace
}  // namespace paratune::kube::testing
