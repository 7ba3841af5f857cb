// The campaign and trial reconcilers on a fake cluster, for what reaches the cluster before and
// after trials run (issue 13): the baseline's pre-flight, GitOps-safe publishing of the best
// configuration, and Kueue admission (the test plays Kueue by unsuspending the Job).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "agents/core/campaign.h"
#include "base/json_fields.h"
#include "controllers/campaign_status.h"
#include "controllers/conditions.h"
#include "controllers/job_renderer.h"
#include "controllers/trial_admission.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
namespace res = kube::resources;

Json Campaign(const std::string& name) { return testing::TestCampaign(name, 2); }

const Json& StatusOf(const Json& obj) { return ObjectField(obj, "status"); }

void ReconcileTrials(FakeCluster& c) {
  c.Sync();
  for (const auto& tr : c.List(res::kTrialRuns)) {
    ASSERT_TRUE(c.trial_reconciler->Reconcile(kube::ObjectKey::Of(tr)).ok());
  }
  c.Sync();
}

// Runs the campaign to its end, finishing every Job with a success.
void RunToEnd(FakeCluster& c, const std::string& campaign) {
  for (int i = 0; i < 10; ++i) {
    c.Sync();
    ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", campaign}).ok());
    if (StatusOf(c.Get(res::kTuningCampaigns, campaign)).value("phase", "") == "Succeeded") return;
    ReconcileTrials(c);
    for (const auto& tr : c.List(res::kTrialRuns)) {
      const std::string name = kube::NameOf(tr);
      if (c.Get(res::kJobs, name).is_null() || !c.Get(res::kPods, name + "-abcde").is_null()) {
        continue;
      }
      c.FinishJob(name, 0, "Completed", testing::MadeUpMetrics(tr));
    }
    ReconcileTrials(c);
  }
}

std::vector<Json> EventsWithReason(FakeCluster& c, const std::string& reason) {
  std::vector<Json> out;
  for (const auto& e : c.List(res::kEvents)) {
    if (e.value("reason", "") == reason) out.push_back(e);
  }
  return out;
}

TEST(CampaignOutputTest, PreexistingConfigMapIsLeftUntouchedAndNamesItsOwner) {
  FakeCluster c(/*detect_anomalies=*/false);
  Json theirs = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata",
                  {{"name", "promoted"},
                   {"namespace", "ns"},
                   {"labels", {{"app.kubernetes.io/managed-by", "Helm"}}}}},
                 {"data", {{"tp", "8"}}}};
  ASSERT_TRUE(c.client.Create(res::kConfigMaps, "ns", theirs).ok());
  Json tc = Campaign("llama");
  tc["spec"]["output"]["configMapName"] = "promoted";
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", tc).ok());
  RunToEnd(c, "llama");
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  const Json st = StatusOf(c.Get(res::kTuningCampaigns, "llama"));
  ASSERT_EQ(st.value("phase", ""), "Succeeded") << st.dump(2);
  const Json cm = c.Get(res::kConfigMaps, "promoted");
  EXPECT_EQ(cm["data"], Json({{"tp", "8"}}));
  EXPECT_FALSE(cm["metadata"].contains("ownerReferences"));
  EXPECT_FALSE(cm["metadata"].contains("annotations"));
  const Json* cond = FindCondition(st["conditions"], kOutputPublished);
  ASSERT_NE(cond, nullptr) << st.dump(2);
  EXPECT_EQ((*cond)["status"], "False");
  EXPECT_EQ((*cond)["reason"], reasons::kOutputNotOwned);
  EXPECT_NE((*cond)["message"].get<std::string>().find("app.kubernetes.io/managed-by=Helm"),
            std::string::npos);
  const auto events = EventsWithReason(c, reasons::kOutputNotOwned);
  ASSERT_EQ(events.size(), 1u);  // one Event, not one per reconcile
  EXPECT_EQ(events[0]["type"], "Warning");
}

TEST(CampaignOutputTest, PublishedConfigMapOutlivesTheCampaignUnlessAskedOtherwise) {
  FakeCluster c(/*detect_anomalies=*/false);
  Json kept = Campaign("kept");
  kept["spec"]["output"]["configMapName"] = "kept-best";
  Json owned = Campaign("owned");
  owned["spec"]["output"] = {{"configMapName", "owned-best"}, {"deleteWithCampaign", true}};
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", kept).ok());
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", owned).ok());
  RunToEnd(c, "kept");
  RunToEnd(c, "owned");
  for (const char* name : {"kept", "owned"}) {
    ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", name}).ok());
  }
  const Json a = c.Get(res::kConfigMaps, "kept-best");
  ASSERT_FALSE(a.is_null());
  EXPECT_FALSE(a["metadata"].contains("ownerReferences"));  // survives `kubectl delete tc`
  EXPECT_EQ(a["metadata"]["annotations"][kOutputOfAnnotation], "kept");
  EXPECT_EQ(a["metadata"]["labels"][kCampaignLabel], "kept");
  const Json b = c.Get(res::kConfigMaps, "owned-best");
  ASSERT_FALSE(b.is_null());
  ASSERT_TRUE(b["metadata"].contains("ownerReferences"));
  EXPECT_EQ(b["metadata"]["ownerReferences"][0]["uid"],
            kube::UidOf(c.Get(res::kTuningCampaigns, "owned")));
  const Json st = StatusOf(c.Get(res::kTuningCampaigns, "kept"));
  EXPECT_TRUE(IsConditionTrue(st["conditions"], kOutputPublished)) << st.dump(2);
  // Our own ConfigMap is updated in place (a later best), keeping what a GitOps tool added.
  Json edited = a;
  edited["metadata"]["labels"]["argocd.argoproj.io/instance"] = "prod";
  edited["data"]["trial"] = "stale";
  ASSERT_TRUE(c.client.Update(res::kConfigMaps, edited).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "kept"}).ok());
  const Json again = c.Get(res::kConfigMaps, "kept-best");
  EXPECT_NE(again["data"]["trial"], "stale");
  EXPECT_EQ(again["metadata"]["labels"]["argocd.argoproj.io/instance"], "prod");
}

