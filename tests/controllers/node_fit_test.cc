// Whether any node could ever run a trial's pod (controllers/node_fit.h), and what the trial
// reconciler does with it: a pod no node could ever run fails its trial at once, not retryable,
// naming the nodes' sizes; a pod left Pending for capacity on nodes that could run it is
// retryable even when the scheduler's message also names nodes it does not match.
#include "controllers/node_fit.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/time_source.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
using testing::KnowledgeAnalyzer;
namespace res = kube::resources;

// A node as the API server serves it (GKE's labels, the device plugin's allocatable).
Json Node(const std::string& name, int gpus, Json taints = Json::array(),
          const std::string& memory = "1000Gi") {
  Json labels = {{"kubernetes.io/hostname", name}, {"kubernetes.io/os", "linux"}};
  Json allocatable = {{"cpu", "95500m"}, {"memory", memory}, {"pods", "110"}};
  if (gpus > 0) {
    labels["cloud.google.com/gke-accelerator"] = "nvidia-h100-80gb";
    allocatable["nvidia.com/gpu"] = std::to_string(gpus);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"taints", taints}}},
          {"status", {{"allocatable", allocatable}, {"capacity", allocatable}}}};
}

std::vector<NodeFacts> Facts(const std::vector<Json>& nodes) {
  std::vector<NodeFacts> out;
  for (const auto& n : nodes) out.push_back(FactsOf(n));
  return out;
}

