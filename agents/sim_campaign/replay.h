// Replay against measured trials (contract section 11): a file of real runs, one JSON object per
// line ({"config", "outcome": succeeded|oom|failed, "metrics"|"failure"}), answers for "reality"
// instead of the simulated cluster. A configuration that is not in the file cannot be measured:
// the loop must not spend a trial on it (ReplayRunner::Measured, TrialRunner::Measurable).
#ifndef PARATUNE_AGENTS_SIM_CAMPAIGN_REPLAY_H_
#define PARATUNE_AGENTS_SIM_CAMPAIGN_REPLAY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/predict/predictor.h"
#include "agents/sim_campaign/simulation.h"
#include "agents/trials/message_pool.h"
#include "base/status.h"

namespace paratune {

struct MeasuredTrial {
  Config config;
  std::string outcome;   // succeeded | oom | failed
  TrialMetrics metrics;  // succeeded: as measured (derived fields filled where possible)
  std::string category;  // oom/failed: section 5 category (CudaOOM for oom)
  double allocated_at_failure_gib = 0;  // oom: what was allocated when it failed (0: unknown)
  std::string error;                    // failed: the error text when the file has one
  bool Succeeded() const { return outcome == "succeeded"; }
  bool OutOfMemory() const { return outcome == "oom"; }
};

// Parses a measurements file. Configs are typed against `spec`'s search space (a value outside
// it is kept as written; such a line simply never matches a candidate). The first line of a
// config wins when it repeats. kInvalidArgument naming "FILE:LINE" for a malformed line.
Result<std::vector<MeasuredTrial>> ParseMeasurements(const std::string& text,
                                                     const CampaignSpec& spec,
                                                     const std::string& file_name);
Result<std::vector<MeasuredTrial>> LoadMeasurementsFile(const std::string& path,
                                                        const CampaignSpec& spec);

// The real PyTorch error text of a CUDA OOM (what the Diagnostician reads) for a trial that had
// `allocated_gib` allocated on a device of `capacity_gib` (the request is not in the file: it is
// written as the smallest one that could not fit).
std::string TorchOomText(double allocated_gib, double capacity_gib);

// The pool record of a measured trial, as a session would have recorded it after running it
// (a Failed CudaOOM with the real error text as evidence, or a Succeeded with its metrics).
TrialRecord RecordFromMeasurement(const MeasuredTrial& t, double capacity_gib,
                                  const std::string& name);

// Whether the learned model says `c` fits: calibrated peak + learned margin within capacity, and
// no out-of-memory trial of `pool` needs no more memory than `c` (memory_fit.h dominance).
bool PredictedToFit(const Config& c, const CalibratedPredictor& predictor,
                    const PlannerModel& model, const MessagePool& pool);

// A TrialRunner that answers from measured trials. Not thread-safe.
class ReplayRunner : public TrialRunner {
 public:
  ReplayRunner(std::vector<MeasuredTrial> trials, double capacity_gib, ObjectiveMetric metric);
  // Whether `c` has a line in the file.
  bool Measured(const Config& c) const;
  const MeasuredTrial* Find(const Config& c) const;
  TrialOutcome Run(const TrialPlan& plan, int64_t attempt) override;
  std::optional<TrialMetrics> TrueMetrics(const Config& config) const override;
  std::function<bool(const Config&)> Measurable() const override {
    return [this](const Config& c) { return Measured(c); };
  }
  const std::vector<MeasuredTrial>& trials() const { return trials_; }

 private:
  std::vector<MeasuredTrial> trials_;
  double capacity_gib_;
  ObjectiveMetric metric_;
};

// A ReplayRunner for `spec` (capacity from its hardware; kInvalidArgument naming the field when
// the workload cannot be resolved).
Result<std::unique_ptr<ReplayRunner>> MakeReplayRunner(const CampaignSpec& spec,
                                                       std::vector<MeasuredTrial> trials);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SIM_CAMPAIGN_REPLAY_H_
