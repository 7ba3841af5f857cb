// Issue 13: metrics from the rank that has them (log_sources.h, trial_metrics.h), the early
// stopping rule (early_stopping.h) and accelerator-hours (accelerator_hours.h).
#include "controllers/trial_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "agents/trials/early_stopping.h"
#include "base/json_fields.h"
#include "base/utf8.h"
#include "controllers/accelerator_hours.h"
#include "controllers/collectors/log_sources.h"
#include "controllers/trial_evidence.h"

namespace paratune::controllers {
namespace {

using nlohmann::json;

json Pod(const std::string& name, int rank, const std::string& message = "") {
  json pod = {{"metadata", {{"name", name}}}, {"spec", {{"containers", {{{"name", "t"}}}}}}};
  if (rank >= 0) {
    pod["metadata"]["annotations"] = {
        {"batch.kubernetes.io/job-completion-index", std::to_string(rank)}};
  }
  json term = {{"exitCode", 0}, {"reason", "Completed"}};
  if (!message.empty()) term["message"] = message;
  pod["status"] = {{"phase", "Succeeded"},
                   {"containerStatuses", {{{"name", "t"}, {"state", {{"terminated", term}}}}}}};
  return pod;
}

std::string MegatronLine(int it, double ms, double tflops) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                " [2026-11-21 05:40:01] iteration %8d/     100 | elapsed time per iteration (ms): "
                "%.1f | throughput per GPU (TFLOP/s/GPU): %.1f | global batch size:   512 |\n",
                it, ms, tflops);
  return buf;
}

std::string MegatronSteps(double ms, double tflops, int lines = 6) {
  std::string log;
  for (int i = 1; i <= lines; ++i) log += MegatronLine(10 * i, ms, tflops);
  return log;
}

const char* kMemoryLine =
    "[Rank 0] (after 10 iterations) memory (MB) | allocated: 40960.00 | max allocated: 61440.00 "
    "| reserved: 62000.00 | max reserved: 62000.00\n";

TEST(LogSourcesTest, ReadOrderPutsTheFrameworksMetricsRankFirst) {
  const std::vector<int64_t> ranks = {1, 0, 3, 2};
  EXPECT_EQ(PodReadOrder(ranks, MetricsRankFor("megatron-lm")), (std::vector<size_t>{2, 1, 0, 3}));
  EXPECT_EQ(PodReadOrder(ranks, MetricsRankFor("maxtext")), (std::vector<size_t>{1, 0, 3, 2}));
  EXPECT_EQ(PodReadOrder(ranks, MetricsRankFor("torchtitan")), (std::vector<size_t>{1, 0, 3, 2}));
  EXPECT_EQ(PodReadOrder(ranks, MetricsRankFor("json")), (std::vector<size_t>{1, 0, 3, 2}));
}

TEST(TrialEvidenceTest, APodsRankIsItsCompletionIndexAnnotationOrLabel) {
  json labelled = Pod("l", -1);
  labelled["metadata"]["labels"] = {{"batch.kubernetes.io/job-completion-index", "5"}};
  json odd = Pod("odd", -1);
  odd["metadata"]["annotations"] = {{"batch.kubernetes.io/job-completion-index", "x1"}};
  const TrialPods pods = ReadTrialPods({Pod("single", -1), labelled, Pod("t-3", 3), odd});
  EXPECT_EQ(pods.pods[0].rank, -1);
  EXPECT_EQ(pods.pods[1].rank, 5);
  EXPECT_EQ(pods.pods[2].rank, 3);
  EXPECT_EQ(pods.pods[3].rank, -1);
  // The lead pod: completion index 0, or no index annotation (a label does not count).
  EXPECT_TRUE(pods.pods[0].lead);
  EXPECT_TRUE(pods.pods[1].lead);
  EXPECT_FALSE(pods.pods[2].lead);
  EXPECT_EQ(pods.pods[0].container, "t");
  EXPECT_EQ(pods.Evidence().name, "single");
}

