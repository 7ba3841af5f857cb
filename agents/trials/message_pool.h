// The message pool: the persistent shared memory of the agents. It holds every trial (config,
// phase, metrics, failure diagnosis, the proposal and prediction that produced it), every
// candidate the Validator rejected (with the reason; rejections cost no trial), every analysis,
// the calibration state, and every LLM exchange. The loop keeps no other state: a TuningSession
// can stop after any step and resume from ToJson()/FromJson() alone.
//
// Thread-safety: none. The owner (TuningSession, the reconciler) serializes access.
#ifndef PARATUNE_AGENTS_TRIALS_MESSAGE_POOL_H_
#define PARATUNE_AGENTS_TRIALS_MESSAGE_POOL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/health/anomaly.h"
#include "base/status.h"

namespace paratune {

// Why a trial was proposed (contract section 5 spec.proposal).
struct Proposal {
  std::string rationale;
  std::string expected_impact;
  double confidence = 0;    // 0..1
  std::string proposed_by;  // builtin | llm | hybrid | random | grid | greedy | baseline | user
  nlohmann::json ToJson() const;
  static Result<Proposal> FromJson(const nlohmann::json& j, const std::string& field);
};

// What the (calibrated) model predicted for a trial before it ran (spec.prediction).
struct Prediction {
  double peak_memory_gib = 0;
  double mfu = 0;
  double step_time_seconds = 0;
  double objective = 0;  // the campaign's objective metric, predicted
  // Contract section 14: fits | marginal | does-not-fit ("" when unknown) and the calibrated
  // range [low, high] of step time and peak memory (0 when unknown).
  std::string verdict;
  double step_low = 0, step_high = 0, memory_low = 0, memory_high = 0;
  nlohmann::json ToJson() const;
  static Result<Prediction> FromJson(const nlohmann::json& j, const std::string& field);
};

// One "Change X from A to B" suggestion of the Analyst.
struct Suggestion {
  std::string parameter;
  ParamValue from, to;
  std::string reason;
  double expected_gain = 0;  // predicted relative objective gain (0.05 = +5%)
  // "Change tp from 1 to 2: <reason>"
  std::string Text() const;
  nlohmann::json ToJson() const;
  static Result<Suggestion> FromJson(const nlohmann::json& j, const std::string& field);
};

// The Analyst's verdict at one iteration.
struct Analysis {
  int64_t iteration = 0;
  // severely-under-utilized | high-pipeline-overhead | memory-bound | communication-bound |
  // compute-bound | unknown (no successful trial yet)
  std::string health_state;
  std::string bottleneck;  // compute | hbm | communication | pipeline | memory-capacity | input
  std::string summary;     // one or two sentences
  std::vector<Suggestion> suggestions;  // ranked, best first
  nlohmann::json ToJson() const;
  static Result<Analysis> FromJson(const nlohmann::json& j, const std::string& field);
};

// The Calibration agent's current fit of the model to observations.
struct CalibrationState {
  double compute_efficiency = 1.0;        // observed / modelled compute speed
  double communication_efficiency = 1.0;  // observed / modelled collective speed
  double memory_overhead_gib = 0.0;       // observed peak - modelled peak
  double memory_margin_gib = 0.0;         // safety margin the Validator adds (learned)
  double residual_sigma = 0.0;            // spread of log(observed/predicted) step time
  int64_t observations = 0;               // successful trials the fit rests on
  int64_t oom_observations = 0;           // out-of-memory failures seen
  // The learned memory model (issue 14): peak = model's framework overhead + memory_overhead_gib
  // (fixed) + memory_static_scale * (parameters + gradients + optimizer) +
  // memory_activation_scale * activations + memory_logits_bytes * (logit elements per device).
  double memory_static_scale = 1.0;
  double memory_activation_scale = 1.0;
  double memory_logits_bytes = 0.0;  // bytes per logit element the model does not count
  // Learned time term: seconds per micro-batch of a step the model does not see (launch floor).
  double microbatch_floor_seconds = 0.0;
  // Posterior covariance of the four memory terms (fixed, static, activation, logits; row-major)
  // once memory was observed, else empty. Derived state: refitted from the trials, not serialized.
  std::vector<double> memory_covariance;
  nlohmann::json ToJson() const;
  static Result<CalibrationState> FromJson(const nlohmann::json& j, const std::string& field);
};

// One trial of the campaign (a TrialRun in the cluster).
struct TrialRecord {
  int64_t iteration = 0;
  std::string name;  // "<campaign>-t003", retries "<campaign>-t003-r1"
  Config config;     // every searched parameter
  TrialPhase phase = TrialPhase::kPending;
  std::optional<TrialMetrics> metrics;      // set when succeeded
  std::optional<FailureDiagnosis> failure;  // set when failed
  Proposal proposal;
  Prediction prediction;
  std::string retry_of;         // name of the trial this one re-runs ("" if none)
  std::string change;           // "tp 1->2, mbs 2->1" relative to the best config at proposal time
  int64_t analysis_index = -1;  // index into MessagePool::analyses() (-1: none)
  // Devices x the time the trial held them, in hours (0: unknown; finished trials only).
  double accelerator_hours = 0;
  // Cluster health (issue 9; absent in older pools, which still load).
  std::vector<std::string> node_names;         // the nodes that ran it (status.nodeNames)
  std::optional<health::Anomaly> anomaly;      // a succeeded run the campaign did not learn from
  std::vector<std::string> avoid_nodes;        // nodes this trial must not run on (retries)
  bool retry_requested = false;                // an approved RetryTrial waits for the next proposal
  std::vector<std::string> retry_avoid_nodes;  // nodes that retry must avoid
  // Succeeded and not anomalous: a result the campaign learns from.
  bool Learnable() const { return phase == TrialPhase::kSucceeded && !anomaly; }
  nlohmann::json ToJson() const;
  static Result<TrialRecord> FromJson(const nlohmann::json& j, const std::string& field);
};

// A note for people about the campaign's own conduct (e.g. an anomalous trial set aside, which
// nodes ran it). Kinds: "Anomaly", "RetryRequested".
struct PoolMessage {
  int64_t iteration = 0;
  std::string trial;
  std::string kind;
  std::string text;
  nlohmann::json ToJson() const;
  static Result<PoolMessage> FromJson(const nlohmann::json& j, const std::string& field);
};

// A candidate the Validator turned away before it cost a trial.
struct RejectedCandidate {
  int64_t iteration = 0;
  Config config;
  std::string reason;
  std::string proposed_by;
  nlohmann::json ToJson() const;
  static Result<RejectedCandidate> FromJson(const nlohmann::json& j, const std::string& field);
};

// One exchange with a language model (written by the LLM engine).
struct LlmExchange {
  int64_t iteration = 0;
  std::string role;  // analyst | strategist | diagnostician | ...
  std::string prompt;
  std::string reply;
  std::string parse_result;  // "ok" or the parse error
  double latency_seconds = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  bool fallback = false;  // the built-in engine took over
  nlohmann::json ToJson() const;
  static Result<LlmExchange> FromJson(const nlohmann::json& j, const std::string& field);
};

class MessagePool {
 public:
  MessagePool() = default;

