// The knowledge a campaign brings (controllers/campaign_knowledge.h): the documents, signatures
// and known failures of the ConfigMaps named in spec.agents.knowledgeConfigMaps, in the campaign's
// namespace only, on top of the site's; a namespace's regex signatures and bad values are skipped
// with a warning naming the field; rebuilt only when a ConfigMap changes.
#include "controllers/campaign_knowledge.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/fakes/fake_kube_client.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using kube::Json;
namespace res = kube::resources;

// A site-specific failure nothing shipped explains.
constexpr char kScratchLog[] =
    "step 1200 | loss 2.31\n"
    "OSError: [Errno 122] Disk quota exceeded: '/scratch/ckpt/iter_0001200/mp_rank_00.pt'\n";

constexpr char kScratchSignature[] = R"(signatures:
- key: site-scratch-quota
  category: NodeFault
  contains: ["disk quota exceeded: '/scratch/"]
  cause: The shared scratch volume's per-team quota is full.
  remedy: Clean old checkpoints under /scratch or ask the storage team for more quota.
  retryable: true
  confidence: 85
)";

Json ConfigMap(const std::string& ns, const std::string& name, const Json& data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"data", data}};
}

CampaignSpec SpecNaming(std::vector<std::string> maps) {
  CampaignSpec spec;
  spec.agents.knowledge_config_maps = std::move(maps);
  return spec;
}

FailureDiagnosis Diagnose(const CampaignKnowledgeView& view, const std::string& log) {
  FailureEvidence ev;
  ev.log = log;
  ev.exit_code = 1;
  ev.pod_reason = "Error";
  return view.analyzer->Diagnose(ev, Config{}, nullptr);
}

std::shared_ptr<const KnowledgeBase> EmbeddedKnowledge() {
  auto kb = KnowledgeBase::LoadEmbedded();
  EXPECT_TRUE(kb.ok()) << kb.status().ToString();
  return kb.ok() ? std::shared_ptr<const KnowledgeBase>(std::move(*kb)) : nullptr;
}

class CampaignKnowledgeTest : public ::testing::Test {
 protected:
  kube::FakeKubeClient client;
  ConfigMapCache configmaps{&client};
  std::shared_ptr<const KnowledgeBase> site_kb{EmbeddedKnowledge()};
  std::shared_ptr<const FailureAnalyzer> site{MakeFallbackFailureAnalyzer()};
  CampaignKnowledge knowledge{&configmaps, "", site_kb, site};
};

TEST_F(CampaignKnowledgeTest, WithoutConfigMapsTheSitesKnowledgeAnswers) {
  auto view = knowledge.For("ns", SpecNaming({}));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->analyzer, site);
  EXPECT_TRUE(view->warnings.empty());
  ASSERT_NE(view->knowledge, nullptr);
  EXPECT_EQ(view->knowledge, site_kb);  // the site's, shared
}

