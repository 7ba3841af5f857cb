// Cluster health end to end on a real control plane (contract section 10): the controllers run
// in-process with the operator ServiceAccount's credentials (so manifests/rbac.yaml is what they
// get), and this test plays the kubelet of two nodes of its own: it binds each trial pod to a
// node and finishes it with a termination message whose logged step times drift on the sick
// node. The campaign must find the sick node, list it as suspect, keep later trials off it,
// propose a cordon, and cordon the Node only once a cluster administrator approves: neither the
// campaign's annotations nor a namespace editor ("alice", `kubectl --as`) can.
#include "controllers/node_health/node_health.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "base/time_source.h"
#include "controllers/node_health/node_ledger_store.h"
#include "controllers/setup.h"
#include "operator/manager.h"
#include "operator/rest_client.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/reliability_harness.h"

namespace paratune::kube {
namespace {

using namespace std::chrono_literals;

const GroupVersionResource kBindings{"", "v1", "bindings", true, "Binding"};

Json Campaign(const std::string& ns) {
  return {
      {"apiVersion", "tuning.paratune.dev/v1alpha1"},
      {"kind", "TuningCampaign"},
      {"metadata", {{"name", "nh"}, {"namespace", ns}}},
      {"spec",
       {{"model", {{"preset", "llama3-8b"}}},
        {"training", {{"framework", "megatron-lm"}, {"seqLength", 8192}, {"globalBatchSize", 512}}},
        // No real node carries this label: only this test's "kubelet" runs the pods.
        {"hardware",
         {{"accelerator", "nvidia-h100-80gb"},
          {"nodes", 1},
          {"devicesPerNode", 8},
          {"nodeSelector", {{"paratune.dev/node-health-test", ns}}}}},
        {"searchSpace",
         {{"parameters",
           {{{"name", "tp"}, {"values", {1, 2, 4}}},
            {{"name", "mbs"}, {"values", {1, 2}}},
            {{"name", "recompute"}, {"values", {"selective", "full"}}}}}}},
        {"baseline", {{"tp", 1}, {"mbs", 1}, {"recompute", "full"}}},
        {"budget", {{"maxTrials", 5}, {"parallelTrials", 1}, {"maxFailedTrials", 3}}}}}};
}

std::string TerminationMessage(bool drift) {
  Json steps = Json::array({30.0});
  for (int i = 0; i < 12; ++i) steps.push_back(drift && i >= 6 ? 14.0 : 10.0);
  return Json{{"metrics", {{"mfu", 0.41}, {"tflopsPerDevice", 405.0}, {"stepTimeSeconds", 10.0}}},
              {"stepTimesSeconds", steps}}
      .dump();
}

// The kubelet stand-in of this test: binds unbound trial pods (iteration 2 and 3 to the sick
// node) and finishes them.
void PlayKubelet(KubeClient* admin, const std::string& ns, const std::string& healthy,
                 const std::string& sick) {
  auto pods = admin->List(resources::kPods, ns, {});
  if (!pods.ok()) return;
  for (const auto& pod : pods->items) {
    const Json& labels = pod["metadata"].value("labels", Json::object());
    const std::string trial = labels.value("tuning.paratune.dev/trial", "");
    if (trial.empty()) continue;
    const bool bad = trial == "nh-t002" || trial == "nh-t003";
    const std::string node = pod["spec"].value("nodeName", "");
    if (node.empty()) {
      Json binding = {
          {"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", {{"name", NameOf(pod)}, {"namespace", ns}}},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", bad ? sick : healthy}}}};
      (void)admin->Create(kBindings, ns, binding);
      continue;
    }
    if (pod["status"].value("phase", "") == "Succeeded") continue;
    Json done = pod;
    done["status"]["phase"] = "Succeeded";
    done["status"]["startTime"] = FormatRfc3339(RealTimeSource::Get()->SystemNow());
    const std::string container = pod["spec"]["containers"][0].value("name", "");
    done["status"]["containerStatuses"] =
        Json::array({{{"name", container},
                      {"image", pod["spec"]["containers"][0].value("image", "")},
                      {"imageID", ""},
                      {"ready", false},
                      {"restartCount", 0},
                      {"state",
                       {{"terminated",
                         {{"exitCode", 0},
                          {"reason", "Completed"},
                          {"message", TerminationMessage(node == sick)}}}}}}});
    (void)admin->UpdateStatus(resources::kPods, done);
  }
}

// Registered as a kubelet registers its Node: with a Ready condition. A Node without one trips
// kube-controller-manager 1.20's node lifecycle controller once its grace period has passed:
// doNoExecuteTaintingPass reads the Ready condition of the lister's copy, which can still lack
// the Unknown condition the controller has just written, and dereferences nil
// (node_lifecycle_controller.go:688 at v1.20.2); the controller-manager dies, and every later
// test's Jobs stay without pods.
Json Node(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status",
           {{"conditions",
             {{{"type", "Ready"},
               {"status", "True"},
               {"reason", "KubeletReady"},
               {"lastHeartbeatTime", FormatRfc3339(std::chrono::system_clock::now())}}}}}}};
}

TEST(NodeHealthIntegrationTest, SickNodeIsFoundAvoidedAndCordonedAfterApproval) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("nodehealth");
  const std::string healthy = ns + "-gpu-0", sick = ns + "-gpu-1";
  for (const auto& n : {healthy, sick})
    ASSERT_TRUE(admin->Create(resources::kNodes, "", Node(n)).ok());