TEST(LogSourcesTest, BoundedReadsNeverParseACutLineOrSplitACharacter) {
  // limitBytes cut the last line in the middle of its number: it is dropped.
  std::string raw =
      MegatronLine(10, 9100.2, 412.3) + " iteration 20 | elapsed time per iteration (ms): 91";
  EXPECT_EQ(BoundedLog(raw, raw.size()), MegatronLine(10, 9100.2, 412.3));
  EXPECT_EQ(BoundedLog(raw, 0), raw);  // no limit: kept
  // "é" is two bytes; a cut inside it must not leave half of it.
  const std::string text = "loss é ok";
  for (size_t n = 0; n <= text.size(); ++n) {
    EXPECT_TRUE(IsValidUtf8(Utf8Tail(text, n))) << n;
    EXPECT_TRUE(IsValidUtf8(Utf8Head(text, n))) << n;
    EXPECT_LE(Utf8Tail(text, n).size(), n);
  }
  EXPECT_EQ(Utf8Tail(text, 4), " ok");
  EXPECT_EQ(Utf8Tail("a\xff"
                     "b",
                     10),
            "a\xEF\xBF\xBD"
            "b");  // invalid bytes replaced by U+FFFD
}

TEST(TrialMetricsTest, MegatronMetricsComeFromTheLastRankAndMemoryFromRankZero) {
  const TrialPods pods = ReadTrialPods({Pod("t-0", 0), Pod("t-1", 1)});
  std::vector<std::string> read;
  auto reader = [&read](const TrialPod& pod) {
    const std::string name = pod.name;
    read.push_back(name);
    // As Megatron-LM prints: memory on data-parallel rank 0, iterations on the last rank.
    return name == "t-0" ? std::string("training ...\n") + kMemoryLine : MegatronSteps(9000, 400);
  };
  collectors::CollectorContext ctx;
  ctx.peak_tflops_per_device = 1000;
  auto r = ReadTrialMetrics(pods, "megatron-lm", ctx, reader, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source.pod, "t-1");
  EXPECT_EQ(r->source.rank, 1);
  EXPECT_EQ(r->source.from, "log");
  EXPECT_EQ(r->source.convention, "last");
  EXPECT_NEAR(r->collected.metrics.mfu, 0.4, 1e-9);
  EXPECT_NEAR(r->collected.metrics.peak_memory_gib, 60.0, 1e-9);
  EXPECT_EQ(r->source.memory_pod, "t-0");
  EXPECT_EQ(read.front(), "t-1");  // the last rank is read first
  EXPECT_EQ(r->source.ToJson()["rank"], 1);
}

// Kueue evicted the trial and admitted it again: the Job controller replaced the pods at once,
// and the stopped run's last rank is still terminating beside the new one. Its log (a shorter,
// slower run) is not this run's: the metrics come from the live pod of that rank.
TEST(TrialMetricsTest, APodReplacedWhileTerminatingIsNotRead) {
  json old_last = Pod("t-1-old", 1);
  old_last["metadata"]["deletionTimestamp"] = "2026-11-30T07:00:00Z";
  old_last["status"]["phase"] = "Running";
  const TrialPods pods = ReadTrialPods({old_last, Pod("t-0", 0), Pod("t-1", 1)});
  std::vector<std::string> read;
  auto reader = [&read](const TrialPod& pod) {
    read.push_back(pod.name);
    return pod.name == "t-1-old" ? MegatronSteps(18000, 200) : MegatronSteps(9000, 400);
  };
  collectors::CollectorContext ctx;
  ctx.peak_tflops_per_device = 1000;
  auto r = ReadTrialMetrics(pods, "megatron-lm", ctx, reader, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source.pod, "t-1");
  EXPECT_NEAR(r->collected.metrics.mfu, 0.4, 1e-9);
  EXPECT_EQ(std::count(read.begin(), read.end(), "t-1-old"), 0);
  // Alone (no live pod of its rank) a terminating pod is still read.
  auto alone = ReadTrialMetrics(ReadTrialPods({old_last}), "megatron-lm", ctx, reader, 8);
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(alone->source.pod, "t-1-old");
}

