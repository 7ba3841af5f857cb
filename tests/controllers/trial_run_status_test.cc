#include "controllers/trial_run_status.h"

#include <gtest/gtest.h>

#include <string>

#include "controllers/campaign_status.h"

namespace paratune::controllers {
namespace {

using nlohmann::json;

// Every status field of contract section 5 (docs/api.md), with the values a finished trial
// carries, plus objective, anomaly and observed (written by the trial reconciler).
json FullStatus() {
  return json::parse(R"({
    "phase": "EarlyStopped",
    "jobName": "llama3-8b-a100x8-t003",
    "acceleratorHours": 1.733333,
    "metricsSource": {"pod": "llama3-8b-a100x8-t003-1-x", "rank": 1, "from": "log",
                      "convention": "last", "memoryPod": "llama3-8b-a100x8-t003-0-x"},
    "metricsWarnings": ["a resumed process's first interval (warm-up) was dropped"],
    "earlyStop": {"stepsSeen": 5, "meanStepSeconds": 9.4, "noise": 0.02, "margin": 0.05,
                  "projectedObjective": 0.41, "optimisticObjective": 0.44,
                  "bestObjective": 0.58, "bestTrial": "llama3-8b-a100x8-t001",
                  "summary": "cannot beat the best"},
    "nodeNames": ["node-a", "node-b"],
    "startTime": "2026-11-23T10:04:10Z",
    "completionTime": "2026-11-23T10:17:10Z",
    "admissionTime": "2026-11-23T10:04:10Z",
    "queueSeconds": 250,
    "evictions": 1,
    "objective": 0.41,
    "metrics": {"mfu": 0.41, "tflopsPerDevice": 405.5, "tokensPerSecondPerDevice": 3100.0,
                "stepTimeSeconds": 9.4, "peakMemoryGiB": 61.2, "avgMemoryGiB": 55.0,
                "deviceMemoryUsedGiB": 63.0},
    "failure": {"category": "CudaOOM", "parameters": ["mbs"], "summary": "mbs 4 ran out",
                "confidence": 95, "retryable": false, "evidence": "CUDA out of memory",
                "signature": "cuda-oom"},
    "anomaly": {"kind": "StepTimeDrift", "observed": 11.0, "expected": 9.0, "ratio": 1.22,
                "summary": "step time drifted", "nodeNames": ["node-b"]},
    "observed": {"pod": "llama3-8b-a100x8-t003-1-x", "podReason": "OOMKilled", "exitCode": 137,
                 "terminationMessage": "",
                 "logTail": "...", "events": ["BackOff: restarting"]},
    "conditions": [{"type": "Completed", "status": "True", "reason": "EarlyStopped",
                    "message": "cannot beat the best",
                    "lastTransitionTime": "2026-11-23T10:17:10Z"}]
  })");
}

TEST(TrialRunStatusTest, FullStatusRoundTripsWithEveryField) {
  const json in = FullStatus();
  auto st = TrialRunStatusFromJson(in);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->phase, TrialRunPhase::kEarlyStopped);
  EXPECT_EQ(st->job_name, "llama3-8b-a100x8-t003");
  EXPECT_EQ(st->accelerator_hours, 1.733333);
  EXPECT_EQ(st->node_names, (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_EQ(st->start_time, "2026-11-23T10:04:10Z");
  EXPECT_EQ(st->completion_time, "2026-11-23T10:17:10Z");
  EXPECT_EQ(st->admission_time, "2026-11-23T10:04:10Z");
  EXPECT_EQ(st->queue_seconds, 250);
  EXPECT_EQ(st->evictions, 1);
  EXPECT_EQ(st->metrics_warnings,
            (std::vector<std::string>{"a resumed process's first interval (warm-up) was dropped"}));
  EXPECT_EQ(st->objective, 0.41);
  EXPECT_EQ(st->metrics_source["rank"], 1);
  EXPECT_EQ(st->early_stop["bestTrial"], "llama3-8b-a100x8-t001");
  EXPECT_EQ(st->failure["category"], "CudaOOM");
  EXPECT_EQ(st->anomaly["kind"], "StepTimeDrift");
  EXPECT_EQ(st->observed["exitCode"], 137);
  EXPECT_EQ(st->metrics["deviceMemoryUsedGiB"], 63.0);
  EXPECT_EQ(st->conditions.size(), 1u);
  EXPECT_TRUE(st->extra.empty()) << st->extra.dump();  // every key of the contract is typed
  EXPECT_EQ(ToJson(*st).dump(), in.dump());
}

// The contract's own example: empty strings, zeros and the nulls of fields not set yet.
TEST(TrialRunStatusTest, ContractExampleWithNullTimesRoundTrips) {
  const json in = json::parse(R"({
    "phase": "Pending", "jobName": "", "acceleratorHours": 0.0,
    "metricsSource": {"pod": "", "rank": 0, "from": "log", "convention": "last", "memoryPod": ""},
    "nodeNames": [], "startTime": null, "completionTime": null, "admissionTime": null,
    "queueSeconds": 0, "conditions": []
  })");
  auto st = TrialRunStatusFromJson(in);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->phase, TrialRunPhase::kPending);
  EXPECT_FALSE(st->start_time.has_value());  // null: not set
  EXPECT_EQ(st->node_names, std::vector<std::string>{});
  EXPECT_EQ(ToJson(*st).dump(), in.dump());
}

