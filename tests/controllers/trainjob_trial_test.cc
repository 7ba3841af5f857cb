// A trial run as a Kubeflow Trainer v2 TrainJob (issue 38) against the fake API server: the test
// plays Trainer and JobSet (the trainer pods of the JobSet Trainer makes of the TrainJob, with
// the labels of paratune's runtime patch, and the TrainJob's conditions). The TrialRun follows
// the TrainJob's status, reads Megatron-LM's metrics from the last rank, diagnoses a failure
// from its pods, and deletes the TrainJob when the trial outlives its timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "base/time_source.h"
#include "base/yaml.h"
#include "controllers/trainjob_renderer.h"
#include "controllers/trial_evidence.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
namespace res = kube::resources;

constexpr const char* kTrial = "tj-t001";

void CreateCampaignAndTrial(FakeCluster& c, const std::string& timeout = "30m") {
  auto j = YamlToJson(R"(
apiVersion: tuning.paratune.dev/v1alpha1
kind: TuningCampaign
metadata: {name: tj, namespace: ns}
spec:
  model: {preset: llama3-8b}
  training: {framework: megatron-lm, seqLength: 8192, globalBatchSize: 512}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 2, devicesPerNode: 8}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}, {name: mbs, values: [1, 2]}]}
  objective: {metric: mfu}
  budget: {earlyStopping: false}
  trialTemplate:
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: TrainJob
    spec:
      runtimeRef: {name: megatron-torch}
      trainer:
        image: nvcr.io/nvidia/nemo:25.04
        args: [--tensor-model-parallel-size, $(PARATUNE_TP)]
)");
  ASSERT_TRUE(j.ok());
  Json campaign = *j;
  campaign["spec"]["budget"]["trialTimeout"] = timeout;
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", campaign).ok());
  Json trial = {
      {"apiVersion", "tuning.paratune.dev/v1alpha1"},
      {"kind", "TrialRun"},
      {"metadata", {{"name", kTrial}, {"namespace", "ns"}, {"uid", "trial-uid"}}},
      {"spec",
       {{"campaignRef", {{"name", "tj"}}}, {"iteration", 1}, {"config", {{"tp", 2}, {"mbs", 1}}}}}};
  ASSERT_TRUE(c.client.Create(res::kTrialRuns, "ns", trial).ok());
}

std::string MegatronLog(double tflops) {
  std::string log;
  for (int i = 1; i <= 6; ++i) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  " [2026-11-21 05:40:01] iteration %8d/     100 | elapsed time per iteration "
                  "(ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | global batch size:   512 "
                  "|\n",
                  10 * i, 9000.0 * 400.0 / tflops, tflops);
    log += buf;
  }
  return log;
}