TEST_F(CampaignKnowledgeTest, TheCampaignsSignaturesCasesAndDocumentsCount) {
  const std::string cases = R"(cases:
- url: https://wiki.example.com/incidents/4411
  category: NodeFault
  retryable: true
  log: |
    fabric-agent: bridge handshake refused by gateway gw-3, lease epoch 41 expired on rack r17
- url: https://wiki.example.com/incidents/4420
  category: NodeFault
  retryable: true
  log: |
    fabric-agent: lease epoch 43 expired, bridge handshake refused by gateway gw-2
)";
  const std::string past = R"({"pastOptimizations": []})";
  ASSERT_TRUE(client
                  .Create(res::kConfigMaps, "ns",
                          ConfigMap("ns", "site",
                                    {{"scratch.yaml", kScratchSignature},
                                     {"incidents.yaml", cases},
                                     {"runbook.md", "# Scratch quota\nClean /scratch first.\n"},
                                     {"past.json", past},
                                     {"notes.txt", "not knowledge"}}))
                  .ok());
  auto view = knowledge.For("ns", SpecNaming({"site"}));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_TRUE(view->warnings.empty()) << view->warnings.front();
  ASSERT_NE(view->analyzer, site);

  FailureDiagnosis d = Diagnose(*view, kScratchLog);
  EXPECT_EQ(d.signature, "site-scratch-quota");
  EXPECT_EQ(d.category, "NodeFault");
  EXPECT_TRUE(d.retryable);
  // The site alone does not know it.
  EXPECT_NE(Diagnose(knowledge.Site(), kScratchLog).signature, "site-scratch-quota");

  // The campaign's known failure decides a log no signature explains.
  FailureDiagnosis similar =
      Diagnose(*view,
               "fabric-agent: bridge handshake refused by gateway gw-5, lease epoch 44 expired on "
               "rack r17\n");
  EXPECT_EQ(similar.signature, "case:https://wiki.example.com/incidents/4411") << similar.summary;

  bool runbook = false;
  for (const auto& doc : view->knowledge->documents()) {
    runbook |= doc.name == "ConfigMap ns/site key runbook.md";
  }
  EXPECT_TRUE(runbook);
  EXPECT_TRUE(view->knowledge->past_optimizations().empty());  // the warm start's, not here
}

TEST_F(CampaignKnowledgeTest, ANamespacesRegexAndBadValuesAreSkippedByName) {
  const std::string regex_sig = R"(signatures:
- key: catastrophic
  category: Unknown
  regex: ['(a+)+$']
)";
  const std::string bad_cases = R"(cases:
- url: https://example.com/1
  category: NotACategory
  log: x
)";
  ASSERT_TRUE(client
                  .Create(res::kConfigMaps, "ns",
                          ConfigMap("ns", "site",
                                    {{"a-regex.yaml", regex_sig},
                                     {"b-cases.yaml", bad_cases},
                                     {"scratch.yaml", kScratchSignature}}))
                  .ok());
  auto view = knowledge.For("ns", SpecNaming({"site", "absent"}));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_EQ(view->warnings.size(), 3u);
  EXPECT_NE(view->warnings[0].find("absent not found in namespace ns"), std::string::npos);
  EXPECT_NE(view->warnings[1].find("ConfigMap ns/site key a-regex.yaml: signatures[0].regex"),
            std::string::npos)
      << view->warnings[1];
  EXPECT_NE(view->warnings[2].find("ConfigMap ns/site key b-cases.yaml"), std::string::npos)
      << view->warnings[2];
  EXPECT_NE(view->warnings[2].find("category"), std::string::npos) << view->warnings[2];
  EXPECT_EQ(view->knowledge->FindSignature("catastrophic"), nullptr);
  EXPECT_EQ(Diagnose(*view, kScratchLog).signature, "site-scratch-quota");  // the rest counts
}

TEST_F(CampaignKnowledgeTest, OnlyTheCampaignsNamespaceIsRead) {
  ASSERT_TRUE(client
                  .Create(res::kConfigMaps, "other",
                          ConfigMap("other", "site", {{"scratch.yaml", kScratchSignature}}))
                  .ok());
  auto view = knowledge.For("ns", SpecNaming({"site"}));
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->analyzer, site);
  ASSERT_EQ(view->warnings.size(), 1u);
  EXPECT_NE(view->warnings[0].find("not found in namespace ns"), std::string::npos);
}

TEST_F(CampaignKnowledgeTest, BuiltOncePerVersionOfItsConfigMaps) {
  auto created = client.Create(res::kConfigMaps, "ns",
                               ConfigMap("ns", "site", {{"scratch.yaml", kScratchSignature}}));
  ASSERT_TRUE(created.ok());
  auto first = knowledge.For("ns", SpecNaming({"site"}));
  auto again = knowledge.For("ns", SpecNaming({"site"}));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->analyzer, again->analyzer);

  Json edited = *created;
  edited["data"]["scratch.yaml"] =
      std::string(kScratchSignature)
          .replace(std::string(kScratchSignature).find("NodeFault"), 9, "HostOOM");
  ASSERT_TRUE(client.Update(res::kConfigMaps, edited).ok());
  auto after = knowledge.For("ns", SpecNaming({"site"}));
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->analyzer, first->analyzer);
  EXPECT_EQ(Diagnose(*after, kScratchLog).category, "HostOOM");
}