// llama3-8b on one H100 with tp 1 and no recompute: the model predicts far more than 80 GiB.
TEST(BaselinePreflightTest, BaselineThatCannotFitLaunchesNoTrialAndSaysWhy) {
  FakeCluster c(/*detect_anomalies=*/false);
  Json tc = Campaign("big");
  tc["spec"]["searchSpace"]["parameters"] = Json::parse(R"([
    {"name": "tp", "values": [1, 2, 4, 8]}, {"name": "mbs", "values": [1, 4]},
    {"name": "recompute", "values": ["none", "selective", "full"]}])");
  tc["spec"]["baseline"] = {{"tp", 1}, {"mbs", 4}, {"recompute", "none"}};
  tc["spec"]["budget"]["maxTrials"] = 1;
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", tc).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "big"}).ok());
  c.Sync();
  const auto trs = c.List(res::kTrialRuns);
  ASSERT_EQ(trs.size(), 1u);
  const Json& config = trs[0]["spec"]["config"];
  EXPECT_NE(config, Json({{"tp", 1}, {"mbs", 4}, {"recompute", "none"}})) << config.dump();
  EXPECT_EQ(trs[0]["spec"]["proposal"]["proposedBy"], "baseline");
  const Json st = StatusOf(c.Get(res::kTuningCampaigns, "big"));
  const Json& pre = st["baseline"]["preflight"];
  ASSERT_TRUE(pre.is_object()) << st.dump(2);
  EXPECT_TRUE(pre["rejected"].get<bool>());
  const double peak = pre["predictedPeakMemoryGiB"].get<double>();
  const double capacity = pre["capacityGiB"].get<double>();
  const double uncertainty = pre["uncertaintyGiB"].get<double>();
  EXPECT_GT(uncertainty, 0.0);
  EXPECT_GT(peak - uncertainty, capacity);
  EXPECT_EQ(pre["startedFrom"]["config"], config);
  EXPECT_LE(pre["startedFrom"]["predictedPeakMemoryGiB"].get<double>() + uncertainty, capacity);
  EXPECT_EQ(st["trials"]["rejected"], 1);
  const auto events = EventsWithReason(c, reasons::kRejectedByPreflight);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_NE(events[0]["message"].get<std::string>().find("spec.baseline not launched"),
            std::string::npos);
  // A later reconcile neither rejects it again nor launches it.
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "big"}).ok());
  c.Sync();
  EXPECT_EQ(c.List(res::kTrialRuns).size(), 1u);
  EXPECT_EQ(EventsWithReason(c, reasons::kRejectedByPreflight).size(), 1u);
}

TEST(QueueAdmissionTest, QueuedTrialWaitsSuspendedAndRecordsItsQueueTime) {
  FakeCluster c(/*detect_anomalies=*/false);
  Json tc = Campaign("queued");
  tc["spec"]["queueName"] = "team-gpus";
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", tc).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "queued"}).ok());
  ReconcileTrials(c);  // creates the Job
  ReconcileTrials(c);  // observes it suspended
  const std::string trial = "queued-t001";
  Json job = c.Get(res::kJobs, trial);
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["metadata"]["labels"][kKueueQueueLabel], "team-gpus");
  EXPECT_EQ(job["spec"]["suspend"], true);
  Json tr = c.Get(res::kTrialRuns, trial);
  EXPECT_EQ(tr["status"]["phase"], "Pending");
  const Json* queued = FindCondition(tr["status"]["conditions"], kAdmitted);
  ASSERT_NE(queued, nullptr) << tr["status"].dump(2);
  EXPECT_EQ((*queued)["reason"], "Queued");
  EXPECT_FALSE(tr["status"].contains("admissionTime"));
  // Kueue admits: spec.suspend false; the Job controller sets startTime on resume.
  SystemTime created;
  ASSERT_TRUE(ParseRfc3339(job["metadata"].value("creationTimestamp", ""), &created));
  const std::string admitted = FormatRfc3339(created + std::chrono::seconds(95));
  job["spec"]["suspend"] = false;
  auto updated = c.client.Update(res::kJobs, job);
  ASSERT_TRUE(updated.ok());
  Json with_start = *updated;
  with_start["status"] = {{"startTime", admitted}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, with_start).ok());
  ReconcileTrials(c);
  tr = c.Get(res::kTrialRuns, trial);
  EXPECT_EQ(tr["status"]["admissionTime"], admitted);
  EXPECT_EQ(tr["status"]["queueSeconds"], 95);
  EXPECT_TRUE(IsConditionTrue(tr["status"]["conditions"], kAdmitted));
  const auto events = EventsWithReason(c, reasons::kAdmitted);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0]["message"].get<std::string>().find("95 s"), std::string::npos);
  // The trial then runs and finishes as any other; the admission stays recorded once.
  c.FinishJob(trial, 0, "Completed", testing::MadeUpMetrics(tr));
  ReconcileTrials(c);
  tr = c.Get(res::kTrialRuns, trial);
  EXPECT_EQ(tr["status"]["phase"], "Succeeded");
  EXPECT_EQ(tr["status"]["queueSeconds"], 95);
  EXPECT_EQ(EventsWithReason(c, reasons::kAdmitted).size(), 1u);
}

}  // namespace
}  // namespace paratune::controllers
