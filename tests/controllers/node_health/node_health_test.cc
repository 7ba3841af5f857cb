// Cluster health in the controllers (contract section 10) against the fake API server: step-time
// anomalies set aside, the node ledger ConfigMap (written once per trial, 409 retried), suspect
// nodes avoided by later Jobs, diagnostic Jobs created once, and remediation only with approval.
#include "controllers/node_health/node_health.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/sim/node_checks.h"
#include "controllers/conditions.h"
#include "controllers/node_health/diagnostic_jobs.h"
#include "controllers/node_health/node_ledger_store.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
namespace res = kube::resources;

Json Campaign(const std::string& name, int max_trials) {
  return testing::TestCampaign(name, max_trials);
}

// What a finished trial's pod leaves: a termination message on a node.
struct TrialPlay {
  double mfu = 0.0;    // 0: the model's prediction for the trial (never anomalous by itself)
  bool drift = false;  // logged step times that climb 40% halfway through
  std::string node = "gpu-0";
};

std::string Message(const TrialPlay& r) {
  std::vector<double> steps = {30.0};  // warm-up
  for (int i = 0; i < 12; ++i) steps.push_back(r.drift && i >= 6 ? 14.0 : 10.0);
  return Json{{"metrics",
               {{"mfu", r.mfu},
                {"tflopsPerDevice", r.mfu * 989},
                {"stepTimeSeconds", 10.0},
                {"peakMemoryGiB", 50.0}}},
              {"stepTimesSeconds", steps}}
      .dump();
}

