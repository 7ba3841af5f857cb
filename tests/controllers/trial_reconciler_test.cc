// The TrialRun reconciler on multi-pod trials without termination messages (issue 13): metrics
// from the rank the framework logs on (status.metricsSource), early stopping of a losing trial
// (EarlyStopped, evidence, Job deleted) and accelerator-hours.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "agents/core/campaign.h"
#include "base/time_source.h"
#include "base/yaml.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
namespace res = kube::resources;

constexpr const char* kCampaign = "mega";
constexpr const char* kTrial = "mega-t002";

std::string StepLines(double tflops, int lines) {
  std::string log = "training ...\n";
  for (int i = 1; i <= lines; ++i) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  " [2026-11-21 05:40:01] iteration %8d/     100 | elapsed time per iteration "
                  "(ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | global batch size:   512 "
                  "|\n",
                  10 * i, 9000.0 * 400.0 / tflops * (i % 2 ? 1.004 : 0.996), tflops);
    log += buf;
  }
  return log;
}

// A two-node Megatron-LM campaign whose best so far has mfu `best_mfu`.
void CreateCampaign(FakeCluster& c, double best_mfu, bool early_stopping = true) {
  auto j = YamlToJson(R"(
apiVersion: tuning.paratune.dev/v1alpha1
kind: TuningCampaign
metadata: {name: mega, namespace: ns}
spec:
  model: {preset: llama3-8b}
  training: {framework: megatron-lm, seqLength: 8192, globalBatchSize: 512}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 2, devicesPerNode: 8}
  searchSpace:
    parameters:
    - {name: tp, values: [1, 2, 4]}
    - {name: mbs, values: [1, 2]}
  objective: {metric: mfu}
  metrics: {collector: megatron-lm}
)");
  ASSERT_TRUE(j.ok());
  Json campaign = *j;
  campaign["spec"]["budget"]["earlyStopping"] = early_stopping;
  auto created = c.client.Create(res::kTuningCampaigns, "ns", campaign);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Json with_status = *created;
  with_status["status"] = {{"phase", "Running"},
                           {"best", {{"trialName", "mega-t001"}, {"objective", best_mfu}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kTuningCampaigns, with_status).ok());
  Json trial = {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
                {"kind", "TrialRun"},
                {"metadata", {{"name", kTrial}, {"namespace", "ns"}}},
                {"spec",
                 {{"campaignRef", {{"name", kCampaign}}},
                  {"iteration", 2},
                  {"config", {{"tp", 2}, {"mbs", 1}}}}}};
  ASSERT_TRUE(c.client.Create(res::kTrialRuns, "ns", trial).ok());
}