TEST(TrialRunStatusTest, UnknownKeysAreWrittenBackUnchanged) {
  const json in = {{"phase", "Running"},
                   {"jobName", "t-t001"},
                   {"message", "set by someone else"},
                   {"futureField", {{"nested", json::array({1, 2})}}}};
  auto st = TrialRunStatusFromJson(in);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->extra, json({{"message", "set by someone else"},
                             {"futureField", {{"nested", json::array({1, 2})}}}}));
  st->phase = TrialRunPhase::kSucceeded;
  st->completion_time = "2026-11-23T11:00:00Z";
  json out = ToJson(*st);
  EXPECT_EQ(out["message"], "set by someone else");
  EXPECT_EQ(out["futureField"], in["futureField"]);
  EXPECT_EQ(out["phase"], "Succeeded");
  EXPECT_EQ(out["completionTime"], "2026-11-23T11:00:00Z");
  EXPECT_EQ(out.size(), in.size() + 1);
}

TEST(TrialRunStatusTest, UnknownPhaseIsRefusedNamingTheField) {
  auto st = TrialRunStatusFromJson({{"phase", "Paused"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.status().message().find("status.phase"), std::string::npos) << st.status().message();
  EXPECT_NE(st.status().message().find("Paused"), std::string::npos);
  // Phases are case-sensitive, as the CRD's enum is.
  EXPECT_FALSE(TrialRunStatusFromJson({{"phase", "running"}}).ok());
  EXPECT_FALSE(TrialRunStatusFromJson({{"phase", 3}}).ok());
}

TEST(TrialRunStatusTest, KnownKeyOfTheWrongTypeIsRefusedNamingIt) {
  for (const auto& [in, field] : std::vector<std::pair<json, std::string>>{
           {{{"queueSeconds", "ten"}}, "status.queueSeconds"},
           {{{"queueSeconds", -1}}, "status.queueSeconds"},
           {{{"evictions", "one"}}, "status.evictions"},
           {{{"acceleratorHours", "1h"}}, "status.acceleratorHours"},
           {{{"nodeNames", "node-a"}}, "status.nodeNames"},
           {{{"metricsWarnings", {1, 2}}}, "status.metricsWarnings"},
           {{{"startTime", 12}}, "status.startTime"},
           {{{"metrics", json::array()}}, "status.metrics"},
           {{{"conditions", json::object()}}, "status.conditions"}}) {
    auto st = TrialRunStatusFromJson(in);
    ASSERT_FALSE(st.ok()) << in.dump();
    EXPECT_NE(st.status().message().find(field), std::string::npos) << st.status().message();
  }
  EXPECT_FALSE(TrialRunStatusFromJson(json::array()).ok());
}

TEST(TrialRunStatusTest, MissingStatusHasNoPhaseAndWritesNothing) {
  for (const json& trial_run : {json{{"metadata", {{"name", "t"}}}},
                                json{{"metadata", {{"name", "t"}}}, {"status", nullptr}},
                                json{{"status", json::object()}}}) {
    auto st = TrialRunStatusOf(trial_run);
    ASSERT_TRUE(st.ok()) << st.status().message();
    EXPECT_FALSE(st->phase.has_value());
    EXPECT_EQ(ToJson(*st), json::object());
  }
}

TEST(TrialRunStatusTest, EveryPhaseNameParsesBack) {
  const std::vector<std::pair<TrialRunPhase, bool>> phases = {
      {TrialRunPhase::kPending, false},  {TrialRunPhase::kRunning, false},
      {TrialRunPhase::kSucceeded, true}, {TrialRunPhase::kFailed, true},
      {TrialRunPhase::kRejected, true},  {TrialRunPhase::kEarlyStopped, true}};
  const std::vector<std::string> wire = {"Pending", "Running",  "Succeeded",
                                         "Failed",  "Rejected", "EarlyStopped"};
  for (size_t i = 0; i < phases.size(); ++i) {
    const auto [phase, terminal] = phases[i];
    EXPECT_EQ(TrialRunPhaseName(phase), wire[i]);
    EXPECT_EQ(ParseTrialRunPhase(TrialRunPhaseName(phase)), phase);
    EXPECT_EQ(IsTerminal(phase), terminal) << wire[i];
    auto st = TrialRunStatusFromJson({{"phase", wire[i]}});
    ASSERT_TRUE(st.ok()) << st.status().message();
    EXPECT_EQ(ToJson(*st), json({{"phase", wire[i]}}));
  }
  EXPECT_FALSE(ParseTrialRunPhase("").has_value());
}

// What the trial reconciler wrote key by key before the typed status, and what it writes now.
TEST(TrialRunStatusTest, TypedWriteIsWhatTheKeyByKeyWriteWas) {
  json before = {{"phase", "Pending"}, {"jobName", "t-t001"}};
  json key_by_key = before;
  key_by_key["phase"] = "Failed";
  key_by_key["nodeNames"] = std::vector<std::string>{"node-a"};
  key_by_key["admissionTime"] = "2026-11-23T10:04:10Z";
  key_by_key["queueSeconds"] = int64_t{250};
  key_by_key["completionTime"] = "2026-11-23T10:09:00Z";
  key_by_key["acceleratorHours"] = 0.25;
  key_by_key["failure"] = {{"category", "Unknown"}, {"confidence", 0}};

  auto st = TrialRunStatusFromJson(before);
  ASSERT_TRUE(st.ok()) << st.status().message();
  st->phase = TrialRunPhase::kFailed;
  st->node_names = std::vector<std::string>{"node-a"};
  st->admission_time = "2026-11-23T10:04:10Z";
  st->queue_seconds = 250;
  st->completion_time = "2026-11-23T10:09:00Z";
  st->accelerator_hours = 0.25;
  st->failure = {{"category", "Unknown"}, {"confidence", 0}};
  EXPECT_EQ(ToJson(*st).dump(), key_by_key.dump());
}

// The API server prints a whole float64 as an integer (2.0 comes back as 2): read back, the
// status compares equal to what was read, so no status write follows from the round trip.
TEST(TrialRunStatusTest, WholeNumbersFromTheApiServerCompareEqual) {
  const json in = {{"phase", "Succeeded"}, {"acceleratorHours", 2}, {"objective", 1}};
  auto st = TrialRunStatusFromJson(in);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->accelerator_hours, 2.0);
  EXPECT_EQ(ToJson(*st), in);
}

TEST(CampaignPhaseTest, EveryPhaseNameParsesBack) {
  for (CampaignPhase p :
       {CampaignPhase::kPending, CampaignPhase::kRunning, CampaignPhase::kSucceeded,
        CampaignPhase::kFailed, CampaignPhase::kStopped}) {
    EXPECT_EQ(ParseCampaignPhase(CampaignPhaseName(p)), p);
    json status;
    SetCampaignPhase(&status, p);
    EXPECT_EQ(CampaignPhaseIn(status), p);
  }
  EXPECT_EQ(CampaignPhaseName(CampaignPhase::kSucceeded), "Succeeded");
  EXPECT_FALSE(CampaignPhaseIn(json{{"phase", "Done"}}).has_value());
  EXPECT_FALSE(CampaignPhaseIn(json{{"phase", 1}}).has_value());
  EXPECT_FALSE(CampaignPhaseIn(json()).has_value());
}

TEST(CampaignStatusTest, ReadsAndWritesBackTheWireStatusUnchanged) {
  const json in = json::parse(R"({
    "phase": "Succeeded", "observedGeneration": 3, "iteration": 4,
    "message": "target reached", "stopReason": "AcceleratorHoursExhausted",
    "trials": {"total": 5, "running": 0, "succeeded": 3, "failed": 1, "rejected": 2,
               "anomalous": 1, "oomsAvoided": 2, "earlyStopped": 1},
    "baseline": {"trialName": "c-0", "objective": 0.31, "preflight": {"reason": "r"}},
    "best": {"trialName": "c-2", "objective": 0.42, "config": {"tp": 2},
             "metrics": {"mfu": 0.42}, "improvementOverBaseline": 0.35},
    "lastAnalysis": {"bottleneck": "comm", "healthState": "Healthy", "summary": "s"},
    "acceleratorHours": {"total": 7.5, "perTrial": {"c-0": 2.5}, "savedByEarlyStopping": 1,
                         "max": 20},
    "nodeHealth": {"suspectNodes": ["n1"]}, "remediations": [{"node": "n1"}],
    "conditions": [{"type": "Progressing", "status": "False"}],
    "futureField": {"x": 1}})");
  CampaignStatus st = CampaignStatus::FromJson(in);
  EXPECT_EQ(st.phase, CampaignPhase::kSucceeded);
  EXPECT_EQ(st.stop_reason, CampaignStopReason::kAcceleratorHoursExhausted);
  ASSERT_TRUE(st.trials.has_value());
  EXPECT_EQ(st.trials->early_stopped, 1);
  EXPECT_TRUE(st.HasBest());
  EXPECT_EQ(st.ToJson(), in);
  // A stop reason of another operator's, or a section of another shape, is kept as it was.
  const json odd = {{"stopReason", "SomethingNew"}, {"trials", {{"total", "many"}}}};
  EXPECT_EQ(CampaignStatus::FromJson(odd).ToJson(), odd);
  EXPECT_FALSE(CampaignStatus::FromJson(odd).stop_reason.has_value());
  EXPECT_EQ(CampaignStatus::FromJson(json()).ToJson(), json::object());
  for (CampaignStopReason r :
       {CampaignStopReason::kBudgetExhausted, CampaignStopReason::kTargetReached,
        CampaignStopReason::kMaxFailedTrials, CampaignStopReason::kSearchConverged,
        CampaignStopReason::kSpaceExhausted, CampaignStopReason::kClusterCannotRun,
        CampaignStopReason::kAcceleratorHoursExhausted}) {
    EXPECT_EQ(ParseCampaignStopReason(CampaignStopReasonName(r)), r);
  }
  EXPECT_EQ(CampaignStopReasonName(CampaignStopReasonOf(StopReason::kConverged)), "Converged");
}

}  // namespace
}  // namespace paratune::controllers