// Reconciles the campaign and its trials once; finishes every Job without a pod as `plan`
// says for that trial name.
void Step(FakeCluster& c, const std::string& campaign,
          const std::function<TrialPlay(const std::string&)>& plan) {
  c.ReconcileCampaignAndTrials(campaign);
  c.ForEachJobWithoutPod([&](const Json& tr) {
    std::string name = kube::NameOf(tr);
    TrialPlay run = plan(name);
    if (run.mfu == 0.0) {
      run.mfu = tr["spec"].value("prediction", Json::object()).value("mfu", 0.40);
    }
    c.FinishJob(name, 0, "Completed", Message(run), "", run.node);
  });
  c.ReconcileTrials();
  auto r = c.campaign_reconciler->Reconcile({"ns", campaign});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

std::string Phase(FakeCluster& c, const std::string& tr) {
  Json t = c.Get(res::kTrialRuns, tr);
  if (!t.is_object()) return "";
  return t.value("status", Json::object()).value("phase", "");
}

int EventsWithReason(FakeCluster& c, const std::string& reason) {
  int n = 0;
  for (const auto& e : c.List(res::kEvents)) n += e.value("reason", "") == reason ? 1 : 0;
  return n;
}

// True when some Event with that reason says `text`.
bool AnyEventSays(FakeCluster& c, const std::string& reason, const std::string& text) {
  for (const auto& e : c.List(res::kEvents)) {
    if (e.value("reason", "") == reason && e.value("message", "").find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// The remediation `id` of a campaign status (null when absent).
Json Remediation(const Json& status, const std::string& id) {
  for (const auto& r : status.value("remediations", Json::array())) {
    if (r.value("id", "") == id) return r;
  }
  return Json();
}

void Annotate(FakeCluster& c, const std::string& campaign, const Json& annotations) {
  Json tc = c.Get(res::kTuningCampaigns, campaign);
  for (const auto& [k, v] : annotations.items()) tc["metadata"]["annotations"][k] = v;
  ASSERT_TRUE(c.client.Update(res::kTuningCampaigns, tc).ok());
}

std::vector<std::string> AvoidedNodes(Json job) {
  std::vector<std::string> out;
  Json terms = job["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                  ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  if (!terms.is_array() || terms.empty()) return out;
  for (const auto& e : terms[0]["matchExpressions"]) {
    if (e.value("key", "") == "kubernetes.io/hostname" && e.value("operator", "") == "NotIn") {
      for (const auto& v : e["values"]) out.push_back(v);
    }
  }
  return out;
}

Json GetNode(FakeCluster& c, const std::string& name) {
  auto n = c.client.Get(res::kNodes, "", name);
  return n.ok() ? *n : Json::object();
}

Json Node(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
}

// Nodes gpu-0 and gpu-2 and campaign "llama", whose second and third trials drift on gpu-2 and
// make it suspect (anomalies weigh 2 each, threshold 3); the others run on gpu-0.
void RunLlamaUntilGpu2IsSuspect(FakeCluster& c) {
  for (const char* n : {"gpu-0", "gpu-2"})
    ASSERT_TRUE(c.client.Create(res::kNodes, "", Node(n)).ok());
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 6)).ok());
  auto plan = [](const std::string& tr) {
    if (tr == "llama-t002" || tr == "llama-t003") return TrialPlay{0.40, true, "gpu-2"};
    return TrialPlay{0.40, false, "gpu-0"};
  };
  for (int i = 0; i < 8 && Phase(c, "llama-t003") != "Succeeded"; ++i) Step(c, "llama", plan);
  Step(c, "llama", plan);
}

TEST(NodeLedgerStoreTest, WritesOnlyChangesAndRetriesConflicts) {
  kube::FakeKubeClient client;
  NodeLedgerStore store(&client, "paratune-system");
  health::TrialObservation obs{"ns/a", "a-t001", {"gpu-1"}, "NodeFault", 100, std::nullopt};
  auto first =
      store.Modify([&](health::NodeLedger* l) { l->RecordTrial(obs, "2026-11-21T08:00:00Z"); });
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto cm = client.Get(res::kConfigMaps, "paratune-system", kNodeHealthConfigMap);
  ASSERT_TRUE(cm.ok());
  ASSERT_TRUE((*cm)["data"].contains(kNodeHealthKey));
  const std::string rv = kube::ResourceVersionOf(*cm);
  // The same trial again: the ledger is idempotent, so nothing is written.
  ASSERT_TRUE(
      store.Modify([&](health::NodeLedger* l) { l->RecordTrial(obs, "2026-11-21T08:01:00Z"); })
          .ok());
  EXPECT_EQ(kube::ResourceVersionOf(
                *client.Get(res::kConfigMaps, "paratune-system", kNodeHealthConfigMap)),
            rv);
  // Another writer got there first once: re-read, re-applied, written.
  client.InjectError("update", "configmaps", Status::Conflict("the object has been modified"));
  health::TrialObservation second{"ns/b", "b-t001", {"gpu-1"}, "NodeFault", 100, std::nullopt};
  auto retried =
      store.Modify([&](health::NodeLedger* l) { l->RecordTrial(second, "2026-11-21T08:02:00Z"); });
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_TRUE(retried->IsSuspect("gpu-1"));
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->IsSuspect("gpu-1"));
  // Conflicts every time: the caller learns it (the reconcile is retried later).
  client.InjectError("update", "configmaps", Status::Conflict("modified"), 10);
  health::TrialObservation third{"ns/c", "c-t001", {"gpu-3"}, "", 100, std::nullopt};
  auto lost =
      store.Modify([&](health::NodeLedger* l) { l->RecordTrial(third, "2026-11-21T08:03:00Z"); });
  EXPECT_EQ(lost.status().code(), StatusCode::kConflict);
}

// Coalescing (issue 17): healthy credit waits for the next write or the interval; a change
// that makes a node suspect is written at once, with what waited; nothing deferred is lost.
TEST(NodeLedgerStoreTest, EvidenceThatMovesNoSuspectSharesAWrite) {
  kube::FakeKubeClient client;
  FakeTimeSource time;
  NodeLedgerStore store(&client, "paratune-system");
  store.set_coalescing(Millis(30000), &time);
  const auto healthy = [](const std::string& trial, const std::string& node) {
    return health::TrialObservation{"ns/a", trial, {node}, "", 100, std::nullopt};
  };
  const auto record = [&](health::TrialObservation obs) {
    return store.Modify(
        [obs](health::NodeLedger* l) { l->RecordTrial(obs, "2026-11-21T08:00:00Z"); });
  };
  const auto writes = [&] {
    auto cm = client.Get(res::kConfigMaps, "paratune-system", kNodeHealthConfigMap);
    return cm.ok() ? kube::ResourceVersionOf(*cm) : std::string();
  };
  const auto stored_evidence = [&](const std::string& node) {
    auto l = store.Load();
    const health::NodeRecord* r = l.ok() ? l->Find(node) : nullptr;
    return r == nullptr ? size_t{0} : r->evidence.size();
  };
  ASSERT_TRUE(record(healthy("a-t001", "gpu-1")).ok());  // the first change: written
  const std::string rv1 = writes();
  ASSERT_FALSE(rv1.empty());
  auto view = record(healthy("a-t002", "gpu-2"));  // healthy, 0 s later: waits
  ASSERT_TRUE(view.ok());
  ASSERT_NE(view->Find("gpu-2"), nullptr) << "the returned ledger holds the deferred evidence";
  EXPECT_EQ(writes(), rv1);
  EXPECT_EQ(stored_evidence("gpu-2"), 0u);
  // An anomaly makes gpu-3 suspect: written now, with gpu-2's credit that waited.
  health::TrialObservation slow = healthy("a-t003", "gpu-3");
  slow.anomaly = health::Anomaly{};
  auto suspect = record(slow);
  ASSERT_TRUE(suspect.ok()) << suspect.status().ToString();
  EXPECT_TRUE(suspect->IsSuspect("gpu-3"));
  const std::string rv2 = writes();
  EXPECT_NE(rv2, rv1);
  EXPECT_EQ(stored_evidence("gpu-2"), 1u);
  EXPECT_TRUE(store.Load()->IsSuspect("gpu-3"));
  // Healthy again within the interval: waits; after it, the next change writes both.
  ASSERT_TRUE(record(healthy("a-t004", "gpu-4")).ok());
  EXPECT_EQ(writes(), rv2);
  time.Advance(Millis(30001));
  ASSERT_TRUE(record(healthy("a-t005", "gpu-5")).ok());
  EXPECT_NE(writes(), rv2);
  EXPECT_EQ(stored_evidence("gpu-4"), 1u);
  EXPECT_EQ(stored_evidence("gpu-5"), 1u);
}

TEST(NodeLedgerStoreTest, CorruptLedgerIsAnErrorNamingTheConfigMap) {
  kube::FakeKubeClient client;
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", kNodeHealthConfigMap}, {"namespace", "paratune-system"}}},
             {"data", {{kNodeHealthKey, "{not json"}}}};
  ASSERT_TRUE(client.Create(res::kConfigMaps, "paratune-system", cm).ok());
  NodeLedgerStore store(&client, "paratune-system");
  auto loaded = store.Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("paratune-node-health"), std::string::npos);
}