// A trial pod as the job renderer makes it for 8 GPUs per node.
Json GpuPod(const std::string& gpus = "8") {
  return {{"metadata", {{"name", "t001-abcde"}}},
          {"spec",
           {{"nodeSelector", {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"}}},
            {"tolerations",
             {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
            {"containers",
             {{{"name", "trainer"},
               {"resources",
                {{"limits", {{"nvidia.com/gpu", gpus}}},
                 {"requests", {{"nvidia.com/gpu", gpus}, {"memory", "64Gi"}}}}}}}}}}};
}

TEST(NodeFitTest, QuantitiesAreReadAsKubernetesWritesThem) {
  EXPECT_EQ(ParseQuantity("8"), 8.0);
  EXPECT_EQ(ParseQuantity("500m"), 0.5);
  EXPECT_EQ(ParseQuantity("16Gi"), 16.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(ParseQuantity("64G"), 64e9);
  EXPECT_EQ(ParseQuantity("1.5e3"), 1500.0);
  EXPECT_EQ(ParseQuantity("2E"), 2e18);  // exa, not an exponent
  EXPECT_EQ(ParseQuantity("1e-3"), 1e-3);
  for (const char* bad : {"", "Gi", "8 Gi", "8Gb", "1e", "e3", "1e3x", "--1"}) {
    EXPECT_FALSE(ParseQuantity(bad).has_value()) << bad;
  }
}

TEST(NodeFitTest, APodAskingMoreDevicesThanAnyNodeHasFitsNowhere) {
  const auto nodes = Facts({Node("gpu-0", 4), Node("gpu-1", 4), Node("cpu-0", 0)});
  const PodFit fit = JudgePodFit(GpuPod("8"), nodes);
  EXPECT_EQ(fit.nodes, 3);
  EXPECT_EQ(fit.could_run, 0);
  EXPECT_EQ(fit.message,
            "no node of the cluster could ever run pod t001-abcde: of 3 nodes, 2 offer at most 4 "
            "nvidia.com/gpu (the pod requests 8), 1 lack label "
            "cloud.google.com/gke-accelerator=nvidia-h100-80gb");
  EXPECT_EQ(JudgePodFit(GpuPod("4"), nodes).could_run, 2);
}

TEST(NodeFitTest, TaintsAffinityAndMemoryDecideAndWhatPassesDoesNot) {
  const Json spot = Json::array(
      {{{"key", "cloud.google.com/gke-spot"}, {"value", "true"}, {"effect", "NoSchedule"}}});
  PodFit fit = JudgePodFit(GpuPod(), Facts({Node("gpu-0", 8, spot)}));
  EXPECT_EQ(fit.could_run, 0);
  EXPECT_NE(fit.message.find("1 have taint cloud.google.com/gke-spot=true:NoSchedule the pod "
                             "does not tolerate"),
            std::string::npos)
      << fit.message;
  Json tolerant = GpuPod();
  tolerant["spec"]["tolerations"].push_back(
      {{"key", "cloud.google.com/gke-spot"}, {"operator", "Exists"}});
  EXPECT_EQ(JudgePodFit(tolerant, Facts({Node("gpu-0", 8, spot)})).could_run, 1);

  // Condition taints, a cordon and the trial's own avoidance of a node come and go.
  Json cordoned =
      Node("gpu-1", 8,
           Json::array({{{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}},
                        {{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoExecute"}}}));
  cordoned["spec"]["unschedulable"] = true;
  Json avoiding = GpuPod();
  avoiding["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
          ["nodeSelectorTerms"] = Json::array({{{"matchExpressions",
                                                 {{{"key", "kubernetes.io/hostname"},
                                                   {"operator", "NotIn"},
                                                   {"values", {"gpu-1"}}}}}}});
  EXPECT_EQ(JudgePodFit(avoiding, Facts({cordoned})).could_run, 1);

  // A required affinity no node matches, and more memory than any node has.
  Json zonal = GpuPod();
  zonal["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
       ["nodeSelectorTerms"] = Json::array({{{"matchExpressions",
                                              {{{"key", "topology.kubernetes.io/zone"},
                                                {"operator", "In"},
                                                {"values", {"us-east5-a"}}}}}}});
  fit = JudgePodFit(zonal, Facts({Node("gpu-0", 8)}));
  EXPECT_NE(fit.message.find("1 do not match the pod's required node affinity"), std::string::npos)
      << fit.message;
  Json hungry = GpuPod();
  hungry["spec"]["initContainers"] = {
      {{"name", "fetch"}, {"resources", {{"requests", {{"memory", "1500Gi"}}}}}}};
  fit = JudgePodFit(hungry, Facts({Node("gpu-0", 8)}));
  EXPECT_NE(fit.message.find("1 offer at most 1000Gi memory (the pod requests 1500Gi)"),
            std::string::npos)
      << fit.message;
}

// The pod spec comes from a namespace user's trial template: shapes the API server would
// refuse, and values at the limits, give a verdict, never an exception.
TEST(NodeFitTest, HostileShapesGiveAVerdictNotAnException) {
  const auto nodes = Facts({Node("gpu-0", 8), Json::array(), Json{{"metadata", 3}}});
  for (
      const char* text :
      {R"({})", R"({"spec": []})", R"({"spec": {"nodeSelector": {"a": 1}, "containers": 5}})",
       R"({"spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "9e999999"}}}]}})",
       R"({"spec": {"containers": [{"resources": {"limits": {"memory": "1e308Ei"}}}, 7]}})",
       R"({"spec": {"tolerations": [{"key": 1}], "affinity": {"nodeAffinity": {
             "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{},
             {"matchExpressions": [{"key": "x", "operator": "Gt", "values": ["99999999999999999999"]}]}]}}}}})",
       R"({"spec": {"containers": [{"resources": {"requests": {"cpu": -4}}}]}})"}) {
    SCOPED_TRACE(text);
    const Json pod = Json::parse(text);
    const PodFit fit = JudgePodFit(pod, nodes);
    EXPECT_EQ(fit.nodes, 3);
  }
}

// Listed once per max_age for every trial; a namespace-scoped install that may not list Nodes
// gets no verdict (and is not asked again until max_age has passed).
TEST(NodeFitTest, NodesAreListedOncePerMaxAgeAndForbiddenMeansNoVerdict) {
  kube::FakeKubeClient client;
  ASSERT_TRUE(client.Create(res::kNodes, "", Node("gpu-0", 8)).ok());
  FakeTimeSource time;
  ClusterNodes nodes(&client, &time, Millis(30000));
  auto first = nodes.Get();
  ASSERT_TRUE(first.ok());
  ASSERT_NE(*first, nullptr);
  EXPECT_EQ((*first)->size(), 1u);
  ASSERT_TRUE(client.Create(res::kNodes, "", Node("gpu-1", 8)).ok());
  EXPECT_EQ((*nodes.Get())->size(), 1u);  // the same list within max_age
  time.Advance(Millis(30000));
  EXPECT_EQ((*nodes.Get())->size(), 2u);

  ClusterNodes forbidden(&client, &time, Millis(30000));
  client.InjectError("list", "nodes", Status(StatusCode::kPermissionDenied, "nodes is forbidden"),
                     1);
  auto none = forbidden.Get();
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, nullptr);
}

