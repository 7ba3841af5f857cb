// `paratune report CAMPAIGN` against a live cluster (issue 38): the built CLI reads a campaign
// and its TrialRuns with a kubeconfig (no operator needed: the test writes their status as the
// operator would) and renders the same report as `--from`, naming the best trial.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>

#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

Json TrialRun(const std::string& campaign, int iteration, int tp, double mfu) {
  const std::string name = campaign + "-t00" + std::to_string(iteration);
  return {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
          {"kind", "TrialRun"},
          {"metadata", {{"name", name}, {"labels", {{"tuning.paratune.dev/campaign", campaign}}}}},
          {"spec",
           {{"campaignRef", {{"name", campaign}}},
            {"iteration", iteration},
            {"config", {{"tp", tp}, {"pp", 1}, {"mbs", 1}, {"recompute", "selective"}}},
            {"proposal", {{"rationale", "tp " + std::to_string(tp)}, {"proposedBy", "builtin"}}}}},
          {"status",
           {{"phase", "Succeeded"},
            {"objective", mfu},
            {"metrics", {{"mfu", mfu}, {"stepTimeSeconds", 3.0 / mfu}}}}}};
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReportClusterTest, ReportsACampaignReadFromTheCluster) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("report");
  Json campaign = SimCampaign("rep", 2, 1);
  auto created = admin->Create(resources::kTuningCampaigns, ns, campaign);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  for (auto [iteration, tp, mfu] : {std::tuple{1, 1, 0.31}, std::tuple{2, 2, 0.42}}) {
    auto tr = admin->Create(resources::kTrialRuns, ns, TrialRun("rep", iteration, tp, mfu));
    ASSERT_TRUE(tr.ok()) << tr.status().ToString();
    (*tr)["status"] = TrialRun("rep", iteration, tp, mfu)["status"];
    ASSERT_TRUE(admin->UpdateStatus(resources::kTrialRuns, *tr).ok());
  }
  (*created)["status"] = {
      {"phase", "Succeeded"},
      {"iteration", 2},
      {"trials", {{"total", 2}, {"succeeded", 2}}},
      {"baseline", {{"trialName", "rep-t001"}, {"objective", 0.31}}},
      {"best",
       {{"trialName", "rep-t002"}, {"objective", 0.42}, {"improvementOverBaseline", 0.3548}}}};
  auto st = admin->UpdateStatus(resources::kTuningCampaigns, *created);
  ASSERT_TRUE(st.ok()) << st.status().ToString();

  const std::string out = cluster->dir() + "/" + ns + "-report";
  const std::string cli = std::string(PARATUNE_BINARY_DIR) + "/bin/paratune";
  const std::string cmd = cli + " report rep -n " + ns + " --kubeconfig " + cluster->dir() +
                          "/kubeconfig --out " + out + " > " + out + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << ReadAll(out + ".log");
  const std::string md = ReadAll(out + "/report.md");
  EXPECT_NE(md.find("rep-t002"), std::string::npos) << md;
  EXPECT_NE(ReadAll(out + "/objective.svg").find("<svg"), std::string::npos);
  EXPECT_NE(ReadAll(out + "/campaign-result.json").find("\"rep-t001\""), std::string::npos);

  // A campaign that does not exist: exit 2 naming it.
  const std::string missing = cli + " report nope -n " + ns + " --kubeconfig " + cluster->dir() +
                              "/kubeconfig > " + out + ".missing 2>&1";
  const int rc = std::system(missing.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2) << ReadAll(out + ".missing");
  EXPECT_NE(ReadAll(out + ".missing").find(ns + "/nope"), std::string::npos);
}

}  // namespace
}  // namespace paratune::kube::testing
