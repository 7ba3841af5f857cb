// Simulated node faults through pods (issue 9): the environment paratune-kubelet-sim gives the
// processes it runs (node_env.h), and, against the real control plane, trial-sim pods on a sick
// node reporting the slowdown or the node-level failure.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "agents/core/results.h"
#include "hack/kubelet-sim/node_env.h"
#include "tests/integration/cluster_fixture.h"

namespace paratune::kube {
namespace {

using namespace std::chrono_literals;

template <typename F>
bool Eventually(F f, std::chrono::milliseconds timeout = 60000ms) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return f();
}

Json JobPod(const std::string& ns, const std::string& name, const std::string& job,
            const std::string& node, const std::string& phase) {
  Json p{{"metadata", {{"name", name}, {"namespace", ns}, {"labels", Json::object()}}},
         {"spec", Json::object()},
         {"status", {{"phase", phase}}}};
  if (!job.empty()) {
    p["metadata"]["labels"]["job-name"] = job;
    p["metadata"]["ownerReferences"] = Json::array(
        {{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", job}, {"uid", ns + "-" + job}}});
  }
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

TEST(KubeletFaultsTest, EnvNamesTheNodeTheJobsNodesAndTheFaults) {
  const Json me = JobPod("a", "t1-x", "t1", "paratune-gpu-2", "Pending");
  std::vector<ObjectPtr> pods = {
      std::make_shared<const Json>(me),
      std::make_shared<const Json>(JobPod("a", "t1-y", "t1", "paratune-gpu-0", "Running")),
      std::make_shared<const Json>(JobPod("a", "t1-z", "t1", "", "Pending")),  // not placed
      std::make_shared<const Json>(JobPod("a", "t1-old", "t1", "paratune-gpu-3", "Failed")),
      std::make_shared<const Json>(JobPod("a", "t2-x", "t2", "paratune-gpu-1", "Running")),
      std::make_shared<const Json>(JobPod("b", "t1-w", "t1", "paratune-gpu-1", "Running")),
  };
  Json deleting = JobPod("a", "t1-d", "t1", "paratune-gpu-3", "Running");
  deleting["metadata"]["deletionTimestamp"] = "2026-11-21T08:00:00Z";
  pods.push_back(std::make_shared<const Json>(deleting));
  const std::vector<std::string> nodes = kubelet::JobNodes(me, pods);
  EXPECT_EQ(nodes, (std::vector<std::string>{"paratune-gpu-0", "paratune-gpu-2"}));
  auto env = kubelet::SimNodeEnv("paratune-gpu-2=throttle:0.5", me, nodes);
  EXPECT_EQ(env["PARATUNE_NODE_NAME"], "paratune-gpu-2");
  EXPECT_EQ(env["PARATUNE_SIM_JOB_NODES"], "paratune-gpu-0,paratune-gpu-2");
  EXPECT_EQ(env["PARATUNE_SIM_NODE_FAULTS"], "paratune-gpu-2=throttle:0.5");
  // A pod of no Job runs on its own node only; without faults the pod's own setting stands.
  const Json alone = JobPod("a", "solo", "", "paratune-gpu-1", "Pending");
  EXPECT_EQ(kubelet::JobNodes(alone, pods), std::vector<std::string>{"paratune-gpu-1"});
  EXPECT_EQ(kubelet::SimNodeEnv("", alone, {"paratune-gpu-1"}).count("PARATUNE_SIM_NODE_FAULTS"),
            0u);
  // The pods handed to JobNodes are the informer's ByOwner of the pod's Job.
  EXPECT_EQ(kubelet::JobUidOf(me), "a-t1");
  EXPECT_EQ(kubelet::JobUidOf(alone), "");
}

// A pod on `node` running trial-sim on the sample campaign. The kubelet stand-in tells it its
// node; the faults come from the pod's env (a stand-in started without --node-faults leaves
// them to the pod).
Json TrialPod(const std::string& name, const std::string& node, const std::string& faults) {
  const std::string campaign =
      std::string(PARATUNE_SOURCE_DIR) + "/manifests/samples/llama3-8b-h100x8.yaml";
  Json env = Json::array({{{"name", "PARATUNE_SIM_NODE_FAULTS"}, {"value", faults}}});
  return Json{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"nodeName", node},
        {"containers",
         Json::array(
             {{{"name", "main"},
               {"image", "paratune:dev"},
               {"command", Json::array({"paratune", "trial-sim", "--fast", "--termination-message",
                                        "-f", campaign, "--seed", "7", "--fault-rate", "0"})},
               {"env", env},
               {"terminationMessagePolicy", "FallbackToLogsOnError"}}})}}}};
}

TEST(KubeletFaultsTest, TrialSimPodsOnASickNodeShowIt) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  if (!Eventually([&] { return c->Get(resources::kNodes, "", "paratune-gpu-1").ok(); }, 5000ms)) {
    GTEST_FAIL() << "node paratune-gpu-1 never appeared: is paratune-kubelet-sim running (built in "
                 << PARATUNE_BINARY_DIR << ")?";
  }
  const std::string ns = cluster->NewNamespace("node-faults");
  const std::string faults = "paratune-gpu-2=throttle:0.5;paratune-gpu-3=flaky:1";
  for (const auto& [name, node] :
       std::vector<std::pair<std::string, std::string>>{{"healthy", "paratune-gpu-1"},
                                                        {"throttled", "paratune-gpu-2"},
                                                        {"flaky", "paratune-gpu-3"}}) {
    ASSERT_TRUE(Eventually(
        [&] { return c->Create(resources::kPods, ns, TrialPod(name, node, faults)).ok(); }));
  }
  auto terminated = [&](const std::string& name) -> Json {
    auto p = c->Get(resources::kPods, ns, name);
    if (!p.ok()) return Json();
    const Json statuses =
        (*p).value("status", Json::object()).value("containerStatuses", Json::array());
    if (statuses.empty() || !statuses[0]["state"].contains("terminated")) return Json();
    return statuses[0]["state"]["terminated"];
  };
  Json healthy, throttled, flaky;
  ASSERT_TRUE(Eventually(
      [&] {
        healthy = terminated("healthy");
        throttled = terminated("throttled");
        flaky = terminated("flaky");
        return !healthy.is_null() && !throttled.is_null() && !flaky.is_null();
      },
      120000ms));
  ASSERT_EQ(healthy["exitCode"], 0) << healthy.dump();
  ASSERT_EQ(throttled["exitCode"], 0) << throttled.dump();
  auto mfu = [](const Json& t) {
    auto j = Json::parse(t.value("message", "{}"), nullptr, false);
    auto m = TrialMetrics::FromJson(j.value("metrics", Json::object()));
    return m.ok() ? m->mfu : 0.0;
  };
  EXPECT_GT(mfu(healthy), 0.3);
  // Half the clock on one GPU: the whole job computes at its pace.
  EXPECT_LT(mfu(throttled), 0.75 * mfu(healthy)) << throttled.dump();
  EXPECT_EQ(flaky["exitCode"], 1);
  const std::string tail = flaky.value("message", "");
  EXPECT_TRUE(tail.find("GPU has fallen off the bus") != std::string::npos ||
              tail.find("Watchdog caught collective operation timeout") != std::string::npos)
      << tail;
}

}  // namespace
}  // namespace paratune::kube