// Pod `index` of the trial's Indexed Job, in `phase`, with `log`.
void AddPod(FakeCluster& c, int index, const std::string& phase, const std::string& log) {
  const std::string name = std::string(kTrial) + "-" + std::to_string(index) + "-x";
  Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "ns"},
        {"labels", {{"tuning.paratune.dev/trial", kTrial}}},
        {"annotations", {{"batch.kubernetes.io/job-completion-index", std::to_string(index)}}}}},
      {"spec",
       {{"nodeName", "gpu-" + std::to_string(index)}, {"containers", {{{"name", "trainer"}}}}}}};
  auto created = c.client.Create(res::kPods, "ns", pod);
  ASSERT_TRUE(created.ok());
  Json p = *created;
  Json state = {{"running", {{"startedAt", "2026-11-21T05:00:00Z"}}}};
  if (phase == "Succeeded") {
    state = {{"terminated",
              {{"exitCode", 0},
               {"reason", "Completed"},
               {"finishedAt", "2026-11-21T05:30:00Z"}}}};  // no termination message
  }
  p["status"] = {{"phase", phase},
                 {"startTime", "2026-11-21T05:00:00Z"},
                 {"containerStatuses", {{{"name", "trainer"}, {"state", state}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kPods, p).ok());
  c.client.SetPodLog("ns", name, log);
}

Json ReconcileTrial(FakeCluster& c) {
  c.Sync();
  auto r = c.trial_reconciler->Reconcile({"ns", kTrial});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return c.Get(res::kTrialRuns, kTrial).value("status", Json::object());
}

const char* kRankZeroLog =
    "using world size: 16\n[Rank 0] (after 10 iterations) memory (MB) | allocated: 40960.00 | "
    "max allocated: 61440.00 | reserved: 62000.00 | max reserved: 62000.00\n";

TEST(TrialReconcilerTest, MultiNodeMegatronTrialTakesItsMetricsFromTheLastRank) {
  FakeCluster c;
  CreateCampaign(c, 0.0);
  // The Indexed Job is created; its status waits for the pods (first_status_wait).
  EXPECT_EQ(ReconcileTrial(c).value("phase", ""), "");
  ASSERT_FALSE(c.Get(res::kJobs, kTrial).is_null());
  AddPod(c, 0, "Succeeded", kRankZeroLog);
  AddPod(c, 1, "Succeeded", StepLines(400, 8));
  Json job = c.Get(res::kJobs, kTrial);
  job["status"] = {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
  Json st = ReconcileTrial(c);
  ASSERT_EQ(st.value("phase", ""), "Succeeded") << st.dump();
  EXPECT_EQ(st["metricsSource"]["pod"], std::string(kTrial) + "-1-x");
  EXPECT_EQ(st["metricsSource"]["rank"], 1);
  EXPECT_EQ(st["metricsSource"]["from"], "log");
  EXPECT_EQ(st["metricsSource"]["memoryPod"], std::string(kTrial) + "-0-x");
  EXPECT_NEAR(st["metrics"]["tflopsPerDevice"].get<double>(), 400, 1e-6);
  EXPECT_NEAR(st["metrics"]["peakMemoryGiB"].get<double>(), 60, 1e-6);
  // 16 GPUs for 30 minutes.
  EXPECT_DOUBLE_EQ(st["acceleratorHours"].get<double>(), 8.0);
}

// A finished trial whose last rank logged Megatron-LM iterations of `step_ms` (global batch
// 512, no --log-throughput) and whose rank 0 logged memory; the trial's status after that.
Json FinishWithMegatronSteps(FakeCluster& c, const std::string& step_ms) {
  CreateCampaign(c, 0.0, /*early_stopping=*/false);
  ReconcileTrial(c);
  std::string log = "training ...\n";
  for (int i = 1; i <= 6; ++i) {
    log += " [2026-11-21 05:40:01] iteration " + std::to_string(10 * i) +
           "/     100 | elapsed time per iteration (ms): " + step_ms +
           " | global batch size:   512 |\n";
  }
  AddPod(c, 0, "Succeeded", kRankZeroLog);
  AddPod(c, 1, "Succeeded", log);
  Json job = c.Get(res::kJobs, kTrial);
  job["status"] = {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
  EXPECT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
  return ReconcileTrial(c);
}

// Issue 35: Megatron-LM without --log-throughput prints no TFLOP/s; the objective (mfu) is
// derived from the measured step time and the model's FLOPs, and the status says so. (Llama 3
// 8B, 512 x 8192 tokens a step on 16 GPUs in 30 s: about 506 TFLOP/s per GPU.)
TEST(TrialReconcilerTest, AnObjectiveTheLogLacksIsDerivedAndItsSourceRecorded) {
  FakeCluster c;
  Json st = FinishWithMegatronSteps(c, "30000.0");
  ASSERT_EQ(st.value("phase", ""), "Succeeded") << st.dump();
  EXPECT_GT(st.value("objective", 0.0), 0.1) << st.dump();
  EXPECT_LT(st.value("objective", 1.0), 1.0) << st.dump();
  EXPECT_EQ(st["metricSources"]["mfu"], "derived") << st.dump();
  EXPECT_EQ(st["metricSources"]["stepTimeSeconds"], "log") << st.dump();
  EXPECT_FALSE(st.contains("metricsWarnings")) << "nothing corrected or dropped: " << st.dump();
}

// The same run in 9 s a step would be 1,687 TFLOP/s per GPU, over the H100's 989: the campaign
// is not the run that printed the log, and the objective is missing with that reason, not an
// MFU of 1.7.
TEST(TrialReconcilerTest, AnImpossibleDerivedObjectiveIsMissingWithTheReason) {
  FakeCluster c;
  Json st = FinishWithMegatronSteps(c, "9000.0");
  ASSERT_EQ(st.value("phase", ""), "Succeeded") << st.dump();
  EXPECT_FALSE(st.contains("objective")) << st.dump();
  EXPECT_FALSE(st["metricSources"].contains("mfu")) << st.dump();
  bool missing = false;
  for (const Json& cond : st["conditions"]) {
    if (cond.value("type", "") == "ObjectiveMissing") {
      missing =
          cond.value("status", "") == "True" &&
          cond.value("message", "").find("exceed the accelerator's peak") != std::string::npos;
    }
  }
  EXPECT_TRUE(missing) << st.dump();
  // The collector's note on how it read the log is a Normal Event on the TrialRun.
  bool note = false;
  for (const auto& e : c.List(res::kEvents)) {
    note =
        note || (e.value("reason", "") == "MetricsRead" && e.value("type", "") == "Normal" &&
                 e["involvedObject"].value("kind", "") == "TrialRun" &&
                 e.value("message", "").find("TFLOP/s and MFU are left out") != std::string::npos);
  }
  EXPECT_TRUE(note);
  // ... and stays in its status, where Events expire.
  ASSERT_TRUE(st.contains("metricsWarnings")) << st.dump();
  ASSERT_EQ(st["metricsWarnings"].size(), 1u) << st.dump();
  EXPECT_NE(st["metricsWarnings"][0].get<std::string>().find("TFLOP/s and MFU are left out"),
            std::string::npos)
      << st.dump();
}

// A succeeded trial whose log gives no time at all: no objective (not 0), ObjectiveMissing, and
// a Warning Event on the campaign naming what the log lacked.
TEST(TrialReconcilerTest, ASucceededTrialWithoutItsObjectiveSaysWhy) {
  FakeCluster c;
  CreateCampaign(c, 0.0, /*early_stopping=*/false);
  ReconcileTrial(c);
  AddPod(c, 0, "Succeeded", kRankZeroLog);
  AddPod(c, 1, "Succeeded",
         " iteration       10/     100 | elapsed time per iteration (ms): 0.0 | global batch "
         "size:   512 |\n");
  Json job = c.Get(res::kJobs, kTrial);
  job["status"] = {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
  Json st = ReconcileTrial(c);
  ASSERT_EQ(st.value("phase", ""), "Succeeded") << st.dump();
  EXPECT_FALSE(st.contains("objective")) << st.dump();
  bool condition = false;
  for (const auto& cond : st.value("conditions", Json::array())) {
    if (cond.value("type", "") == "ObjectiveMissing" && cond.value("status", "") == "True") {
      condition = cond.value("message", "").find("no step time") != std::string::npos;
    }
  }
  EXPECT_TRUE(condition) << st.dump();
  bool event = false;
  for (const auto& e : c.List(res::kEvents)) {
    event = event || (e.value("reason", "") == "ObjectiveMissing" &&
                      e.value("message", "").find("--log-throughput") != std::string::npos);
  }
  EXPECT_TRUE(event);
}

TEST(TrialReconcilerTest, ALosingTrialIsStoppedEarlyWithItsEvidence) {
  FakeCluster c;
  CreateCampaign(c, 0.60);  // the best so far: mfu 0.60 (593 TFLOP/s on an H100)
  ReconcileTrial(c);
  ASSERT_FALSE(c.Get(res::kJobs, kTrial).is_null());
  AddPod(c, 0, "Running", kRankZeroLog);
  AddPod(c, 1, "Running", StepLines(300, 6));  // mfu ~0.30
  Json st = ReconcileTrial(c);
  ASSERT_EQ(st.value("phase", ""), "EarlyStopped") << st.dump();
  EXPECT_EQ(st["earlyStop"]["bestTrial"], "mega-t001");
  EXPECT_EQ(st["earlyStop"]["stepsSeen"], 5);  // six logged, the first is warm-up
  EXPECT_NEAR(st["earlyStop"]["bestObjective"].get<double>(), 0.60, 1e-9);
  EXPECT_LT(st["earlyStop"]["optimisticObjective"].get<double>(), 0.60);
  EXPECT_NEAR(st["objective"].get<double>(), 300 / 989.0, 0.01);
  EXPECT_EQ(st["metricsSource"]["rank"], 1);
  EXPECT_GT(st["acceleratorHours"].get<double>(), 0);
  // The Job is gone, and the trial counts as measured for the campaign.
  EXPECT_TRUE(c.Get(res::kJobs, kTrial).is_null());
  auto stopped = TrialRunStatusOf(c.Get(res::kTrialRuns, kTrial));
  ASSERT_TRUE(stopped.ok()) << stopped.status().message();
  TrialOutcome o = OutcomeFromTrialRun(kTrial, *stopped);
  EXPECT_TRUE(o.succeeded);
  ASSERT_TRUE(o.metrics.has_value());
  EXPECT_NEAR(o.metrics->tflops_per_device, 300, 1e-6);
  // Terminal: never relaunched.
  ReconcileTrial(c);
  EXPECT_TRUE(c.Get(res::kJobs, kTrial).is_null());
}

TEST(TrialReconcilerTest, ATrialWithinNoiseOfTheBestOrWithEarlyStoppingOffRunsOn) {
  {
    FakeCluster c;
    CreateCampaign(c, 0.40);
    ReconcileTrial(c);
    AddPod(c, 1, "Running", StepLines(393, 6));  // mfu 0.397: 1% behind, within the margin
    EXPECT_EQ(ReconcileTrial(c).value("phase", ""), "Running");
    EXPECT_FALSE(c.Get(res::kJobs, kTrial).is_null());
  }
  {
    FakeCluster c;
    CreateCampaign(c, 0.60, /*early_stopping=*/false);
    ReconcileTrial(c);
    AddPod(c, 1, "Running", StepLines(300, 6));
    EXPECT_EQ(ReconcileTrial(c).value("phase", ""), "Running");
    EXPECT_FALSE(c.Get(res::kJobs, kTrial).is_null());
  }
}
}  // namespace
}  // namespace paratune::controllers

namespace paratune::controllers {
namespace {

// Issue 17: a TrialRun's status is written once per meaningful change. A reconcile that finds
// nothing new (the Job's own event, a pod placed but not started) sends no PATCH; the placement
// goes out with the Running phase.
// Issue 17: a trial whose pods start within first_status_wait of its Job costs one status
// write (Running, with jobName and the JobCreated condition), not two.
TEST(TrialReconcilerTest, StatusIsPatchedOnlyWhenThePhaseMoves) {
  FakeCluster c;
  CreateCampaign(c, 0.0);
  c.client.ResetCalls();
  auto launched = c.trial_reconciler->Reconcile({"ns", kTrial});
  ASSERT_TRUE(launched.ok()) << launched.status().ToString();
  const int creates = c.client.Calls("create");  // the Indexed Job and its headless Service
  ASSERT_FALSE(c.Get(res::kJobs, kTrial).is_null());
  EXPECT_EQ(c.client.Calls("patch"), 0) << "the status waits for the pods";
  EXPECT_EQ(launched->requeue_after, Millis(10000))
      << "and is written after the wait at the latest";
  Json st = ReconcileTrial(c);  // the Job's add event: nothing new
  EXPECT_FALSE(st.contains("nodeNames"));
  EXPECT_EQ(c.client.Calls("patch"), 0) << "no pods yet is no status write";
  EXPECT_EQ(c.client.Calls("create"), creates) << "the Job is found, not created again";
  AddPod(c, 0, "Pending", "");  // placed on gpu-0, not started
  c.client.ResetCalls();
  st = ReconcileTrial(c);
  EXPECT_EQ(st.value("phase", ""), "");
  EXPECT_EQ(c.client.Calls("patch"), 0) << "a pod placed but not running is no status write";
  Json pod = c.Get(res::kPods, std::string(kTrial) + "-0-x");
  pod["status"]["phase"] = "Running";
  ASSERT_TRUE(c.client.UpdateStatus(res::kPods, pod).ok());
  c.client.ResetCalls();
  st = ReconcileTrial(c);
  EXPECT_EQ(st.value("phase", ""), "Running");
  EXPECT_EQ(st.value("jobName", ""), kTrial);
  EXPECT_EQ(st["nodeNames"], Json::array({"gpu-0"}));
  ASSERT_EQ(st["conditions"].size(), 1u) << st.dump();
  EXPECT_EQ(st["conditions"][0]["type"], "JobCreated");
  EXPECT_EQ(st["conditions"][0]["lastTransitionTime"],
            c.Get(res::kJobs, kTrial)["metadata"]["creationTimestamp"])
      << "JobCreated tells when the Job was created, not when it was written";
  EXPECT_EQ(c.client.Calls("patch"), 1);
  c.client.ResetCalls();
  ReconcileTrial(c);
  EXPECT_EQ(c.client.Calls("patch"), 0) << "a second look at an unchanged trial writes nothing";
  // The pod finished; the Job controller has not marked the Job Complete yet (seconds under
  // load): the trial is still Running, not back to Pending, and nothing is written.
  pod = c.Get(res::kPods, std::string(kTrial) + "-0-x");
  pod["status"]["phase"] = "Succeeded";
  pod["status"]["containerStatuses"][0]["state"] = {
      {"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kPods, pod).ok());
  c.client.ResetCalls();
  st = ReconcileTrial(c);
  EXPECT_EQ(st.value("phase", ""), "Running");
  EXPECT_EQ(c.client.Calls("patch"), 0) << "a pod that ended before its Job is no status write";
}

// A Job whose pods have not started when first_status_wait has passed is written Pending with
// its name at once (users and `kubectl get trialruns` see the Job), then Running.
TEST(TrialReconcilerTest, AJobWhosePodsWaitIsWrittenPendingAfterTheWait) {
  FakeTimeSource clock;  // the fake API server stamps objects with the real time
  clock.Advance(
      std::chrono::duration_cast<Millis>(std::chrono::system_clock::now() - clock.SystemNow()));
  FakeCluster c(/*detect_anomalies=*/true, &clock);
  CreateCampaign(c, 0.0);
  c.client.ResetCalls();
  EXPECT_EQ(ReconcileTrial(c).value("phase", ""), "");
  clock.Advance(Millis(4000));
  AddPod(c, 0, "Pending", "");
  auto waiting = c.trial_reconciler->Reconcile({"ns", kTrial});
  ASSERT_TRUE(waiting.ok());
  EXPECT_GT(waiting->requeue_after, Millis(0));
  EXPECT_LE(waiting->requeue_after, Millis(7000)) << "the wait counts from the Job's creation";
  EXPECT_EQ(c.client.Calls("patch"), 0);
  clock.Advance(Millis(7000));
  Json st = ReconcileTrial(c);
  EXPECT_EQ(st.value("phase", ""), "Pending");
  EXPECT_EQ(st.value("jobName", ""), kTrial);
  ASSERT_FALSE(st["conditions"].empty());
  EXPECT_EQ(st["conditions"][0]["type"], "JobCreated");
  EXPECT_EQ(c.client.Calls("patch"), 1);
  Json pod = c.Get(res::kPods, std::string(kTrial) + "-0-x");
  pod["status"]["phase"] = "Running";
  ASSERT_TRUE(c.client.UpdateStatus(res::kPods, pod).ok());
  EXPECT_EQ(ReconcileTrial(c).value("phase", ""), "Running");
  EXPECT_EQ(c.client.Calls("patch"), 2);
}

// A TrialRun whose spec a user edited into the wrong shape fails with the field named, and no
// Job is created for it.
TEST(TrialReconcilerTest, ASpecOfTheWrongShapeFailsTheTrialNamingTheField) {
  FakeCluster c;
  CreateCampaign(c, 0.0);
  Json trial = c.Get(res::kTrialRuns, kTrial);
  trial["spec"]["avoidNodes"] = {"gpu-1", 7};
  ASSERT_TRUE(c.client.Update(res::kTrialRuns, trial).ok());
  c.client.ResetCalls();
  Json st = ReconcileTrial(c);
  EXPECT_EQ(st.value("phase", ""), "Failed") << st.dump();
  EXPECT_NE(st.dump().find("spec.avoidNodes[1]"), std::string::npos) << st.dump();
  EXPECT_EQ(c.client.Calls("create"), 0);
}

}  // namespace
}  // namespace paratune::controllers
