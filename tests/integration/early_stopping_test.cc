// Early stopping on the local control plane (issue 13, item 4): a TrialRun whose trial-sim pods
// (run by paratune-kubelet-sim, no termination message) log step times that cannot beat the
// campaign's best is stopped while it runs: phase EarlyStopped with the evidence, its Job
// deleted, its accelerator-hours short of a full run; the same trial with
// spec.budget.earlyStopping: false runs to Succeeded with its metrics read from the log.
// The TrialRun controller runs in-process with the operator ServiceAccount's credentials; the
// campaign's status (its best) is written by the test, so no campaign reconciler runs.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "agents/trials/failure_analyzer.h"
#include "base/time_source.h"
#include "controllers/job_renderer.h"
#include "controllers/trial_reconciler.h"
#include "operator/manager.h"
#include "operator/rest_client.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/reliability_harness.h"

namespace paratune::kube {
namespace {

using namespace std::chrono_literals;

// A one-node simulated Megatron-LM campaign whose trials log one progress line a second.
Json Campaign(const std::string& name, bool early_stopping) {
  Json env = Json::array({{{"name", "PARATUNE_SIM_SECONDS_PER_LINE"}, {"value", "1.5"}},
                          {{"name", "PARATUNE_SIM_FAULT_RATE"}, {"value", "0"}}});
  Json container = {{"name", "trainer"},
                    {"image", "paratune/paratune:latest"},
                    {"command", {"paratune", "trial-sim"}},
                    {"env", env}};
  return {
      {"apiVersion", "tuning.paratune.dev/v1alpha1"},
      {"kind", "TuningCampaign"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"model", {{"preset", "llama3-8b"}}},
        {"training", {{"framework", "megatron-lm"}, {"seqLength", 8192}, {"globalBatchSize", 512}}},
        {"hardware", {{"accelerator", "nvidia-h100-80gb"}, {"nodes", 1}, {"devicesPerNode", 8}}},
        {"searchSpace", {{"parameters", Json::array({{{"name", "tp"}, {"values", {1, 2}}}})}}},
        {"objective", {{"metric", "mfu"}}},
        {"budget", {{"earlyStopping", early_stopping}, {"trialTimeout", "5m"}}},
        {"trialTemplate",
         {{"spec",
           {{"backoffLimit", 0},
            {"template",
             {{"spec",
               {{"restartPolicy", "Never"}, {"containers", Json::array({container})}}}}}}}}},
        {"metrics", {{"collector", "megatron-lm"}}}}}};
}

Json TrialRun(const std::string& campaign) {
  return {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
          {"kind", "TrialRun"},
          {"metadata", {{"name", campaign + "-t002"}}},
          {"spec",
           {{"campaignRef", {{"name", campaign}}},
            {"iteration", 2},
            {"config", {{"tp", 2}, {"pp", 1}, {"mbs", 1}, {"recompute", "full"}}}}}};
}

// The campaign's best so far: a measured mfu of 0.9, which no llama3-8b trial on H100s reaches.
void SetBest(KubeClient* admin, const std::string& ns, const std::string& campaign) {
  auto tc = admin->Get(resources::kTuningCampaigns, ns, campaign);
  ASSERT_TRUE(tc.ok());
  Json with = *tc;
  with["status"] = {{"phase", "Running"},
                    {"best", {{"trialName", campaign + "-t001"}, {"objective", 0.9}}}};
  ASSERT_TRUE(admin->UpdateStatus(resources::kTuningCampaigns, with).ok());
}

