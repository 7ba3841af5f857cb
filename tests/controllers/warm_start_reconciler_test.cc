// Warm start in the cluster (issue 15 item 5): a campaign's first engine proposal is the best
// known configuration of an earlier campaign on the same model and hardware in its namespace,
// from that campaign's published result or from a ConfigMap named in
// spec.agents.knowledgeConfigMaps; other namespaces are never read.
#include <gtest/gtest.h>

#include <string>

#include "controllers/knowledge_records.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
namespace res = kube::resources;

// Deterministic measurements: larger tp and selective recomputation are better.
// One reconcile of `campaign`, its trials started and finished.
void Step(FakeCluster& c, const std::string& campaign) {
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", campaign}).ok());
  c.Sync();
  for (const auto& tr : c.List(res::kTrialRuns)) {
    ASSERT_TRUE(c.trial_reconciler->Reconcile(kube::ObjectKey::Of(tr)).ok());
  }
  c.Sync();
  for (const auto& tr : c.List(res::kTrialRuns)) {
    const std::string name = kube::NameOf(tr);
    if (c.Get(res::kJobs, name).is_null() || !c.Get(res::kPods, name + "-abcde").is_null()) {
      continue;
    }
    c.FinishJob(name, 0, "Completed", testing::MadeUpMetrics(tr));
  }
  c.Sync();
  for (const auto& tr : c.List(res::kTrialRuns)) {
    ASSERT_TRUE(c.trial_reconciler->Reconcile(kube::ObjectKey::Of(tr)).ok());
  }
}

Json FirstTrialOf(FakeCluster& c, const std::string& campaign) {
  for (const auto& tr : c.List(res::kTrialRuns)) {
    if (kube::NameOf(tr) == campaign + "-t001") return tr;
  }
  return Json();
}

// Runs campaign "first" to its end; returns its best configuration.
Json RunFirst(FakeCluster& c) {
  Json first = testing::TestCampaign("first", 4, 1);
  first["spec"]["output"]["configMapName"] = "first-best";
  EXPECT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", first).ok());
  for (int i = 0; i < 8; ++i) {
    Step(c, "first");
    const Json st = c.Get(res::kTuningCampaigns, "first").value("status", Json::object());
    if (st.value("phase", "") == "Succeeded") break;
  }
  c.Sync();
  EXPECT_TRUE(c.campaign_reconciler->Reconcile({"ns", "first"}).ok());
  return c.Get(res::kTuningCampaigns, "first")["status"]["best"]["config"];
}

TEST(WarmStartReconcilerTest, SecondCampaignStartsFromTheFirstOnesPublishedBest) {
  FakeCluster c(/*detect_anomalies=*/false);
  const Json best = RunFirst(c);
  ASSERT_TRUE(best.is_object()) << best.dump();
  const Json published = c.Get(res::kConfigMaps, "first-best");
  ASSERT_TRUE(published["data"].contains(kPastOptimizationKey)) << published.dump(2);

  Json second = testing::TestCampaign("second", 3, 1);
  second["spec"].erase("baseline");
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", second).ok());
  Step(c, "second");
  const Json t1 = FirstTrialOf(c, "second");
  ASSERT_FALSE(t1.is_null());
  EXPECT_EQ(t1["spec"]["config"], best);
  EXPECT_EQ(t1["spec"]["proposal"].value("rationale", "").rfind("Warm start from past:first/", 0),
            0u)
      << t1["spec"]["proposal"].dump();
  // It ran as well as it did for the first campaign.
  EXPECT_EQ(c.Get(res::kTrialRuns, "second-t001")["status"]["phase"], "Succeeded");
}

TEST(WarmStartReconcilerTest, KnowledgeConfigMapRecordsOfThisNamespaceWarmStart) {
  FakeCluster c(/*detect_anomalies=*/false);
  // A site's records for this workload: tp 2, mbs 1 does not fit by the memory model (skipped
  // although it claims more); tp 4, mbs 1 with selective recomputation does.
  const Json workload = "llama3-8b on 8 x nvidia-h100-80gb, seq 8192, global batch 512";
  const Json record = {{"pastOptimizations",
                        {{{"id", "site/run-3"},
                          {"workload", workload},
                          {"after", {{"tp", 2}, {"mbs", 1}, {"recompute", "selective"}}},
                          {"metric", "mfu"},
                          {"afterValue", 0.95}},
                         {{"id", "site/run-7"},
                          {"workload", workload},
                          {"after", {{"tp", 4}, {"mbs", 1}, {"recompute", "selective"}}},
                          {"metric", "mfu"},
                          {"afterValue", 0.9}}}}};
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "site-past"}, {"namespace", "ns"}}},
             {"data", {{"past.json", record.dump()}, {"runbook.md", "# Runbook\n"}}}};
  ASSERT_TRUE(c.client.Create(res::kConfigMaps, "ns", cm).ok());
  Json elsewhere = cm;
  elsewhere["metadata"]["namespace"] = "other";
  elsewhere["data"]["past.json"] = Json{
      {"pastOptimizations",
       {{{"id", "other/run-1"},
         {"workload", record["pastOptimizations"][0]["workload"]},
         {"after", {{"tp", 4}, {"mbs", 2}, {"recompute", "full"}}},
         {"metric", "mfu"},
         {"afterValue", 0.99}}}}}.dump();
  ASSERT_TRUE(c.client.Create(res::kConfigMaps, "other", elsewhere).ok());

  Json campaign = testing::TestCampaign("third", 2, 1);
  campaign["spec"].erase("baseline");
  campaign["spec"]["agents"]["knowledgeConfigMaps"] = Json::array({"site-past", "missing"});
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", campaign).ok());
  Step(c, "third");
  const Json t1 = FirstTrialOf(c, "third");
  ASSERT_FALSE(t1.is_null());
  EXPECT_EQ(t1["spec"]["config"], record["pastOptimizations"][1]["after"]);
  EXPECT_NE(t1["spec"]["proposal"].value("rationale", "").find("past:site/run-7"),
            std::string::npos);
  bool warned = false;
  for (const auto& e : c.List(res::kEvents)) {
    warned |= e.value("reason", "") == "KnowledgeSkipped" &&
              e.value("message", "").find("missing") != std::string::npos;
  }
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace paratune::controllers
