// The calibrated model: every configuration of the search space evaluated once by the
// (uncalibrated) PlannerModel, then re-scored cheaply with what the Calibration agent learned:
//   step = computeTime / computeEfficiency + communicationTime / communicationEfficiency,
//   peak = modelPeak + memoryOverhead,
// times a residual correction learned from nearby observed configurations (configs that differ
// in few parameters share their error). Every objective follows from the step time.
#ifndef PARATUNE_AGENTS_PREDICT_PREDICTOR_H_
#define PARATUNE_AGENTS_PREDICT_PREDICTOR_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/predict/memory_fit.h"
#include "agents/predict/planner_model.h"
#include "agents/trials/message_pool.h"
#include "base/status.h"

namespace paratune {

// One configuration of the search space with the model's uncalibrated verdict.
struct SpacePoint {
  Config config;
  std::string key;                    // ConfigKey(config)
  std::vector<uint16_t> value_index;  // per search parameter, index of the value
  Estimate base;                      // uncalibrated
  MemoryFeatures features;            // what the learned memory and time terms multiply
  bool valid = false;                 // no constraint violations
};

// The enumerated search space. Immutable after Build; const methods are thread-safe.
class SearchSpaceIndex {
 public:
  // Enumerates the cartesian product of spec.search_space (a deterministic sample of `max_points`
  // when larger) and evaluates `model` on each point. Fails with kInvalidArgument naming
  // "spec.searchSpace.parameters" when the space is empty.
  static Result<SearchSpaceIndex> Build(const CampaignSpec& spec, const PlannerModel& model,
                                        size_t max_points);

  const std::vector<SpacePoint>& points() const { return points_; }
  const std::vector<size_t>& valid() const { return valid_; }
  // Index of the point with that config key, or -1.
  int64_t Find(const std::string& key) const;
  int64_t total_size() const { return total_size_; }
  bool sampled() const { return sampled_; }
  // Configurations folded into an earlier point the framework runs identically (their keys
  // Find that point).
  int64_t duplicates() const { return duplicates_; }
  const std::vector<SearchParameter>& parameters() const { return params_; }
  // Heap and object bytes the index holds, approximately (what a cache of indexes budgets by).
  size_t ApproximateBytes() const;

 private:
  std::vector<SearchParameter> params_;
  std::vector<SpacePoint> points_;
  std::vector<size_t> valid_;
  std::unordered_map<std::string, size_t> by_key_;
  int64_t total_size_ = 0;
  int64_t duplicates_ = 0;
  bool sampled_ = false;
};

// A calibrated prediction for one configuration.
struct PointPrediction {
  double objective = 0;  // the campaign's metric
  double step_time_seconds = 0;
  double mfu = 0;
  double peak_memory_gib = 0;
  // What the memory check adds to the peak: the learned margin plus the peak's own spread
  // (two standard deviations of the memory terms' posterior at this configuration).
  double memory_margin_gib = 0;
  double uncertainty = 0;  // std-dev of log(step) the prediction carries
  // What the device can hand this configuration (the model's Estimate::capacity_gib: HBM less
  // what the framework keeps, e.g. the CUDA context and the allocator's reserve under
  // transformers); 0 when the model does not say (fakes).
  double capacity_gib = 0;
  TimeBreakdown time;  // calibrated
  Prediction ToPrediction() const;
  // capacity_gib, or the device's `device_gib` when the model gave none.
  double UsableGiB(double device_gib) const { return capacity_gib > 0 ? capacity_gib : device_gib; }
};

// Splits an uncalibrated estimate's step time into its compute-like part (compute, pipeline
// bubble, optimizer) and communication part (every collective and point-to-point exchange).
double ComputeSeconds(const TimeBreakdown& t);
double CommunicationSeconds(const TimeBreakdown& t);

// One observation the residual model learns from.
struct ResidualObservation {
  std::vector<uint16_t> value_index;
  double log_residual = 0;  // log(observed step / calibrated predicted step)
  bool has_memory = false;
  double memory_residual_gib = 0;  // observed peak - (model peak + global overhead)
};

// Thread-safety: const methods may run concurrently.
class CalibratedPredictor {
 public:
  CalibratedPredictor(const SearchSpaceIndex* space, ObjectiveSpec objective,
                      CalibrationState calibration, std::vector<ResidualObservation> residuals);

  PointPrediction Predict(size_t point_index) const;
  // For a configuration outside the index (sampled spaces): evaluates `model` now.
  PointPrediction PredictConfig(const Config& c, const PlannerModel& model) const;
  // Larger is better (negated step time for stepTimeSeconds).
  double Utility(double objective) const { return objective_.Maximize() ? objective : -objective; }
  const CalibrationState& calibration() const { return calibration_; }
  const ObjectiveSpec& objective() const { return objective_; }

 private:
  PointPrediction FromEstimate(const Estimate& base, const MemoryFeatures& features,
                               const std::vector<uint16_t>* index) const;
  double ResidualFor(const std::vector<uint16_t>& index, double* uncertainty) const;
  // Local memory correction: observed-minus-predicted peak of nearby configurations, shrunk
  // toward 0 (the global overhead already applies) when they are few or far.
  double MemoryResidualFor(const std::vector<uint16_t>& index) const;

  const SearchSpaceIndex* space_;
  ObjectiveSpec objective_;
  CalibrationState calibration_;
  std::vector<ResidualObservation> residuals_;
};

// The Calibration agent: fits compute/communication efficiency and the per-micro-batch floor to
// the successful trials of `pool` (least squares on log step time, shrunk toward the prior when
// observations are few), fits the memory model (memory_fit.h) to measured peaks and
// out-of-memory failures (with the allocation their error text names), learns the Validator's
// memory margin from the memory fit's residuals, and measures the residual spread. Pure function.
CalibrationState FitCalibration(const SearchSpaceIndex& space, const PlannerModel& model,
                                const MessagePool& pool, const CalibrationState& prior);

// The memory part of FitCalibration: the memory terms of `c` refitted to `memory` (prior: the
// model as is), the margin from the fit's residuals, and oom_observations.
CalibrationState FitMemoryCalibration(const std::vector<MemoryObservation>& memory, double capacity,
                                      CalibrationState c);

// Residual observations (for CalibratedPredictor) from the pool's successful trials.
std::vector<ResidualObservation> CollectResiduals(const SearchSpaceIndex& space,
                                                  const PlannerModel& model,
                                                  const MessagePool& pool,
                                                  const CalibrationState& calibration,
                                                  ObjectiveSpec objective);

// The measured step time of a trial, derived from its objective when not reported (0: unknown).
double ObservedStepSeconds(const TrialMetrics& m, const Estimate& base);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_PREDICT_PREDICTOR_H_