TEST(EarlyStoppingIntegrationTest, ALosingTrialIsStoppedWhileItRuns) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("earlystop");

  auto op = RestKubeClient::Create(cluster->OperatorConfig(), RealTimeSource::Get(), nullptr);
  ASSERT_TRUE(op.ok());
  ManagerOptions mo;
  mo.probe_address = "";
  mo.reflector.ns = ns;
  auto mgr = Manager::Create(mo, op->get(), RealTimeSource::Get(), nullptr);
  ASSERT_TRUE(mgr.ok());
  Informer* trials = (*mgr)->GetInformer(resources::kTrialRuns, ns);
  Informer* jobs = (*mgr)->GetInformer(resources::kJobs, ns);
  Informer* pods = (*mgr)->GetInformer(resources::kPods, ns);
  controllers::TrialInformers inf{trials, (*mgr)->GetInformer(resources::kTuningCampaigns, ns),
                                  jobs, pods};
  controllers::ConfigMapCache configmaps(op->get());
  controllers::CampaignKnowledge knowledge(
      &configmaps, "", nullptr,
      std::shared_ptr<const FailureAnalyzer>(MakeFallbackFailureAnalyzer()));
  controllers::TrialReconcilerOptions topts;
  topts.early_stop_interval = 1000ms;
  controllers::TrialRunReconciler reconciler(op->get(), inf, (*mgr)->recorder(), &knowledge,
                                             (*mgr)->time(), topts);
  Controller* tc = (*mgr)->NewController({"trialrun", 2, {}}, &reconciler);
  tc->For(trials);
  tc->Owns(jobs, "TrialRun");
  tc->Watches(pods, [](const Json& pod) {
    std::vector<ObjectKey> out;
    const Json& labels = pod.value("metadata", Json::object()).value("labels", Json::object());
    if (labels.is_object() && labels.contains(controllers::kTrialLabel)) {
      out.push_back({NamespaceOf(pod), labels[controllers::kTrialLabel].get<std::string>()});
    }
    return out;
  });
  std::stop_source stop;
  std::thread run([&] { (void)(*mgr)->Run(stop.get_token()); });

  for (bool early_stopping : {true, false}) {
    const std::string name = early_stopping ? "losing" : "runs-on";
    ASSERT_TRUE(
        admin->Create(resources::kTuningCampaigns, ns, Campaign(name, early_stopping)).ok());
    SetBest(admin, ns, name);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(admin->Create(resources::kTrialRuns, ns, TrialRun(name)).ok());
    auto status = [&] {
      auto tr = admin->Get(resources::kTrialRuns, ns, name + "-t002");
      return tr.ok() ? tr->value("status", Json::object()) : Json::object();
    };
    auto ended = [&] {
      const std::string p = status().value("phase", "");
      return p == "EarlyStopped" || p == "Succeeded" || p == "Failed";
    };
    ASSERT_TRUE(testing::WaitFor(ended, 150s)) << status().dump(2);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Json st = status();
    if (early_stopping) {
      ASSERT_EQ(st.value("phase", ""), "EarlyStopped") << st.dump(2);
      const Json& e = st["earlyStop"];
      EXPECT_GE(e.value("stepsSeen", 0), 3);
      EXPECT_LT(e.value("stepsSeen", 0), 9) << "stopped only at the end of the run";
      EXPECT_EQ(e.value("bestTrial", ""), name + "-t001");
      EXPECT_LT(e.value("optimisticObjective", 1.0), 0.9);
      EXPECT_EQ(st["metricsSource"].value("from", ""), "log");
      EXPECT_GT(st["metrics"].value("mfu", 0.0), 0.1);  // the partial measurement
      EXPECT_GT(st.value("acceleratorHours", 0.0), 0.0);
      // The Job (and with it the pod) is deleted.
      EXPECT_TRUE(testing::WaitFor(
          [&] {
            auto job = admin->Get(resources::kJobs, ns, name + "-t002");
            return !job.ok() && job.status().code() == StatusCode::kNotFound;
          },
          30s));
      std::printf(
          "early stopping on the local control plane: stopped after %d steady steps, "
          "%.1f s after creation; %s\n",
          e.value("stepsSeen", 0), seconds, e.value("summary", "").c_str());
    } else {
      ASSERT_EQ(st.value("phase", ""), "Succeeded") << st.dump(2);
      EXPECT_FALSE(st.contains("earlyStop"));
      EXPECT_EQ(st["metricsSource"].value("from", ""), "log");
      EXPECT_GT(st.value("acceleratorHours", 0.0), 0.0);
      std::printf("without early stopping the same trial ran to its end: %.1f s\n", seconds);
    }
  }
  stop.request_stop();
  run.join();
}

}  // namespace
}  // namespace paratune::kube