TEST(TrialMetricsTest, ATerminationMessageFromAnyPodWins) {
  std::vector<json> pods = {Pod("t-0", 0), Pod("t-1", 1, R"({"metrics": {"mfu": 0.5}})")};
  auto r = ReadTrialMetrics(
      ReadTrialPods(pods), "maxtext", {}, [](const TrialPod&) { return std::string(); }, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source.pod, "t-1");
  EXPECT_EQ(r->source.from, "terminationMessage");
  EXPECT_DOUBLE_EQ(r->collected.metrics.mfu, 0.5);
  // A malformed metrics object is an error naming the pod, not a silent fallback.
  pods[1] = Pod("t-1", 1, R"({"metrics": {"mfu": "high"}})");
  auto bad = ReadTrialMetrics(
      ReadTrialPods(pods), "maxtext", {}, [](const TrialPod&) { return std::string(); }, 8);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t-1"), std::string::npos);
}

TEST(TrialMetricsTest, FallsBackToEveryPodWithinTheReadBudgetAndSaysWhichItRead) {
  const TrialPods pods = ReadTrialPods({Pod("t-0", 0), Pod("t-1", 1), Pod("t-2", 2)});
  int reads = 0;
  // A custom launcher that logs the steps on rank 1: read after rank 2 (the Megatron default).
  auto reader = [&reads](const TrialPod& pod) {
    ++reads;
    return pod.name == "t-1" ? MegatronSteps(9000, 400) : std::string("noise\n");
  };
  auto r = ReadTrialMetrics(pods, "megatron-lm", {}, reader, 8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source.pod, "t-1");
  reads = 0;
  auto none = ReadTrialMetrics(
      pods, "megatron-lm", {},
      [&reads](const TrialPod&) {
        ++reads;
        return std::string("nothing\n");
      },
      2);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(reads, 2);  // bounded
  EXPECT_NE(none.status().message().find("t-2 (rank 2)"), std::string::npos)
      << none.status().message();
}

TEST(TrialMetricsTest, MemoryIsCompletedInTheSamePassOverTheLogs) {
  // Megatron's read order is t-2, t-0, t-1: rank 0's memory lines are read before the steps.
  const TrialPods pods = ReadTrialPods({Pod("t-0", 0), Pod("t-1", 1), Pod("t-2", 2)});
  std::vector<std::string> read;
  auto reader = [&read](const TrialPod& pod) {
    read.push_back(pod.name);
    if (pod.name == "t-0") return std::string(kMemoryLine);
    return pod.name == "t-1" ? MegatronSteps(9000, 400) : std::string("noise\n");
  };
  auto r = ReadTrialMetrics(pods, "megatron-lm", {}, reader, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source.pod, "t-1");
  EXPECT_EQ(r->source.memory_pod, "t-0");
  EXPECT_NEAR(r->collected.metrics.peak_memory_gib, 60.0, 1e-9);
  EXPECT_EQ(read, (std::vector<std::string>{"t-2", "t-0", "t-1"}));
  // A source with memory lines of its own: no other log is read.
  read.clear();
  auto own = ReadTrialMetrics(
      pods, "megatron-lm", {},
      [&read](const TrialPod& pod) {
        read.push_back(pod.name);
        return MegatronSteps(9000, 400) + kMemoryLine;
      },
      8);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->source.pod, "t-2");
  EXPECT_EQ(own->source.memory_pod, "");
  EXPECT_EQ(read, (std::vector<std::string>{"t-2"}));
}

