#include "agents/sim_campaign/calibration_report.h"

#include <cmath>
#include <memory>
#include <string>

namespace paratune {

namespace {

double R4(double v) { return std::round(v * 1e4) / 1e4; }

nlohmann::json Terms(const CalibrationState& c) {
  return {{"memoryFixedGiB", R4(c.memory_overhead_gib)},
          {"memoryStaticScale", R4(c.memory_static_scale)},
          {"memoryActivationScale", R4(c.memory_activation_scale)},
          {"memoryLogitsBytes", R4(c.memory_logits_bytes)},
          {"memoryMarginGiB", R4(c.memory_margin_gib)},
          {"computeEfficiency", R4(c.compute_efficiency)},
          {"communicationEfficiency", R4(c.communication_efficiency)},
          {"microbatchFloorSeconds", R4(c.microbatch_floor_seconds)},
          {"observations", c.observations},
          {"oomObservations", c.oom_observations}};
}

nlohmann::json Verdict(const Config& c, const CalibratedPredictor& p, const PlannerModel& model,
                       const MessagePool& pool) {
  const PointPrediction pred = p.PredictConfig(c, model);
  return {{"fits", PredictedToFit(c, p, model, pool)},
          {"peakMemoryGiB", R4(pred.peak_memory_gib)},
          {"stepTimeSeconds", R4(pred.step_time_seconds)}};
}

nlohmann::json FitJson(const FitScore& s) {
  return {{"right", s.right},
          {"total", s.total},
          {"oomsCalledFit", s.ooms_called_fit},
          {"stepErrorMean", R4(s.step_error_mean)},
          {"peakErrorMean", R4(s.peak_error_mean)}};
}

MessagePool PoolOf(const std::vector<MeasuredTrial>& measured, double capacity) {
  MessagePool pool;
  for (size_t i = 0; i < measured.size(); ++i) {
    pool.AddTrial(RecordFromMeasurement(measured[i], capacity, "m" + std::to_string(i + 1)));
  }
  return pool;
}

}  // namespace

FitScore ScoreFit(const SearchSpaceIndex& space, const PlannerModel& model, const MessagePool& pool,
                  const ObjectiveSpec& objective, const std::vector<MeasuredTrial>& measured) {
  const CalibrationState cal = FitCalibration(space, model, pool, CalibrationState{});
  const CalibratedPredictor predictor(&space, objective, cal, {});
  FitScore s;
  int ran = 0;
  for (const auto& m : measured) {
    if (!m.Succeeded() && !m.OutOfMemory()) continue;
    const bool fits = PredictedToFit(m.config, predictor, model, pool);
    ++s.total;
    if (fits == m.Succeeded()) ++s.right;
    if (fits && m.OutOfMemory()) ++s.ooms_called_fit;
    if (!m.Succeeded()) continue;
    const PointPrediction p = predictor.PredictConfig(m.config, model);
    if (m.metrics.step_time_seconds > 0 && m.metrics.peak_memory_gib > 0) {
      s.step_error_mean += std::abs(p.step_time_seconds / m.metrics.step_time_seconds - 1);
      s.peak_error_mean += std::abs(p.peak_memory_gib / m.metrics.peak_memory_gib - 1);
      ++ran;
    }
  }
  if (ran > 0) {
    s.step_error_mean /= ran;
    s.peak_error_mean /= ran;
  }
  return s;
}

Result<nlohmann::json> CalibrationReport(const CampaignSpec& spec,
                                         const std::vector<MeasuredTrial>& measured) {
  auto model = CreateModelPlanner(spec);
  if (!model.ok()) return model.status();
  auto space = SearchSpaceIndex::Build(spec, **model, 20000);
  if (!space.ok()) return space.status();
  const double capacity = (*model)->CapacityGiB();
  const MessagePool empty;
  const MessagePool pool = PoolOf(measured, capacity);
  const CalibrationState before = FitCalibration(*space, **model, empty, CalibrationState{});
  const CalibrationState after = FitCalibration(*space, **model, pool, CalibrationState{});
  const CalibratedPredictor cold(&*space, spec.objective, before, {});
  const CalibratedPredictor warm(&*space, spec.objective, after, {});
  nlohmann::json j;
  j["campaign"] = spec.name;
  j["capacityGiB"] = R4(capacity);
  j["trials"] = measured.size();
  j["before"] = Terms(before);
  j["after"] = Terms(after);
  j["configurations"] = nlohmann::json::array();
  for (const auto& m : measured) {
    nlohmann::json meas = {{"outcome", m.outcome}};
    if (m.Succeeded()) {
      meas["stepTimeSeconds"] = m.metrics.step_time_seconds;
      meas["peakMemoryGiB"] = m.metrics.peak_memory_gib;
      if (m.metrics.device_memory_used_gib > 0) {
        meas["deviceMemoryUsedGiB"] = m.metrics.device_memory_used_gib;
      }
    } else if (m.allocated_at_failure_gib > 0) {
      meas["allocatedAtFailureGiB"] = m.allocated_at_failure_gib;
    }
    j["configurations"].push_back({{"config", ConfigToJson(m.config)},
                                   {"measured", meas},
                                   {"before", Verdict(m.config, cold, **model, empty)},
                                   {"after", Verdict(m.config, warm, **model, pool)}});
  }
  j["fitCalls"] = {{"before", FitJson(ScoreFit(*space, **model, empty, spec.objective, measured))},
                   {"after", FitJson(ScoreFit(*space, **model, pool, spec.objective, measured))}};
  return j;
}

}  // namespace paratune