  auto op = RestKubeClient::Create(cluster->OperatorConfig(), RealTimeSource::Get(), nullptr);
  ASSERT_TRUE(op.ok());
  ManagerOptions mo;
  mo.probe_address = "";
  mo.reflector.ns = ns;
  auto mgr = Manager::Create(mo, op->get(), RealTimeSource::Get(), nullptr);
  ASSERT_TRUE(mgr.ok());
  controllers::ControllerSetupOptions so;
  so.watch_namespace = ns;
  so.detect_jobset = false;
  so.diagnostics = "simulated";
  const std::string opns = cluster->NewNamespace("nodehealth-op");
  so.operator_namespace = opns;  // the ledger and approvals of this test only
  so.suspect_min_campaigns = 1;  // one campaign here; the weighting has its unit tests
  // Remediation is opt-in (chart nodeHealth.remediation.enabled): the flag, and the Node
  // `patch` the chart then grants in its own ClusterRole (manifests/rbac.yaml has none).
  so.node_remediation = true;
  (void)cluster->Kubectl(
      "create clusterrole paratune-operator-node-remediation --verb=patch "
      "--resource=nodes");
  (void)cluster->Kubectl(
      "create clusterrolebinding paratune-operator-node-remediation "
      "--clusterrole=paratune-operator-node-remediation "
      "--serviceaccount=paratune-system:paratune-operator");
  auto set = controllers::SetupControllers(mgr->get(), so);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  std::stop_source stop;
  std::thread run([&] { (void)(*mgr)->Run(stop.get_token()); });

  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, Campaign(ns)).ok());
  auto campaign_status = [&] {
    auto tc = admin->Get(resources::kTuningCampaigns, ns, "nh");
    return tc.ok() ? tc->value("status", Json::object()) : Json::object();
  };
  auto remediation_state = [&](const std::string& id) {
    for (const auto& r : campaign_status().value("remediations", Json::array())) {
      if (r.value("id", "") == id) return r.value("state", "");
    }
    return std::string();
  };
  const std::string cordon = "cordon-" + sick;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        PlayKubelet(admin, ns, healthy, sick);
        return remediation_state(cordon) == "Proposed";
      },
      120s))
      << campaign_status().dump(2);
  Json st = campaign_status();
  ASSERT_FALSE(st["nodeHealth"]["suspectNodes"].empty()) << st.dump(2);
  EXPECT_EQ(st["nodeHealth"]["suspectNodes"][0]["name"], sick);
  EXPECT_GE(st["trials"].value("anomalous", 0), 1);
  // The ledger ConfigMap holds the suspicion for every campaign.
  auto cm = admin->Get(resources::kConfigMaps, opns, controllers::kNodeHealthConfigMap);
  ASSERT_TRUE(cm.ok());
  EXPECT_NE((*cm)["data"].value(controllers::kNodeHealthKey, "").find(sick), std::string::npos);
  // Trials launched after the suspicion keep off the sick node.
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        PlayKubelet(admin, ns, healthy, sick);
        auto job = admin->Get(resources::kJobs, ns, "nh-t004");
        return job.ok() && job->dump().find("\"NotIn\"") != std::string::npos &&
               job->dump().find(sick) != std::string::npos;
      },
      60s));
  // The campaign's annotations, even complete, never cordon a node.
  auto annotate = [&](const Json& annotations) {
    return admin->Patch(resources::kTuningCampaigns, ns, "nh", PatchType::kMerge,
                        {{"metadata", {{"annotations", annotations}}}});
  };
  ASSERT_TRUE(annotate({{controllers::kApproveAnnotation, cordon},
                        {controllers::kApprovedByAnnotation, "alice"}})
                  .ok());
  // A namespace editor may edit the campaign but not create the approval.
  ASSERT_EQ(cluster->Kubectl("-n " + ns +
                             " create role campaign-editor --verb=get,list,watch,create,update,"
                             "patch --resource=tuningcampaigns.tuning.paratune.dev"),
            0);
  ASSERT_EQ(cluster->Kubectl("-n " + ns +
                             " create rolebinding alice-edits --role=campaign-editor "
                             "--user=alice"),
            0);
  EXPECT_EQ(cluster->Kubectl("--as=alice -n " + ns + " annotate tc nh --overwrite " +
                             controllers::kApproveAnnotation + "=" + cordon),
            0);
  const std::string approval = controllers::ClusterApprovalName(cordon);
  EXPECT_NE(cluster->Kubectl("--as=alice -n " + opns + " create configmap " + approval +
                             " --from-literal=remediation=" + cordon),
            0);
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE((*admin->Get(resources::kNodes, "", sick))["spec"].value("unschedulable", false));
  EXPECT_EQ(remediation_state(cordon), "Proposed");
  // A cluster administrator approves: the Node is cordoned, with the operator's own credentials,
  // at the campaign's next reconcile (approvals are not watched: within the 60 s resync).
  ASSERT_EQ(
      cluster->Kubectl("-n " + opns + " create configmap " + approval +
                       " --from-literal=remediation=" + cordon + " --from-literal=approvedBy=root"),
      0);
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        auto node = admin->Get(resources::kNodes, "", sick);
        return node.ok() && (*node)["spec"].value("unschedulable", false);
      },
      90s));
  EXPECT_TRUE(testing::WaitFor([&] { return remediation_state(cordon) == "Applied"; }, 10s));
  EXPECT_FALSE((*admin->Get(resources::kNodes, "", healthy))["spec"].value("unschedulable", false));

  stop.request_stop();
  run.join();
  for (const auto& n : {healthy, sick}) (void)admin->Delete(resources::kNodes, "", n);
  // The next test of this cluster sees the default RBAC again (no Node patch).
  (void)cluster->Kubectl("delete clusterrolebinding paratune-operator-node-remediation");
  (void)cluster->Kubectl("delete clusterrole paratune-operator-node-remediation");
}

}  // namespace
}  // namespace paratune::kube