TEST(NodeHealthTest, AnomalousTrialIsNotTheBestAndItsRetryNeedsApproval) {
  FakeCluster c;
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 5)).ok());
  // t002 would be the best by far, but its step times drift on gpu-2.
  auto plan = [](const std::string& tr) {
    if (tr == "llama-t002") return TrialPlay{0.62, true, "gpu-2"};
    return TrialPlay{0.40, false, "gpu-0"};
  };
  for (int i = 0; i < 6 && Phase(c, "llama-t002") != "Succeeded"; ++i) Step(c, "llama", plan);
  Json t2 = c.Get(res::kTrialRuns, "llama-t002");
  ASSERT_EQ(t2["status"].value("phase", ""), "Succeeded") << t2.dump(2);
  ASSERT_TRUE(t2["status"].contains("anomaly")) << t2["status"].dump(2);
  EXPECT_EQ(t2["status"]["anomaly"]["kind"], "StepTimeDrift");
  EXPECT_EQ(t2["status"]["anomaly"]["nodeNames"], Json::array({"gpu-2"}));
  Step(c, "llama", plan);
  Json st = c.Get(res::kTuningCampaigns, "llama")["status"];
  EXPECT_NE(st["best"].value("trialName", ""), "llama-t002") << st.dump(2);
  EXPECT_EQ(st["trials"]["anomalous"], 1);
  Json retry = Remediation(st, "retry-llama-t002");
  ASSERT_FALSE(retry.is_null()) << st.dump(2);
  EXPECT_EQ(retry.value("state", ""), "Proposed");
  EXPECT_EQ(retry.value("action", ""), "RetryTrial");
  EXPECT_TRUE(AnyEventSays(c, "RemediationProposed", "kubectl annotate tc llama"));
  // No approval yet: no re-run exists.
  for (const auto& tr : c.List(res::kTrialRuns)) {
    EXPECT_NE(tr["spec"].value("retryOf", ""), "llama-t002");
  }
  Annotate(c, "llama",
           {{kApproveAnnotation, "retry-llama-t002"}, {kApprovedByAnnotation, "alice"}});
  Step(c, "llama", plan);
  Step(c, "llama", plan);
  st = c.Get(res::kTuningCampaigns, "llama")["status"];
  retry = Remediation(st, "retry-llama-t002");
  ASSERT_FALSE(retry.is_null());
  EXPECT_EQ(retry.value("state", ""), "Applied") << retry.dump();
  EXPECT_EQ(retry.value("approvedBy", ""), "alice");
  EXPECT_FALSE(retry.value("approvedAt", "").empty());
  Json rerun;
  for (const auto& tr : c.List(res::kTrialRuns)) {
    if (tr["spec"].value("retryOf", "") == "llama-t002") rerun = tr;
  }
  ASSERT_FALSE(rerun.is_null()) << "an approved RetryTrial makes a TrialRun with retryOf";
  EXPECT_EQ(rerun["spec"]["avoidNodes"], Json::array({"gpu-2"}));
  Json job = c.Get(res::kJobs, kube::NameOf(rerun));
  ASSERT_FALSE(job.is_null());
  auto avoided = AvoidedNodes(job);
  EXPECT_NE(std::find(avoided.begin(), avoided.end(), "gpu-2"), avoided.end());
  EXPECT_EQ(EventsWithReason(c, "RemediationApplied"), 1);
}

// Node remediation off (the chart's default, --node-remediation=false: RBAC grants no Node
// patch): an administrator's approval patches nothing; the remediation ends Failed with the
// command for the administrator to run.
TEST(NodeHealthTest, WithRemediationOffAnApprovedCordonPatchesNothing) {
  FakeCluster c(true, RealTimeSource::Get(), nullptr, /*cordon=*/false);
  RunLlamaUntilGpu2IsSuspect(c);
  Json st = c.Get(res::kTuningCampaigns, "llama")["status"];
  ASSERT_EQ(Remediation(st, "cordon-gpu-2").value("state", ""), "Proposed") << st.dump(2);
  Json approval = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", ClusterApprovalName("cordon-gpu-2")}, {"namespace", "paratune-system"}}},
      {"data", {{"remediation", "cordon-gpu-2"}, {"approvedBy", "root@ops"}}}};
  ASSERT_TRUE(c.client.Create(res::kConfigMaps, "paratune-system", approval).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_FALSE(GetNode(c, "gpu-2").value("spec", Json::object()).value("unschedulable", false));
  Json cordon = Remediation(c.Get(res::kTuningCampaigns, "llama")["status"], "cordon-gpu-2");
  EXPECT_EQ(cordon.value("state", ""), "Failed") << cordon.dump(2);
  EXPECT_NE(cordon.dump().find("kubectl cordon gpu-2"), std::string::npos) << cordon.dump(2);
}

