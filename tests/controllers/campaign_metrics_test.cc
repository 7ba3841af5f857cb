// Per-campaign metrics (issue 38): the series a scrape shows, their bound, and the Grafana
// dashboard of the chart querying only what the operator exports.
#include "controllers/campaign_metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "testing/fakes/client_reader.h"
#include "testing/fakes/fake_kube_client.h"

namespace paratune::controllers {
namespace {

using kube::Json;
namespace res = kube::resources;

Json Campaign(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
          {"kind", "TuningCampaign"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"objective", {{"metric", "tflopsPerDevice"}}},
            {"hardware", {{"accelerator", "nvidia-h100-80gb"}}},
            {"training", {{"framework", "megatron-lm"}}}}},
          {"status",
           {{"phase", "Running"},
            {"trials", {{"total", 3}, {"oomsAvoided", 2}}},
            {"best", {{"trialName", name + "-t002"}, {"objective", 412.5}}},
            {"baseline", {{"trialName", name + "-t001"}, {"objective", 300.0}}},
            {"acceleratorHours", {{"total", 1.25}, {"savedByEarlyStopping", 0.5}}}}}};
}

Json Trial(const std::string& ns, const std::string& campaign, const std::string& name,
           const std::string& phase, int queue_seconds, int evictions = 0) {
  Json t = {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
            {"kind", "TrialRun"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec", {{"campaignRef", {{"name", campaign}}}, {"iteration", 1}}}};
  if (!phase.empty()) t["status"] = {{"phase", phase}, {"queueSeconds", queue_seconds}};
  if (evictions > 0) t["status"]["evictions"] = evictions;
  return t;
}

class CampaignMetricsTest : public ::testing::Test {
 protected:
  // Creates `obj` and then writes its status (the status subresource ignores it on create).
  void CreateWithStatus(const kube::GroupVersionResource& gvr, const Json& obj) {
    auto created = client_.Create(gvr, kube::NamespaceOf(obj), obj);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    if (!obj.contains("status")) return;
    (*created)["status"] = obj["status"];
    ASSERT_TRUE(client_.UpdateStatus(gvr, *created).ok());
  }
  void SetUp() override {
    CreateWithStatus(res::kTuningCampaigns, Campaign("team-a", "llama"));
    CreateWithStatus(res::kTuningCampaigns, Campaign("team-b", "qwen"));
    for (const Json& t : {Trial("team-a", "llama", "llama-t001", "Succeeded", 30),
                          Trial("team-a", "llama", "llama-t002", "Succeeded", 12, 2),
                          Trial("team-a", "llama", "llama-t003", "Running", 0),
                          Trial("team-a", "llama", "llama-t004", "", 0)}) {
      CreateWithStatus(res::kTrialRuns, t);
    }
    ExportCampaignMetrics(&campaigns_, &trials_, &metrics_);
  }
  double Value(const std::string& name, const kube::Labels& extra = {},
               const std::string& campaign = "llama", const std::string& ns = "team-a") {
    kube::Labels l = {{"namespace", ns}, {"campaign", campaign}};
    l.insert(l.end(), extra.begin(), extra.end());
    return metrics_.Value(name, l);
  }

  kube::FakeKubeClient client_;
  kube::testing::ClientReader campaigns_{&client_, res::kTuningCampaigns};
  kube::testing::ClientReader trials_{&client_, res::kTrialRuns};
  kube::MetricsRegistry metrics_;
};

TEST_F(CampaignMetricsTest, EachCampaignHasItsSeriesLabelledByNamespaceAndCampaign) {
  EXPECT_EQ(Value(kCampaignBestObjective, {{"objective", "tflopsPerDevice"}}), 412.5);
  EXPECT_EQ(Value(kCampaignBaselineObjective, {{"objective", "tflopsPerDevice"}}), 300.0);
  EXPECT_EQ(Value(kCampaignTrials, {{"phase", "Succeeded"}}), 2);
  EXPECT_EQ(Value(kCampaignTrials, {{"phase", "Running"}}), 1);
  EXPECT_EQ(Value(kCampaignTrials, {{"phase", "Pending"}}), 1) << "no status yet counts Pending";
  EXPECT_EQ(Value(kCampaignTrials, {{"phase", "Failed"}}), 0);
  EXPECT_EQ(Value(kCampaignOomsAvoided), 2);
  EXPECT_EQ(Value(kCampaignHoursSpent), 1.25);
  EXPECT_EQ(Value(kCampaignHoursSaved, {{"reason", "early_stopping"}}), 0.5);
  EXPECT_EQ(Value(kCampaignQueueWait), 42);
  EXPECT_EQ(Value(kCampaignQueueWait, {}, "qwen", "team-b"), 0) << "its own trials only";
  EXPECT_EQ(Value(kCampaignEvictions), 2);
  EXPECT_EQ(Value(kCampaignEvictions, {}, "qwen", "team-b"), 0);
  const std::string text = metrics_.Render();
  EXPECT_NE(text.find("# TYPE paratune_campaign_ooms_avoided_total counter"), std::string::npos);
  EXPECT_NE(text.find("paratune_campaign_info{namespace=\"team-b\",campaign=\"qwen\",phase=\""
                      "Running\",accelerator=\"nvidia-h100-80gb\",framework=\"megatron-lm\"} 1"),
            std::string::npos)
      << text;
}

TEST_F(CampaignMetricsTest, ADeletedCampaignsSeriesAreGoneFromTheNextScrape) {
  ASSERT_NE(metrics_.Render().find("campaign=\"qwen\""), std::string::npos);
  ASSERT_TRUE(client_.Delete(res::kTuningCampaigns, "team-b", "qwen").ok());
  EXPECT_EQ(metrics_.Render().find("campaign=\"qwen\""), std::string::npos);
  EXPECT_NE(metrics_.Render().find("campaign=\"llama\""), std::string::npos);
}

TEST_F(CampaignMetricsTest, SeriesAreBoundedAndTheRestCounted) {
  CampaignMetricsOptions opts;
  opts.max_campaigns = 1;
  auto series = CampaignMetricSeries(campaigns_.List(), trials_.List(), opts);
  EXPECT_EQ(series[kCampaignInfo].size(), 1u);
  EXPECT_EQ(series[kCampaignTrials].size(), 6u) << "one per phase of the one campaign kept";
  ASSERT_EQ(series[kCampaignSeriesDropped].size(), 1u);
  EXPECT_EQ(series[kCampaignSeriesDropped][0].second, 1);
}

// Every query of the chart's Grafana dashboard (panels and template variables) names a metric
// the operator exports, and only those: a renamed metric or a typo fails here, not in Grafana.
TEST(CampaignDashboardTest, EveryQueryNamesAnExportedMetric) {
  const std::string path = std::string(PARATUNE_SOURCE_DIR) +
                           "/charts/paratune/files/dashboards/paratune-campaigns.json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream buf;
  buf << in.rdbuf();
  const Json dashboard = Json::parse(buf.str());  // throws (fails the test) when malformed
  std::vector<std::string> queries;
  for (const Json& p : dashboard.at("panels")) {
    ASSERT_FALSE(p.value("targets", Json::array()).empty()) << p.value("title", "");
    for (const Json& t : p.at("targets")) queries.push_back(t.at("expr").get<std::string>());
  }
  for (const Json& v : dashboard.at("templating").at("list")) {
    if (v.value("type", "") == "query") {
      queries.push_back(v.at("query").at("query").get<std::string>());
    }
  }
  ASSERT_GE(queries.size(), 9u);
  kube::FakeKubeClient client;
  kube::testing::ClientReader campaigns(&client, res::kTuningCampaigns),
      trials(&client, res::kTrialRuns);
  kube::MetricsRegistry registry;
  ExportCampaignMetrics(&campaigns, &trials, &registry);
  std::set<std::string> exported;
  const std::string text = registry.Render();
  const std::regex type_line("# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) ");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), type_line);
       it != std::sregex_iterator(); ++it) {
    exported.insert((*it)[1]);
  }
  std::set<std::string> used;
  const std::regex metric("paratune_[a-z0-9_]+");
  for (const std::string& q : queries) {
    int named = 0;
    for (auto it = std::sregex_iterator(q.begin(), q.end(), metric); it != std::sregex_iterator();
         ++it, ++named) {
      EXPECT_EQ(exported.count(it->str()), 1u) << it->str() << " in: " << q;
      used.insert(it->str());
    }
    EXPECT_GT(named, 0) << "a query naming no paratune metric: " << q;
  }
  for (const std::string& name : CampaignMetricNames()) {
    EXPECT_EQ(used.count(name), 1u) << name << " is exported but on no panel";
  }
}

}  // namespace
}  // namespace paratune::controllers