  std::vector<TrialRecord>& trials() { return trials_; }
  const std::vector<TrialRecord>& trials() const { return trials_; }
  const std::vector<RejectedCandidate>& rejected() const { return rejected_; }
  const std::vector<Analysis>& analyses() const { return analyses_; }
  const std::vector<LlmExchange>& llm_exchanges() const { return llm_exchanges_; }
  const std::vector<PoolMessage>& messages() const { return messages_; }
  CalibrationState& calibration() { return calibration_; }
  const CalibrationState& calibration() const { return calibration_; }

  // Appends; returns the index of the new entry.
  size_t AddTrial(TrialRecord t);
  void AddRejected(RejectedCandidate r);
  size_t AddAnalysis(Analysis a);
  void AddLlmExchange(LlmExchange e);
  void AddMessage(PoolMessage m);

  // nullptr when no trial has that name.
  TrialRecord* FindTrial(const std::string& name);
  const TrialRecord* FindTrial(const std::string& name) const;
  // True when a trial (any phase but Rejected) ran or runs `config` (by ConfigKey).
  bool WasTried(const Config& config) const;
  // Highest iteration used by any trial (0 when none).
  int64_t LastIteration() const;

  // Stable JSON: {"trials": [...], "rejected": [...], "analyses": [...], "calibration": {...},
  // "llmExchanges": [...]} plus "messages": [...] when there are any. FromJson accepts exactly what
  // ToJson writes; errors name the field
  // ("pool.trials[2].config.tp: ...").
  nlohmann::json ToJson() const;
  static Result<MessagePool> FromJson(const nlohmann::json& j);

 private:
  std::vector<TrialRecord> trials_;
  std::vector<RejectedCandidate> rejected_;
  std::vector<Analysis> analyses_;
  std::vector<LlmExchange> llm_exchanges_;
  std::vector<PoolMessage> messages_;
  CalibrationState calibration_;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_TRIALS_MESSAGE_POOL_H_