TEST(NodeHealthTest, SuspectNodeIsAvoidedDiagnosedAndCordonedOnlyWithApproval) {
  FakeCluster c;
  RunLlamaUntilGpu2IsSuspect(c);
  Json st = c.Get(res::kTuningCampaigns, "llama")["status"];
  ASSERT_EQ(st["nodeHealth"]["suspectNodes"].size(), 1u) << st.dump(2);
  EXPECT_EQ(st["nodeHealth"]["suspectNodes"][0]["name"], "gpu-2");
  EXPECT_FALSE(st["nodeHealth"]["suspectNodes"][0]["reasons"].empty());
  // The ledger ConfigMap says so too, and is not rewritten by reconciles that add nothing.
  auto ledger = c.ledger->Load();
  ASSERT_TRUE(ledger.ok());
  EXPECT_TRUE(ledger->IsSuspect("gpu-2"));
  EXPECT_FALSE(ledger->IsSuspect("gpu-0"));
  const std::string ledger_rv = kube::ResourceVersionOf(
      *c.client.Get(res::kConfigMaps, "paratune-system", kNodeHealthConfigMap));
  // Later trials avoid it.
  Json t4 = c.Get(res::kJobs, "llama-t004");
  ASSERT_FALSE(t4.is_null());
  EXPECT_EQ(AvoidedNodes(t4), std::vector<std::string>{"gpu-2"});
  // Diagnostics: one Job per check, created once.
  std::set<std::string> diag_jobs;
  for (const auto& j : c.List(res::kJobs)) {
    const Json labels = j["metadata"].value("labels", Json::object());
    if (labels.contains(kDiagnosticCheckLabel)) {
      EXPECT_EQ(labels.value(kNodeLabel, ""), "gpu-2");
      diag_jobs.insert(kube::NameOf(j));
    }
  }
  ASSERT_FALSE(diag_jobs.empty());
  EXPECT_EQ(st["nodeHealth"]["diagnostics"].size(), diag_jobs.size());
  // The checks started in one reconcile share one DiagnosticStarted Event naming every Job.
  const int started = EventsWithReason(c, "DiagnosticStarted");
  EXPECT_EQ(started, 1);
  for (const auto& name : diag_jobs) {
    EXPECT_TRUE(AnyEventSays(c, "DiagnosticStarted", "(Job " + name)) << name;
  }
  // Reconciles that change nothing: no second Job, Event or ledger write.
  for (int i = 0; i < 2; ++i) {
    c.Sync();
    ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  }
  int diag_after = 0;
  for (const auto& j : c.List(res::kJobs))
    diag_after +=
        j["metadata"].value("labels", Json::object()).contains(kDiagnosticCheckLabel) ? 1 : 0;
  EXPECT_EQ(diag_after, static_cast<int>(diag_jobs.size()));
  EXPECT_EQ(EventsWithReason(c, "DiagnosticStarted"), started);
  EXPECT_EQ(EventsWithReason(c, "NodeSuspect"), 1);
  EXPECT_EQ(kube::ResourceVersionOf(
                *c.client.Get(res::kConfigMaps, "paratune-system", kNodeHealthConfigMap)),
            ledger_rv);
  // A check whose Job fails without output could not judge the node: Inconclusive, not
  // written to the ledger, and the suspicion stays.
  Json job = c.Get(res::kJobs, *diag_jobs.begin());
  job["status"] = {{"conditions",
                    {{{"type", "Failed"},
                      {"status", "True"},
                      {"reason", "BackoffLimitExceeded"},
                      {"message", "Job has reached the specified backoff limit"}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  st = c.Get(res::kTuningCampaigns, "llama")["status"];
  bool inconclusive_seen = false;
  for (const auto& d : st["nodeHealth"]["diagnostics"]) {
    if (d.value("jobName", "") == *diag_jobs.begin())
      inconclusive_seen = d.value("state", "") == "Inconclusive";
  }
  EXPECT_TRUE(inconclusive_seen) << st["nodeHealth"].dump(2);
  EXPECT_EQ(st["nodeHealth"]["suspectNodes"].size(), 1u);
  EXPECT_EQ(kube::ResourceVersionOf(
                *c.client.Get(res::kConfigMaps, "paratune-system", kNodeHealthConfigMap)),
            ledger_rv);
  EXPECT_TRUE(AnyEventSays(c, "DiagnosticResult", "could not judge the node"));

  // Cordon proposed; an approval without approved-by is refused and does nothing.
  Json cordon = Remediation(st, "cordon-gpu-2");
  ASSERT_FALSE(cordon.is_null()) << st.dump(2);
  EXPECT_EQ(cordon.value("state", ""), "Proposed");
  Annotate(c, "llama", {{kApproveAnnotation, "cordon-gpu-2,bogus"}});
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_EQ(EventsWithReason(c, "ApprovalRefused"), 1);
  EXPECT_FALSE(GetNode(c, "gpu-2").value("spec", Json::object()).value("unschedulable", false));
  EXPECT_EQ(Remediation(c.Get(res::kTuningCampaigns, "llama")["status"], "cordon-gpu-2")
                .value("state", ""),
            "Proposed");
  // With approved-by the annotation still cannot cordon: a node is every tenant's, so only a
  // cluster administrator approves (a ConfigMap in the operator's namespace).
  Annotate(c, "llama", {{kApprovedByAnnotation, "alice"}});
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_FALSE(GetNode(c, "gpu-2").value("spec", Json::object()).value("unschedulable", false));
  EXPECT_EQ(EventsWithReason(c, "ApprovalRefused"), 2);
  EXPECT_TRUE(
      AnyEventSays(c, "RemediationProposed", "create configmap paratune-approve-cordon-gpu-2"));
  EXPECT_EQ(EventsWithReason(c, "ApprovalIgnored"), 1);
  // An approval naming another remediation does nothing either.
  Json wrong = {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata",
                 {{"name", ClusterApprovalName("cordon-gpu-2")}, {"namespace", "paratune-system"}}},
                {"data", {{"remediation", "cordon-gpu-0"}}}};
  ASSERT_TRUE(c.client.Create(res::kConfigMaps, "paratune-system", wrong).ok());
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_FALSE(GetNode(c, "gpu-2").value("spec", Json::object()).value("unschedulable", false));
  // The administrator's approval: cordoned once, recorded with where the approval came from.
  wrong = *c.client.Get(res::kConfigMaps, "paratune-system", ClusterApprovalName("cordon-gpu-2"));
  wrong["data"] = {{"remediation", "cordon-gpu-2"}, {"approvedBy", "root@ops"}};
  ASSERT_TRUE(c.client.Update(res::kConfigMaps, wrong).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  Json node = GetNode(c, "gpu-2");
  EXPECT_TRUE(node.value("spec", Json::object()).value("unschedulable", false)) << node.dump(2);
  EXPECT_FALSE(GetNode(c, "gpu-0").value("spec", Json::object()).value("unschedulable", false));
  st = c.Get(res::kTuningCampaigns, "llama")["status"];
  cordon = Remediation(st, "cordon-gpu-2");
  EXPECT_EQ(cordon.value("state", ""), "Applied");
  EXPECT_EQ(cordon.value("approvedBy", ""),
            "configmap paratune-system/paratune-approve-cordon-gpu-2 (root@ops)");
  EXPECT_FALSE(cordon.value("completedAt", "").empty());
  const std::string node_rv = kube::ResourceVersionOf(node);
  for (int i = 0; i < 2; ++i) {
    c.Sync();
    ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  }
  EXPECT_EQ(kube::ResourceVersionOf(GetNode(c, "gpu-2")), node_rv) << "patched once";
  EXPECT_EQ(EventsWithReason(c, "RemediationApplied"), 1);

  // A person uncordons the node after repairing it: the suspicion ends.
  node = GetNode(c, "gpu-2");
  node["spec"]["unschedulable"] = false;
  ASSERT_TRUE(c.client.Update(res::kNodes, node).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  st = c.Get(res::kTuningCampaigns, "llama")["status"];
  EXPECT_TRUE(st["nodeHealth"]["suspectNodes"].empty()) << st["nodeHealth"].dump(2);
  EXPECT_EQ(EventsWithReason(c, "NodeCleared"), 1);
  EXPECT_FALSE(c.ledger->Load()->IsSuspect("gpu-2"));
}

// Plays the Job controller and the check's pod on `node`: a pod the Job controls prints
// `output` and the Job completes.
void FinishDiagnosticJob(FakeCluster& c, Json job, const std::string& node,
                         const std::string& output) {
  const std::string name = kube::NameOf(job);
  Json spec = job["spec"]["template"]["spec"];
  spec["nodeName"] = node;
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name + "-0-abcde"},
                {"namespace", "ns"},
                {"labels", {{"job-name", name}}},
                {"ownerReferences", Json::array({{{"apiVersion", "batch/v1"},
                                                  {"kind", "Job"},
                                                  {"name", name},
                                                  {"uid", kube::UidOf(job)},
                                                  {"controller", true}}})}}},
              {"spec", spec}};
  ASSERT_TRUE(c.client.Create(res::kPods, "ns", pod).ok());
  c.client.SetPodLog("ns", name + "-0-abcde", output);
  job["status"] = {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
}

std::vector<Json> DiagnosticJobs(FakeCluster& c) {
  std::vector<Json> out;
  for (const auto& j : c.List(res::kJobs)) {
    if (j["metadata"].value("labels", Json::object()).contains(kDiagnosticCheckLabel)) {
      out.push_back(j);
    }
  }
  return out;
}

Json DiagnosticEntry(FakeCluster& c, const std::string& campaign, const std::string& check) {
  Json st = c.Get(res::kTuningCampaigns, campaign)["status"];
  for (const auto& d : st["nodeHealth"].value("diagnostics", Json::array())) {
    if (d.value("check", "") == check) return d;
  }
  return Json();
}

// Issue 17: a suspect node is diagnosed once in the cluster, not once per campaign that used it
// (at 200 campaigns each suspect node got a check Job from most of them). The second campaign
// waits for the first one's Jobs and takes their verdicts from the ledger; when those Jobs are
// gone (their campaign was deleted), it runs the checks still unjudged itself.
TEST(NodeHealthTest, ASuspectNodeIsDiagnosedOnceForEveryCampaignThatUsedIt) {
  FakeTimeSource clock;
  FakeCluster c(true, &clock);
  for (const char* n : {"gpu-0", "gpu-2"})
    ASSERT_TRUE(c.client.Create(res::kNodes, "", Node(n)).ok());
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 6)).ok());
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("mistral", 6)).ok());
  auto plan = [](const std::string& tr) {
    if (tr == "llama-t002" || tr == "llama-t003") return TrialPlay{0.40, true, "gpu-2"};
    if (tr == "mistral-t001") return TrialPlay{0.40, false, "gpu-2"};
    return TrialPlay{0.40, false, "gpu-0"};
  };
  for (int i = 0; i < 4 && Phase(c, "mistral-t001") != "Succeeded"; ++i) Step(c, "mistral", plan);
  ASSERT_EQ(Phase(c, "mistral-t001"), "Succeeded");
  for (int i = 0; i < 8 && Phase(c, "llama-t003") != "Succeeded"; ++i) Step(c, "llama", plan);
  Step(c, "llama", plan);
  ASSERT_TRUE(c.ledger->Load()->IsSuspect("gpu-2"));
  const std::vector<Json> jobs = DiagnosticJobs(c);
  ASSERT_GE(jobs.size(), 2u);
  for (const auto& j : jobs) {
    EXPECT_EQ(j["metadata"]["ownerReferences"][0]["name"], "llama") << kube::NameOf(j);
  }
  // The second campaign that ran a trial on gpu-2 lists it and waits: no Job of its own.
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "mistral"}).ok());
  Json st = c.Get(res::kTuningCampaigns, "mistral")["status"];
  ASSERT_EQ(st["nodeHealth"]["suspectNodes"].size(), 1u) << st["nodeHealth"].dump(2);
  EXPECT_EQ(DiagnosticJobs(c).size(), jobs.size());
  ASSERT_EQ(st["nodeHealth"]["diagnostics"].size(), jobs.size()) << st["nodeHealth"].dump(2);
  for (const auto& d : st["nodeHealth"]["diagnostics"]) {
    EXPECT_EQ(d.value("state", ""), "Running") << d.dump();
    EXPECT_FALSE(d.contains("jobName")) << "another tenant's Job is not named: " << d.dump();
    EXPECT_NE(d.value("summary", "").find("another campaign"), std::string::npos) << d.dump();
  }
  // The first campaign's check finds the node throttled: the second takes the verdict
  // without running it.
  const Json failed = jobs[0];
  const std::string failed_check =
      failed["metadata"]["labels"].value(kDiagnosticCheckLabel, std::string());
  FinishDiagnosticJob(
      c, failed, "gpu-2",
      SimulatedCheckOutput(failed_check, "gpu-2", {{"gpu-2", NodeFaultKind::kThrottle, 0.5}}, {},
                           "nvidia-h100-80gb", 3));
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_EQ(DiagnosticEntry(c, "llama", failed_check).value("state", ""), "Failed");
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "mistral"}).ok());
  Json adopted = DiagnosticEntry(c, "mistral", failed_check);
  EXPECT_EQ(adopted.value("state", ""), "Failed") << adopted.dump();
  EXPECT_NE(adopted.value("summary", "").find("checked for another campaign"), std::string::npos)
      << adopted.dump();
  EXPECT_EQ(adopted.value("summary", ""),
            DiagnosticEntry(c, "llama", failed_check).value("summary", "") +
                " (checked for another campaign)");
  EXPECT_TRUE(AnyEventSays(c, "DiagnosticResult",
                           failed_check + " on gpu-2 failed (checked for "
                                          "another campaign)"));
  EXPECT_EQ(DiagnosticJobs(c).size(), jobs.size());
  // A check Job of the first campaign that ends without output judged nothing: the check is
  // free at once, and the second campaign runs its own.
  Json stuck = jobs[1];
  const std::string stuck_check =
      stuck["metadata"]["labels"].value(kDiagnosticCheckLabel, std::string());
  stuck["status"] = {{"conditions",
                      {{{"type", "Failed"},
                        {"status", "True"},
                        {"reason", "DeadlineExceeded"},
                        {"message", "Job was active longer than specified deadline"}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, stuck).ok());
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_EQ(DiagnosticEntry(c, "llama", stuck_check).value("state", ""), "Inconclusive");
  EXPECT_FALSE(c.ledger->Load()->Find("gpu-2")->checks_failed.count(stuck_check))
      << "an inconclusive check convicts nobody";
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "mistral"}).ok());
  Json own = DiagnosticEntry(c, "mistral", stuck_check);
  EXPECT_EQ(own.value("state", ""), "Running") << own.dump();
  EXPECT_EQ(own.value("jobName", ""), DiagnosticJobName("mistral", stuck_check, "gpu-2"));
  EXPECT_EQ(DiagnosticJobs(c).size(), jobs.size() + 1);
  // The first campaign's other Jobs vanish (it was deleted; the garbage collector took them).
  // Within the claim's grace the second campaign still waits (the Job may be uncached yet);
  // after it, it runs each check still unjudged, once.
  for (size_t i = 2; i < jobs.size(); ++i) {
    ASSERT_TRUE(c.client.Delete(res::kJobs, "ns", kube::NameOf(jobs[i]), {}).ok());
  }
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "mistral"}).ok());
  EXPECT_EQ(DiagnosticJobs(c).size(), 3u) << "within the grace, nothing is taken over";
  clock.Advance(DiagnosticClaims::kGrace + Millis(1000));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "mistral"}).ok());
  std::set<std::string> mistral_checks;
  for (const auto& j : DiagnosticJobs(c)) {
    if (j["metadata"]["ownerReferences"][0]["name"] != "mistral") continue;
    mistral_checks.insert(j["metadata"]["labels"].value(kDiagnosticCheckLabel, std::string()));
  }
  EXPECT_EQ(mistral_checks.size(), jobs.size() - 1);
  EXPECT_EQ(mistral_checks.count(failed_check), 0u) << "a judged check is not run again";
  EXPECT_EQ(DiagnosticEntry(c, "mistral", failed_check).value("state", ""), "Failed");
}