TEST(TrialEvidenceTest, AFailedPodsEvidenceWinsAndTimesAreReadOnce) {
  json lead = Pod("t-0", 0, "done");
  lead["status"]["startTime"] = "2026-11-21T05:00:00Z";
  lead["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] =
      "2026-11-21T05:30:00Z";
  lead["spec"]["nodeName"] = "node-b";
  json failed = Pod("t-1", 1, "boom");
  failed["status"]["phase"] = "Failed";
  failed["status"]["startTime"] = "2026-11-21T05:10:00Z";
  failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = 137;
  failed["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled";
  failed["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] =
      "2026-11-21T06:00:00Z";
  failed["spec"]["nodeName"] = "node-a";
  json pending = Pod("t-2", 2);
  pending["status"] = {{"phase", "Pending"},
                       {"conditions",
                        {{{"type", "PodScheduled"},
                          {"status", "False"},
                          {"reason", "Unschedulable"},
                          {"message", "0/3 nodes are available"},
                          {"lastTransitionTime", "2026-11-21T05:55:00Z"}}}}};
  const TrialPods pods = ReadTrialPods({lead, failed, pending});
  EXPECT_EQ(pods.Evidence().name, "t-1");
  EXPECT_EQ(pods.Evidence().pod_reason, "OOMKilled");
  EXPECT_EQ(pods.Evidence().exit_code, 137);
  EXPECT_EQ(pods.Evidence().termination_message, "boom");
  EXPECT_EQ(pods.node_names, (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_TRUE(pods.any_finished);
  EXPECT_FALSE(pods.any_running);
  SystemTime now;
  ASSERT_TRUE(ParseRfc3339("2026-11-21T06:05:00Z", &now));
  // The pending pod never started: the wall time runs from 05:00 to the last finish, 06:00.
  EXPECT_DOUBLE_EQ(WallSeconds(pods, now), 3600);
  std::string why;
  size_t which = 99;
  EXPECT_EQ(UnschedulableFor(pods, now, &why, &which), Millis(600000));
  EXPECT_EQ(why, "0/3 nodes are available");
  EXPECT_EQ(which, 2u);
}

// Among failed pods the evidence is the first to finish; within the same second (finishedAt has
// whole seconds) one the Job controller is not deleting; then the other failed pods, then the
// lead, then the rest.
TEST(TrialEvidenceTest, TheFirstFailedPodToFinishIsTheEvidenceThenTheOthersInOrder) {
  const auto failed = [](const std::string& name, int rank, const std::string& finished) {
    json pod = Pod(name, rank);
    pod["status"]["phase"] = "Failed";
    json& term = pod["status"]["containerStatuses"][0]["state"]["terminated"];
    term["exitCode"] = 1;
    term["reason"] = "Error";
    term["finishedAt"] = finished;
    return pod;
  };
  json deleted = failed("t-a", 1, "2026-11-21T05:20:00Z");
  deleted["metadata"]["deletionTimestamp"] = "2026-11-21T05:20:00Z";
  const json kept = failed("t-b", 2, "2026-11-21T05:20:00Z");
  const json victim = failed("t-c", 3, "2026-11-21T05:30:00Z");
  const json lead = Pod("t-0", 0);
  json pending = Pod("t-d", 4);
  pending["status"] = {{"phase", "Pending"}};
  const TrialPods pods = ReadTrialPods({pending, victim, lead, deleted, kept});
  EXPECT_EQ(pods.Evidence().name, "t-b");
  std::vector<std::string> order;
  for (size_t i : pods.evidence_order) order.push_back(pods.pods[i].name);
  EXPECT_EQ(order, (std::vector<std::string>{"t-b", "t-a", "t-c", "t-0", "t-d"}));
}

// Kueue evicted the trial (its rank 1 was stopped: exit 143, still terminating) and admitted it
// again; the new run's rank 1 then ran out of memory. The stopped pod finished first, but it is
// an earlier run's: the evidence is the new run's failure, and the old pod's start and node are
// not the trial's.
TEST(TrialEvidenceTest, AnEarlierRunsPodIsNotTheEvidenceNorTheTrialsStartOrNode) {
  json stopped = Pod("t-1-old", 1);
  stopped["metadata"]["deletionTimestamp"] = "2026-11-30T07:00:30Z";
  stopped["spec"]["nodeName"] = "node-old";
  stopped["status"]["phase"] = "Failed";
  stopped["status"]["startTime"] = "2026-11-30T06:50:00Z";
  json& term = stopped["status"]["containerStatuses"][0]["state"]["terminated"];
  term = {{"exitCode", 143}, {"reason", "Error"}, {"finishedAt", "2026-11-30T07:00:05Z"}};
  json oom = Pod("t-1", 1);
  oom["spec"]["nodeName"] = "node-new";
  oom["status"]["phase"] = "Failed";
  oom["status"]["startTime"] = "2026-11-30T07:10:00Z";
  oom["status"]["containerStatuses"][0]["state"]["terminated"] = {
      {"exitCode", 137}, {"reason", "OOMKilled"}, {"finishedAt", "2026-11-30T07:12:00Z"}};
  const TrialPods pods = ReadTrialPods({stopped, oom});
  EXPECT_TRUE(pods.pods[0].replaced);
  EXPECT_FALSE(pods.pods[1].replaced);
  EXPECT_EQ(pods.Evidence().name, "t-1");
  EXPECT_EQ(pods.Evidence().pod_reason, "OOMKilled");
  EXPECT_EQ(pods.node_names, (std::vector<std::string>{"node-new"}));
  SystemTime t;
  ASSERT_TRUE(ParseRfc3339("2026-11-30T07:10:00Z", &t));
  EXPECT_EQ(pods.start_time, t);
  EXPECT_DOUBLE_EQ(WallSeconds(pods, t), 120);
}

std::vector<double> Steps(double mean, double rel_noise, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(mean * (1 + rel_noise * ((i % 2) ? 1 : -1)));
  return out;
}

TEST(EarlyStoppingTest, StopsAClearLoserAndKeepsOneWithinNoise) {
  EarlyStopInput in;
  in.steady_step_times = Steps(10.0, 0.01, 5);
  in.objective = 0.40;
  in.best_objective = 0.50;
  EarlyStopDecision d = DecideEarlyStop(in);
  EXPECT_TRUE(d.stop) << d.summary;
  EXPECT_EQ(d.steps_seen, 5u);
  EXPECT_NEAR(d.noise, 0.01 * std::sqrt(5.0 / 4.0), 1e-3);
  EXPECT_GT(d.optimistic_objective, 0.40);
  EXPECT_LT(d.optimistic_objective, 0.50);
  EXPECT_NE(d.summary.find("0.5"), std::string::npos);
  // 1% behind with 1% noise: within the margin, it runs on.
  in.objective = 0.495;
  EXPECT_FALSE(DecideEarlyStop(in).stop);
  // 20% behind but so noisy (30% per step over 4 steps) that it could still win.
  in.objective = 0.40;
  in.steady_step_times = Steps(10.0, 0.30, 4);
  EXPECT_FALSE(DecideEarlyStop(in).stop);
}

TEST(EarlyStoppingTest, NeedsABestEnoughStepsAndKnowsStepTimeIsMinimized) {
  EarlyStopInput in;
  in.steady_step_times = Steps(10.0, 0.01, 2);
  in.objective = 0.2;
  in.best_objective = 0.5;
  EXPECT_FALSE(DecideEarlyStop(in).stop);  // two steps: too few
  in.steady_step_times = Steps(10.0, 0.01, 6);
  in.best_objective = 0;
  EXPECT_FALSE(DecideEarlyStop(in).stop);  // no best yet
  // stepTimeSeconds: 10 s against a best of 8 s is losing; against 12 s it is winning.
  in.maximize = false;
  in.objective = 10.0;
  in.best_objective = 8.0;
  EXPECT_TRUE(DecideEarlyStop(in).stop);
  in.best_objective = 12.0;
  EXPECT_FALSE(DecideEarlyStop(in).stop);
}

json TrialRun(const std::string& phase, double hours, const std::string& start = "") {
  json st = {{"phase", phase}};
  if (hours >= 0) st["acceleratorHours"] = hours;
  if (!start.empty()) st["startTime"] = start;
  return {{"status", st}};
}

TEST(AcceleratorHoursTest, SumsTrialsAndStopsACampaignThatWouldExceedItsBudget) {
  CampaignSpec spec;
  spec.hardware.nodes = 2;
  spec.hardware.devices_per_node = 8;
  EXPECT_DOUBLE_EQ(AcceleratorHoursOf(16, 1800), 8.0);
  SystemTime now;
  ASSERT_TRUE(ParseRfc3339("2026-11-21T06:00:00Z", &now));
  std::map<std::string, json> trs = {{"a", TrialRun("Succeeded", 4.0)},
                                     {"b", TrialRun("Succeeded", 2.0)},
                                     {"c", TrialRun("EarlyStopped", 1.0)},
                                     {"d", TrialRun("Running", -1, "2026-11-21T05:30:00Z")}};
  AcceleratorHours h = SumAcceleratorHours(spec, trs, now);
  EXPECT_DOUBLE_EQ(h.recorded, 7.0);
  EXPECT_DOUBLE_EQ(h.spent, 15.0);         // + 16 devices x 0.5 h running
  EXPECT_DOUBLE_EQ(h.expected_next, 3.0);  // the mean finished trial
  EXPECT_DOUBLE_EQ(h.saved_by_early_stopping, 2.0);
  EXPECT_EQ(h.early_stopped, 1);
  std::string why;
  EXPECT_FALSE(AcceleratorBudgetReached(spec, h, &why));  // no limit
  spec.budget.max_accelerator_hours = 20;
  EXPECT_FALSE(AcceleratorBudgetReached(spec, h, &why));  // 15 + 3 <= 20
  spec.budget.max_accelerator_hours = 17;
  ASSERT_TRUE(AcceleratorBudgetReached(spec, h, &why));
  EXPECT_NE(why.find("maxAcceleratorHours 17"), std::string::npos) << why;

  json status = {{"phase", "Running"},
                 {"trials", {{"running", 0}}},
                 {"best", {{"trialName", "a"}}},
                 {"conditions", json::array()}};
  CampaignStatus typed = CampaignStatus::FromJson(status);
  typed.Apply(DecideAcceleratorHours(spec, h, why, typed), 1, "2026-11-21T06:00:00Z");
  status = typed.ToJson();
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_EQ(status["stopReason"], "AcceleratorHoursExhausted");
  EXPECT_DOUBLE_EQ(status["acceleratorHours"]["total"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(status["acceleratorHours"]["perTrial"]["a"].get<double>(), 4.0);
  EXPECT_EQ(status["trials"]["earlyStopped"], 1);
  // No proposal was asked for: the loop's SpaceExhausted is the budget's doing.
  json idle = {{"phase", "Succeeded"},
               {"stopReason", "SpaceExhausted"},
               {"trials", {{"running", 0}}},
               {"best", {{"trialName", "a"}}}};
  typed = CampaignStatus::FromJson(idle);
  typed.Apply(DecideAcceleratorHours(spec, h, why, typed), 1, "now");
  idle = typed.ToJson();
  EXPECT_EQ(idle["stopReason"], "AcceleratorHoursExhausted");
  // While a trial runs, the campaign waits for it.
  json running = {{"phase", "Running"}, {"trials", {{"running", 1}}}};
  typed = CampaignStatus::FromJson(running);
  typed.Apply(DecideAcceleratorHours(spec, h, why, typed), 1, "now");
  running = typed.ToJson();
  EXPECT_EQ(running["phase"], "Running");
}

}  // namespace
}  // namespace paratune::controllers