// In the cluster: a trial whose log only the campaign's own signature explains is diagnosed by
// it (TrialRun status.failure), and the campaign's pool records that diagnosis, not another.
TEST(CampaignKnowledgeReconcilerTest, ATrialFailureIsDiagnosedWithTheCampaignsSignatures) {
  testing::FakeCluster c(/*detect_anomalies=*/false);
  ASSERT_TRUE(c.client
                  .Create(res::kConfigMaps, "ns",
                          ConfigMap("ns", "site-failures", {{"scratch.yaml", kScratchSignature}}))
                  .ok());
  Json campaign = testing::TestCampaign("scratch", 3, 1);
  campaign["spec"]["agents"]["knowledgeConfigMaps"] = Json::array({"site-failures"});
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", campaign).ok());
  c.ReconcileCampaignAndTrials("scratch");
  c.ForEachJobWithoutPod(
      [&](const Json& tr) { c.FinishJob(kube::NameOf(tr), 1, "Error", "", kScratchLog); });
  c.ReconcileTrials();
  const Json failed = c.Get(res::kTrialRuns, "scratch-t001");
  ASSERT_EQ(failed["status"].value("phase", ""), "Failed") << failed.dump(2);
  const Json& failure = failed["status"]["failure"];
  EXPECT_EQ(failure.value("signature", ""), "site-scratch-quota") << failure.dump(2);
  EXPECT_EQ(failure.value("category", ""), "NodeFault");
  EXPECT_TRUE(failure.value("retryable", false));

  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "scratch"}).ok());
  auto loaded = c.store->Load(c.Get(res::kTuningCampaigns, "scratch"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const TrialRecord* record = loaded->pool.FindTrial("scratch-t001");
  ASSERT_NE(record, nullptr);
  ASSERT_TRUE(record->failure.has_value());
  EXPECT_EQ(record->failure->signature, "site-scratch-quota");
  EXPECT_EQ(record->failure->summary, failure.value("summary", ""));
}

// The operator may not read the named ConfigMaps (its RBAC in that namespace): the trial still
// ends, diagnosed with the site's knowledge, and the campaign is told why.
TEST(CampaignKnowledgeReconcilerTest, KnowledgeTheOperatorMayNotReadDoesNotHoldTheTrial) {
  testing::FakeCluster c(/*detect_anomalies=*/false);
  Json campaign = testing::TestCampaign("denied", 3, 1);
  campaign["spec"]["agents"]["knowledgeConfigMaps"] = Json::array({"site-failures"});
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", campaign).ok());
  c.ReconcileCampaignAndTrials("denied");
  c.ForEachJobWithoutPod(
      [&](const Json& tr) { c.FinishJob(kube::NameOf(tr), 1, "Error", "", kScratchLog); });
  c.client.InjectError("get", "configmaps",
                       Status(StatusCode::kPermissionDenied, "configmaps is forbidden"), 4);
  c.ReconcileTrials();
  const Json failed = c.Get(res::kTrialRuns, "denied-t001");
  ASSERT_EQ(failed["status"].value("phase", ""), "Failed") << failed.dump(2);
  EXPECT_NE(failed["status"]["failure"].value("signature", ""), "site-scratch-quota");
  bool told = false;
  for (const auto& e : c.List(res::kEvents)) {
    told |= e.value("reason", "") == "KnowledgeSkipped" &&
            e.value("message", "").find("not read") != std::string::npos;
  }
  EXPECT_TRUE(told);
}

}  // namespace
}  // namespace paratune::controllers