// A check that judged nothing (its Job ended without output) is run again by the campaign that
// ran it, 5 minutes after it ended, 3 attempts in all: a single campaign's suspect node is not
// left suspect for ever because one check pod was evicted.
TEST(NodeHealthTest, AnInconclusiveCheckRunsAgainLaterThreeTimesInAll) {
  FakeTimeSource clock;
  FakeCluster c(true, &clock);
  RunLlamaUntilGpu2IsSuspect(c);
  ASSERT_TRUE(c.ledger->Load()->IsSuspect("gpu-2"));
  ASSERT_FALSE(DiagnosticJobs(c).empty());
  const std::string check =
      DiagnosticJobs(c)[0]["metadata"]["labels"].value(kDiagnosticCheckLabel, std::string());
  const std::string name = DiagnosticJobName("llama", check, "gpu-2");
  const std::string uid_before = kube::UidOf(c.Get(res::kJobs, name));
  auto end_without_output = [&] {
    Json job = c.Get(res::kJobs, name);
    ASSERT_FALSE(job.is_null()) << name;
    job["status"] = {{"conditions",
                      {{{"type", "Failed"},
                        {"status", "True"},
                        {"reason", "DeadlineExceeded"},
                        {"lastTransitionTime", FormatRfc3339(clock.SystemNow())}}}}};
    ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
    ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  };
  end_without_output();
  EXPECT_EQ(DiagnosticEntry(c, "llama", check).value("state", ""), "Inconclusive");
  clock.Advance(Millis(4 * 60 * 1000));
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_EQ(kube::UidOf(c.Get(res::kJobs, name)), uid_before) << "not within 5 minutes";
  for (int attempt = 2; attempt <= 3; ++attempt) {
    clock.Advance(Millis(61 * 1000 + (attempt == 3 ? 4 * 60 * 1000 : 0)));
    ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());  // deletes the Job
    ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());  // runs it again
    Json entry = DiagnosticEntry(c, "llama", check);
    EXPECT_EQ(entry.value("state", ""), "Running") << entry.dump();
    EXPECT_EQ(entry.value("attempt", 0), attempt) << entry.dump();
    EXPECT_NE(kube::UidOf(c.Get(res::kJobs, name)), uid_before) << "a new Job";
    EXPECT_TRUE(AnyEventSays(c, "DiagnosticStarted",
                             "attempt " + std::to_string(attempt) + " of 3: the last one judged"));
    end_without_output();
    EXPECT_EQ(DiagnosticEntry(c, "llama", check).value("state", ""), "Inconclusive");
  }
  const std::string last_uid = kube::UidOf(c.Get(res::kJobs, name));
  clock.Advance(Millis(60 * 60 * 1000));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_EQ(kube::UidOf(c.Get(res::kJobs, name)), last_uid) << "three attempts in all";
  EXPECT_EQ(DiagnosticEntry(c, "llama", check).value("attempt", 0), 3);
  EXPECT_TRUE(AnyEventSays(c, "DiagnosticResult", "the last of 3 attempts"));
  EXPECT_TRUE(c.ledger->Load()->IsSuspect("gpu-2")) << "nothing judged it";
}