constexpr const char* kTrial = "hw-t001";

// The hand-made trial's Job, and its pod (the Job's template) Pending as the scheduler leaves it:
// Unschedulable for `for_seconds` with `message`.
void LaunchStuckTrial(FakeCluster& c, TimeSource* time, int for_seconds,
                      const std::string& message) {
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", testing::TestCampaign("hw", 3)).ok());
  ASSERT_TRUE(c.client.Create(res::kTrialRuns, "ns", testing::HandMadeTrialRun(kTrial, "hw")).ok());
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const Json job = c.Get(res::kJobs, kTrial);
  ASSERT_FALSE(job.is_null());
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", std::string(kTrial) + "-abcde"},
                {"namespace", "ns"},
                {"labels", job["spec"]["template"]["metadata"]["labels"]}}},
              {"spec", job["spec"]["template"]["spec"]}};
  auto created = c.client.Create(res::kPods, "ns", pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Json p = *created;
  p["status"] = {{"phase", "Pending"},
                 {"conditions",
                  {{{"type", "PodScheduled"},
                    {"status", "False"},
                    {"reason", "Unschedulable"},
                    {"message", message},
                    {"lastTransitionTime",
                     FormatRfc3339(time->SystemNow() - std::chrono::seconds(for_seconds))}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kPods, p).ok());
}

Json TrialStatus(FakeCluster& c) {
  const Json trial = c.Get(res::kTrialRuns, kTrial);
  return trial.is_object() ? trial.value("status", Json::object()) : Json::object();
}

TEST(NodeFitReconcilerTest, ATrialNoNodeCouldEverRunFailsWithoutWaitingAndIsNotRetried) {
  FakeCluster c(false, RealTimeSource::Get(), KnowledgeAnalyzer());
  for (const char* n : {"gpu-0", "gpu-1"}) {
    ASSERT_TRUE(c.client.Create(res::kNodes, "", Node(n, 4)).ok());
  }
  const std::string scheduler = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.";
  LaunchStuckTrial(c, RealTimeSource::Get(), 20, scheduler);
  auto r = c.trial_reconciler->Reconcile({"ns", kTrial});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(TrialStatus(c).value("phase", ""), "Failed") << "judged only after infeasible_after";
  // Looked at again by then (or sooner, for the Job's first status), not at 180 s.
  EXPECT_GT(r->requeue_after, Millis(0));
  EXPECT_LE(r->requeue_after, Millis(41000));

  // 70 s Unschedulable: no node has 8 GPUs, nothing scales up for it.
  ASSERT_TRUE(c.client.Delete(res::kPods, "ns", std::string(kTrial) + "-abcde").ok());
  ASSERT_TRUE(c.client.Delete(res::kJobs, "ns", kTrial).ok());
  ASSERT_TRUE(c.client.Delete(res::kTrialRuns, "ns", kTrial).ok());
  ASSERT_TRUE(c.client.Delete(res::kTuningCampaigns, "ns", "hw").ok());
  LaunchStuckTrial(c, RealTimeSource::Get(), 70, scheduler);
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const Json st = TrialStatus(c);
  ASSERT_EQ(st.value("phase", ""), "Failed") << st.dump(2);
  const Json& failure = st["failure"];
  EXPECT_EQ(failure.value("category", ""), "Unschedulable") << failure.dump(2);
  EXPECT_FALSE(failure.value("retryable", true)) << failure.dump(2);
  EXPECT_EQ(failure.value("signature", ""), "cluster-nodes");
  EXPECT_NE(failure.value("summary", "")
                .find("of 2 nodes, 2 offer at most 4 nvidia.com/gpu (the pod requests 8)"),
            std::string::npos)
      << failure.dump(2);
  EXPECT_FALSE(c.client.Get(res::kJobs, "ns", kTrial).ok()) << "the Job must be deleted";
}

// A Node list that fails (a timeout, a 500) gives no verdict: the trial goes on as it would
// without the right to list, and the reconcile does not fail over it.
TEST(NodeFitReconcilerTest, ANodeListThatFailsHoldsNothingUp) {
  FakeCluster c(false, RealTimeSource::Get(), KnowledgeAnalyzer());
  ASSERT_TRUE(c.client.Create(res::kNodes, "", Node("gpu-0", 4)).ok());
  LaunchStuckTrial(c, RealTimeSource::Get(), 70,
                   "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  c.client.InjectError("list", "nodes", Status::Unavailable("etcd leader changed"), 1);
  auto r = c.trial_reconciler->Reconcile({"ns", kTrial});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(TrialStatus(c).value("phase", ""), "Failed") << TrialStatus(c).dump(2);
  // Listed again next time: then judged.
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  EXPECT_EQ(TrialStatus(c).value("phase", ""), "Failed") << TrialStatus(c).dump(2);
}

TEST(NodeFitReconcilerTest, AScaleUpForThePodKeepsItWaiting) {
  FakeCluster c(false, RealTimeSource::Get(), KnowledgeAnalyzer());
  ASSERT_TRUE(c.client.Create(res::kNodes, "", Node("cpu-0", 0)).ok());  // GPU pool at zero
  LaunchStuckTrial(c, RealTimeSource::Get(), 70,
                   "0/1 nodes are available: 1 node(s) didn't match Pod's node "
                   "affinity/selector.");
  Json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", "scaleup"}, {"namespace", "ns"}}},
                {"involvedObject", {{"kind", "Pod"}, {"name", std::string(kTrial) + "-abcde"}}},
                {"reason", "TriggeredScaleUp"},
                {"message", "pod triggered scale-up: [{gpu-h100 0->1 (max: 4)}]"}};
  ASSERT_TRUE(c.client.Create(res::kEvents, "ns", event).ok());
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  EXPECT_NE(TrialStatus(c).value("phase", ""), "Failed") << TrialStatus(c).dump(2);
  EXPECT_TRUE(c.client.Get(res::kJobs, "ns", kTrial).ok());
}

// 32 GPU nodes busy and a CPU node the pod does not match: the scheduler's message names both;
// the wording alone reads "didn't match" as a placement no one fixes (not retryable). The
// nodes say capacity will free up: retryable.
TEST(NodeFitReconcilerTest, CapacityInUseOnNodesThatFitIsRetryableWhateverElseTheMessageSays) {
  const std::string scheduler =
      "0/3 nodes are available: 2 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node "
      "affinity/selector.";
  for (bool with_nodes : {false, true}) {
    SCOPED_TRACE(with_nodes ? "nodes listed" : "no nodes to judge");
    FakeCluster c(false, RealTimeSource::Get(), KnowledgeAnalyzer());
    if (with_nodes) {
      for (const char* n : {"gpu-0", "gpu-1"}) {
        ASSERT_TRUE(c.client.Create(res::kNodes, "", Node(n, 8)).ok());
      }
      ASSERT_TRUE(c.client.Create(res::kNodes, "", Node("cpu-0", 0)).ok());
    }
    LaunchStuckTrial(c, RealTimeSource::Get(), 200, scheduler);
    ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
    const Json st = TrialStatus(c);
    ASSERT_EQ(st.value("phase", ""), "Failed") << st.dump(2);  // unschedulable_after (180 s)
    const Json& failure = st["failure"];
    EXPECT_EQ(failure.value("category", ""), "Unschedulable");
    EXPECT_EQ(failure.value("retryable", false), with_nodes) << failure.dump(2);
    if (with_nodes) {
      EXPECT_NE(failure.value("summary", "").find("2 of 3 nodes could run the trial's pods"),
                std::string::npos)
          << failure.dump(2);
    }
  }
}

}  // namespace
}  // namespace paratune::controllers