// Plays Trainer's JobSet: the trainer pod of node rank `rank` (replicated job "node", labelled
// as paratune's runtime patch asks), terminated with `exit_code` / `reason`, printing `log`.
void AddTrainerPod(FakeCluster& c, int rank, int exit_code, const std::string& reason,
                   const std::string& log,
                   const std::string& finished_at = "2026-11-21T05:20:00Z") {
  const std::string name = std::string(kTrial) + "-node-0-" + std::to_string(rank) + "-x";
  Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "ns"},
        {"labels",
         {{kTrialLabel, kTrial},
          {kCampaignLabel, "tj"},
          {"jobset.sigs.k8s.io/jobset-name", kTrial},
          {"jobset.sigs.k8s.io/replicatedjob-name", "node"}}},
        {"annotations", {{"batch.kubernetes.io/job-completion-index", std::to_string(rank)}}}}},
      {"spec",
       {{"nodeName", "gpu-" + std::to_string(rank)}, {"containers", {{{"name", "node"}}}}}}};
  auto created = c.client.Create(res::kPods, "ns", pod);
  ASSERT_TRUE(created.ok());
  Json p = *created;
  p["status"] = {
      {"phase", exit_code == 0 ? "Succeeded" : "Failed"},
      {"startTime", "2026-11-21T05:00:00Z"},
      {"containerStatuses",
       {{{"name", "node"},
         {"state",
          {{"terminated",
            {{"exitCode", exit_code}, {"reason", reason}, {"finishedAt", finished_at}}}}}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kPods, p).ok());
  c.client.SetPodLog("ns", name, log);
}

// Plays Trainer's TrainJob controller: condition `type` True.
void SetTrainJobCondition(FakeCluster& c, const std::string& type, const std::string& reason,
                          const std::string& message) {
  Json tj = c.Get(kTrainJobs, kTrial);
  ASSERT_FALSE(tj.is_null());
  tj["status"] = {
      {"conditions",
       {{{"type", type}, {"status", "True"}, {"reason", reason}, {"message", message}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(kTrainJobs, tj).ok());
}

Json Reconcile(FakeCluster& c) {
  auto r = c.trial_reconciler->Reconcile({"ns", kTrial});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return c.Get(res::kTrialRuns, kTrial).value("status", Json::object());
}

TEST(TrainJobTrialTest, RunsToCompletionWithMetricsFromTheLastRank) {
  FakeCluster c;
  CreateCampaignAndTrial(c);
  Reconcile(c);
  const Json tj = c.Get(kTrainJobs, kTrial);
  ASSERT_FALSE(tj.is_null()) << "the trial's TrainJob must be created";
  EXPECT_TRUE(c.Get(res::kJobs, kTrial).is_null()) << "no Job beside it";
  EXPECT_EQ(tj["spec"]["trainer"]["numNodes"], 2);
  EXPECT_EQ(tj["metadata"]["ownerReferences"][0]["uid"],
            kube::UidOf(c.Get(res::kTrialRuns, kTrial)));
  AddTrainerPod(c, 0, 0, "Completed", "[Rank 0] starting\n");
  AddTrainerPod(c, 1, 0, "Completed", MegatronLog(400.0));
  SetTrainJobCondition(c, "Complete", "JobSetCompleted", "jobset completed");
  const Json st = Reconcile(c);
  ASSERT_EQ(st.value("phase", ""), "Succeeded") << st.dump();
  EXPECT_NEAR(st["metrics"].value("tflopsPerDevice", 0.0), 400.0, 1.0);
  // Megatron-LM prints on the last rank: node rank 1's pod.
  EXPECT_EQ(st["metricsSource"].value("pod", ""), std::string(kTrial) + "-node-0-1-x") << st.dump();
  EXPECT_GT(st.value("acceleratorHours", 0.0), 0.0);
}

TEST(TrainJobTrialTest, AFailedTrainJobIsDiagnosedFromItsPods) {
  FakeCluster c;
  CreateCampaignAndTrial(c);
  Reconcile(c);
  AddTrainerPod(c, 0, 1, "Error",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                "has a total capacity of 79.11 GiB of which 1.02 GiB is free.\n");
  AddTrainerPod(c, 1, 0, "Completed", "");
  SetTrainJobCondition(c, "Failed", "JobSetFailed", "jobset failed: child job node failed");
  const Json st = Reconcile(c);
  ASSERT_EQ(st.value("phase", ""), "Failed") << st.dump();
  EXPECT_EQ(st["observed"].value("podReason", ""), "Error");
  EXPECT_NE(st["observed"].value("logTail", "").find("CUDA out of memory"), std::string::npos);
  EXPECT_EQ(st["failure"].value("category", ""), "CudaOOM") << st.dump();
}

// The pod that failed first is the cause: rank 1 ran out of memory, and rank 0 died ten minutes
// later in NCCL's watchdog waiting for it. The diagnosis reads rank 1, not the first pod listed.
TEST(TrainJobTrialTest, TheFirstPodToFailIsTheEvidence) {
  FakeCluster c;
  CreateCampaignAndTrial(c);
  Reconcile(c);
  AddTrainerPod(c, 0, 1, "Error",
                "[rank0]:[E1121 05:30:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=1204, OpType=ALLREDUCE, "
                "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600017 milliseconds before "
                "timing out.\n",
                "2026-11-21T05:30:00Z");
  AddTrainerPod(c, 1, 1, "Error",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                "has a total capacity of 79.11 GiB of which 1.02 GiB is free.\n",
                "2026-11-21T05:20:00Z");
  SetTrainJobCondition(c, "Failed", "JobSetFailed", "jobset failed: child job node failed");
  const Json st = Reconcile(c);
  ASSERT_EQ(st.value("phase", ""), "Failed") << st.dump();
  EXPECT_EQ(st["failure"].value("category", ""), "CudaOOM") << st.dump();
  EXPECT_EQ(st["observed"].value("pod", ""), std::string(kTrial) + "-node-0-1-x") << st.dump();
}

// A pod deleted between the list and the read of its log (the Job controller deletes the pods
// still active when the Job fails): the next pod's log, exit and events are the evidence, not
// an empty log (a clean-clone CI run saw that: a diagnosis from events alone).
TEST(TrainJobTrialTest, AFailedPodGoneBeforeItsLogIsReadGivesWayToTheNext) {
  FakeCluster c;
  CreateCampaignAndTrial(c);
  Reconcile(c);
  AddTrainerPod(c, 0, 1, "Error", "torch.OutOfMemoryError: CUDA out of memory.\n",
                "2026-11-21T05:20:00Z");
  AddTrainerPod(c, 1, 1, "Error",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                "has a total capacity of 79.11 GiB of which 1.02 GiB is free.\n",
                "2026-11-21T05:20:01Z");
  SetTrainJobCondition(c, "Failed", "JobSetFailed", "jobset failed: child job node failed");
  c.client.InjectError("log", "pods", Status::NotFound("pods \"tj-t001-node-0-0-x\" not found"));
  const Json st = Reconcile(c);
  ASSERT_EQ(st.value("phase", ""), "Failed") << st.dump();
  EXPECT_EQ(st["observed"].value("pod", ""), std::string(kTrial) + "-node-0-1-x") << st.dump();
  EXPECT_NE(st["observed"].value("logTail", "").find("CUDA out of memory"), std::string::npos)
      << st.dump();
  EXPECT_EQ(st["failure"].value("category", ""), "CudaOOM") << st.dump();
}

// The failed pod's log is the diagnosis's evidence: a read the API server answers 503 (its
// proxy to the kubelet) is retried with the reconcile's backoff while the pod finished less than
// a minute ago, not replaced by a diagnosis without the log; later, the trial ends with what
// there is.
TEST(TrainJobTrialTest, AFailedPodsLogThatCannotBeReadYetIsReadAgain) {
  FakeTimeSource clock;
  SystemTime finished;
  ASSERT_TRUE(ParseRfc3339("2026-11-21T05:20:00Z", &finished));  // AddTrainerPod's finishedAt
  clock.Advance(std::chrono::duration_cast<Millis>(finished - clock.SystemNow()) + Millis(5000));
  FakeCluster c(/*detect_anomalies=*/true, &clock);
  CreateCampaignAndTrial(c);
  Reconcile(c);
  AddTrainerPod(c, 0, 1, "Error",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n");
  AddTrainerPod(c, 1, 0, "Completed", "");
  SetTrainJobCondition(c, "Failed", "JobSetFailed", "jobset failed: child job node failed");
  c.Sync();
  c.client.InjectError("log", "pods", Status::Unavailable("error dialing backend"));
  auto r = c.trial_reconciler->Reconcile({"ns", kTrial});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  const Json waiting = c.Get(res::kTrialRuns, kTrial).value("status", Json::object());
  EXPECT_NE(waiting.value("phase", ""), "Failed") << waiting.dump();
  EXPECT_FALSE(waiting.contains("failure")) << waiting.dump();
  const Json st = Reconcile(c);  // the retry reads it
  ASSERT_EQ(st.value("phase", ""), "Failed") << st.dump();
  EXPECT_EQ(st["failure"].value("category", ""), "CudaOOM") << st.dump();

  TrialPod pod;
  pod.finished_at = finished;
  const Status unavailable = Status::Unavailable("503");
  EXPECT_TRUE(ShouldRetryLogRead(unavailable, pod, finished + Millis(59000)));
  EXPECT_FALSE(ShouldRetryLogRead(unavailable, pod, finished + kLogRetryWindow));
  EXPECT_FALSE(ShouldRetryLogRead(Status::NotFound("gone"), pod, finished));
  pod.finished_at.reset();  // never finished: nothing to wait for
  EXPECT_FALSE(ShouldRetryLogRead(unavailable, pod, finished));
}

TEST(TrainJobTrialTest, ATrainJobPastItsTimeoutIsDeleted) {
  FakeTimeSource clock;
  clock.Advance(
      std::chrono::duration_cast<Millis>(std::chrono::system_clock::now() - clock.SystemNow()));
  FakeCluster c(/*detect_anomalies=*/true, &clock);
  CreateCampaignAndTrial(c, "60s");
  Reconcile(c);
  ASSERT_FALSE(c.Get(kTrainJobs, kTrial).is_null());
  clock.Advance(Millis(200000));
  const Json st = Reconcile(c);
  EXPECT_EQ(st.value("phase", ""), "Failed") << st.dump();
  EXPECT_EQ(st["failure"].value("category", ""), "Timeout") << st.dump();
  EXPECT_TRUE(c.Get(kTrainJobs, kTrial).is_null()) << "the TrainJob must be deleted";
}

}  // namespace
}  // namespace paratune::controllers