// A Job under a campaign's diagnostic Job name that paratune did not make judges nothing, so it
// holds no claim: another campaign that used the node runs the check.
TEST(NodeHealthTest, AForeignJobUnderACheckNameDoesNotHoldTheCheck) {
  FakeCluster c;
  for (const char* n : {"gpu-0", "gpu-2"})
    ASSERT_TRUE(c.client.Create(res::kNodes, "", Node(n)).ok());
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 6)).ok());
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("mistral", 6)).ok());
  const std::string foreign = DiagnosticJobName("llama", "gemm", "gpu-2");
  Json job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", foreign}, {"namespace", "ns"}}},
      {"spec",
       {{"template", {{"spec", {{"containers", {{{"name", "x"}, {"image", "busybox"}}}}}}}}}}};
  ASSERT_TRUE(c.client.Create(res::kJobs, "ns", job).ok());
  auto plan = [](const std::string& tr) {
    if (tr == "llama-t002" || tr == "llama-t003") return TrialPlay{0.40, true, "gpu-2"};
    if (tr == "mistral-t001") return TrialPlay{0.40, false, "gpu-2"};
    return TrialPlay{0.40, false, "gpu-0"};
  };
  for (int i = 0; i < 4 && Phase(c, "mistral-t001") != "Succeeded"; ++i) Step(c, "mistral", plan);
  for (int i = 0; i < 8 && Phase(c, "llama-t003") != "Succeeded"; ++i) Step(c, "llama", plan);
  Step(c, "llama", plan);
  ASSERT_TRUE(c.ledger->Load()->IsSuspect("gpu-2"));
  EXPECT_NE(DiagnosticEntry(c, "llama", "gemm").value("summary", "").find("not made by paratune"),
            std::string::npos);
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "mistral"}).ok());
  Json own = DiagnosticEntry(c, "mistral", "gemm");
  EXPECT_EQ(own.value("jobName", ""), DiagnosticJobName("mistral", "gemm", "gpu-2")) << own.dump();
  EXPECT_FALSE(c.Get(res::kJobs, DiagnosticJobName("mistral", "gemm", "gpu-2")).is_null());
}

// A claim lapses when its Job leaves the cache after the grace, or when it outlives any Job.
TEST(DiagnosticClaimsTest, AClaimHoldsWhileItsJobRunsAndLapsesWithoutIt) {
  FakeTimeSource clock;
  kube::FakeKubeClient client;
  kube::testing::ClientReader jobs(&client, res::kJobs);
  DiagnosticClaims claims(&jobs, &clock);
  EXPECT_TRUE(claims.Claim("uid-a", "gpu-2", "gemm", {"a", "a-diag-gemm-gpu-2"}));
  EXPECT_TRUE(claims.Claim("uid-a", "gpu-2", "gemm", {"a", "a-diag-gemm-gpu-2"})) << "its own";
  EXPECT_FALSE(claims.Claim("uid-b", "gpu-2", "gemm", {"b", "b-diag-gemm-gpu-2"}));
  EXPECT_TRUE(claims.Claim("uid-b", "gpu-2", "ecc-xid", {"b", "b-diag-ecc-xid-gpu-2"}));
  EXPECT_TRUE(claims.Claim("uid-b", "gpu-3", "gemm", {"b", "b-diag-gemm-gpu-3"}));
  Json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", "a-diag-gemm-gpu-2"}, {"namespace", "a"}}}};
  ASSERT_TRUE(client.Create(res::kJobs, "a", job).ok());
  clock.Advance(DiagnosticClaims::kGrace + Millis(1));
  EXPECT_FALSE(claims.Claim("uid-b", "gpu-2", "gemm", {"b", "b-diag-gemm-gpu-2"}))
      << "its Job runs";
  clock.Advance(DiagnosticClaims::kLifetime);
  EXPECT_TRUE(claims.Claim("uid-b", "gpu-2", "gemm", {"b", "b-diag-gemm-gpu-2"}))
      << "older than any check's Job";
  EXPECT_FALSE(claims.Claim("uid-a", "gpu-2", "gemm", {"a", "a-diag-gemm-gpu-2"}));
  claims.Release("uid-a", "gpu-2", "gemm");  // not a's: nothing
  EXPECT_FALSE(claims.Claim("uid-a", "gpu-2", "gemm", {"a", "a-diag-gemm-gpu-2"}));
  claims.Release("uid-b", "gpu-2", "gemm");
  EXPECT_TRUE(claims.Claim("uid-a", "gpu-2", "gemm", {"a", "a-diag-gemm-gpu-2"}));
  claims.ReleaseNode("gpu-2");
  EXPECT_EQ(claims.size(), 1u) << "gpu-3's claim stays";
}

// Issue 17: with a node proposed for cordoning, every campaign that used it asks for the same
// approval ConfigMap on each reconcile; one found missing is asked for again only after the
// recheck interval, and an approval made meanwhile is found then.
TEST(ClusterApprovalsTest, AMissingApprovalIsAskedForOncePerInterval) {
  kube::FakeKubeClient client;
  FakeTimeSource clock;
  ClusterApprovals approvals(&client, "paratune-system", Millis(10000), &clock);
  const Json cordon = {{"id", "cordon-gpu-2"}, {"proposedAt", "2020-01-01T00:00:00Z"}};
  for (int campaign = 0; campaign < 50; ++campaign) {
    auto by = approvals.Find(cordon);
    ASSERT_TRUE(by.ok());
    EXPECT_EQ(*by, "");
  }
  EXPECT_EQ(client.Calls("get"), 1) << "50 campaign reconciles, one GET";
  Json approval = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", ClusterApprovalName("cordon-gpu-2")}, {"namespace", "paratune-system"}}},
      {"data", {{"remediation", "cordon-gpu-2"}, {"approvedBy", "root@ops"}}}};
  ASSERT_TRUE(client.Create(res::kConfigMaps, "paratune-system", approval).ok());
  EXPECT_EQ(*approvals.Find(cordon), "") << "within the interval it still counts as missing";
  clock.Advance(Millis(10000));
  EXPECT_EQ(*approvals.Find(cordon),
            "configmap paratune-system/paratune-approve-cordon-gpu-2 (root@ops)");
  EXPECT_EQ(*approvals.Find(cordon),
            "configmap paratune-system/paratune-approve-cordon-gpu-2 (root@ops)")
      << "one that exists is read every time (it is applied once, then no longer asked for)";
  // A transient error is returned, not taken for a missing approval.
  client.InjectError("get", "configmaps", Status::Unavailable("apiserver busy"), 1);
  EXPECT_FALSE(approvals.Find(cordon).ok());
}

TEST(NodeHealthTest, ALedgerThatCannotBeWrittenNeverBlocksTuning) {
  FakeCluster c;
  c.ledger->set_max_bytes(16);  // nothing fits: every ledger write is refused
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 3)).ok());
  auto plan = [](const std::string&) { return TrialPlay{0.40, false, "gpu-0"}; };
  for (int i = 0; i < 8 && Phase(c, "llama-t003") != "Succeeded"; ++i) Step(c, "llama", plan);
  EXPECT_EQ(Phase(c, "llama-t003"), "Succeeded") << "tuning went on without the ledger";
  Json st = c.Get(res::kTuningCampaigns, "llama")["status"];
  const Json* cond = FindCondition(st["conditions"], "NodeLedger");
  ASSERT_NE(cond, nullptr) << st.dump(2);
  EXPECT_EQ((*cond)["status"], "False");
  EXPECT_EQ((*cond)["reason"], "WriteFailed");
  EXPECT_EQ(EventsWithReason(c, "NodeLedgerUnavailable"), 1);
  EXPECT_FALSE(c.client.Get(res::kConfigMaps, "paratune-system", kNodeHealthConfigMap).ok());
}

}  // namespace
}  // namespace paratune::controllers
