#include "agents/predict/predictor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "agents/core/framework_rules.h"

namespace paratune {

namespace {

// Standard deviations of a learned peak's spread the memory check adds to the margin.
constexpr double kMemorySpreadZ = 1.0;

// Decodes mixed-radix `n` into one value index per parameter (last parameter varies fastest).
std::vector<uint16_t> Decode(uint64_t n, const std::vector<SearchParameter>& params) {
  std::vector<uint16_t> idx(params.size());
  for (size_t i = params.size(); i-- > 0;) {
    const uint64_t radix = params[i].values.size();
    idx[i] = static_cast<uint16_t>(n % radix);
    n /= radix;
  }
  return idx;
}

// Distance between two points of the space: per differing parameter 0.5 plus half the ordinal
// distance of the values (tp 4 vs 8 is closer than tp 1 vs 8).
double Distance(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                const std::vector<SearchParameter>& params) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i]) continue;
    const double span = std::max<double>(1, static_cast<double>(params[i].values.size()) - 1);
    d += 0.5 + 0.5 * std::abs(static_cast<double>(a[i]) - b[i]) / span;
  }
  return d;
}

// `floor`: seconds of launch floor for the whole step (per-micro-batch floor * micro-batches).
double CalibratedStep(const Estimate& base, double alpha, double beta, double floor = 0) {
  const double step = base.step_time_seconds + (alpha - 1) * ComputeSeconds(base.time) +
                      (beta - 1) * CommunicationSeconds(base.time) + floor;
  return std::max(step, 1e-9);
}

struct StepObservation {
  Estimate base;
  double observed_step = 0;
  double microbatches = 0;
};

// Least squares on log step time over (log alpha, log beta, per-micro-batch floor), shrunk
// toward the model as is (alpha = beta = 1, no floor). The floor is what separates two runs
// of the same tokens at different micro-batch sizes; one run alone is explained by alpha.
void FitEfficiencies(const std::vector<StepObservation>& obs, double* alpha, double* beta,
                     double* floor) {
  constexpr double kPrior = 0.02;       // strength of the pull toward the uncalibrated model
  constexpr double kFloorScale = 0.05;  // s: a floor this large costs as much as log(alpha) = 1
  bool has_floor = false;
  for (const auto& o : obs) has_floor = has_floor || o.microbatches > 0;
  auto loss = [&](double la, double lb, double f) {
    double s = kPrior * (la * la + lb * lb + (f / kFloorScale) * (f / kFloorScale));
    for (const auto& o : obs) {
      const double step = CalibratedStep(o.base, std::exp(la), std::exp(lb), f * o.microbatches);
      const double r = std::log(o.observed_step / step);
      s += r * r;
    }
    return s;
  };
  double best_a = 0, best_b = 0, best_f = 0, best = loss(0, 0, 0);
  double span = 1.2, fspan = 0.06;  // ranges searched around the current best
  const int fsteps = has_floor ? 4 : 0;
  for (int round = 0; round < 5; ++round) {
    const double ca = best_a, cb = best_b, cf = best_f;
    for (int i = -6; i <= 6; ++i) {
      for (int k = -6; k <= 6; ++k) {
        for (int m = -fsteps; m <= fsteps; ++m) {
          const double la = ca + span * i / 6, lb = cb + span * k / 6;
          const double f = cf + fspan * m / std::max(1, fsteps);
          if (f < 0) continue;
          const double l = loss(la, lb, f);
          if (l < best) {
            best = l;
            best_a = la;
            best_b = lb;
            best_f = f;
          }
        }
      }
    }
    span /= 4;
    fspan /= 3;
  }
  *alpha = std::exp(best_a);
  *beta = std::exp(best_b);
  *floor = best_f;
}

Estimate BaseFor(const SearchSpaceIndex& space, const PlannerModel& model, const Config& c) {
  const int64_t i = space.Find(ConfigKey(c));
  if (i >= 0 && space.points()[i].valid) return space.points()[i].base;
  return model.EstimateUncalibrated(c);
}

}  // namespace

double ComputeSeconds(const TimeBreakdown& t) {
  return t.compute + t.pipeline_bubble + t.optimizer;
}

double CommunicationSeconds(const TimeBreakdown& t) {
  return t.tensor_parallel + t.context_parallel + t.pipeline_p2p + t.data_parallel +
         t.expert_parallel;
}

Result<SearchSpaceIndex> SearchSpaceIndex::Build(const CampaignSpec& spec,
                                                 const PlannerModel& model, size_t max_points) {
  SearchSpaceIndex s;
  s.params_ = spec.search_space;
  if (s.params_.empty()) {
    return Status::Invalid("spec.searchSpace.parameters: empty; list at least one parameter");
  }
  for (size_t i = 0; i < s.params_.size(); ++i) {
    if (s.params_[i].values.empty()) {
      return Status::Invalid("spec.searchSpace.parameters[" + std::to_string(i) +
                             "].values: empty");
    }
  }
  s.total_size_ = spec.SearchSpaceSize();
  std::vector<uint64_t> codes;
  if (static_cast<uint64_t>(s.total_size_) <= max_points) {
    for (int64_t n = 0; n < s.total_size_; ++n) codes.push_back(static_cast<uint64_t>(n));
  } else {
    // Deterministic sample: a multiplicative walk over the index space.
    s.sampled_ = true;
    const uint64_t total = static_cast<uint64_t>(s.total_size_);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    std::unordered_map<uint64_t, bool> seen;
    while (codes.size() < max_points && seen.size() < 4 * max_points) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t n = (x >> 11) % total;
      if (seen.emplace(n, true).second) codes.push_back(n);
    }
  }
  s.points_.reserve(codes.size());
  // Configurations the framework runs identically (agents/core/framework_rules.h, e.g.
  // Megatron-LM's sequenceParallel at tp 1) are one point: a later one's key finds the first.
  std::unordered_map<std::string, size_t> canonical;
  for (uint64_t code : codes) {
    SpacePoint p;
    p.value_index = Decode(code, s.params_);
    for (size_t i = 0; i < s.params_.size(); ++i) {
      p.config[s.params_[i].name] = s.params_[i].values[p.value_index[i]];
    }
    p.key = ConfigKey(p.config);
    const auto [first, fresh] =
        canonical.emplace(CanonicalConfigKey(spec.training.framework, p.config), s.points_.size());
    if (!fresh) {
      // The point written as the framework runs it (sequenceParallel false at tp 1) stands for
      // the pair; the model estimates both alike.
      SpacePoint& kept = s.points_[first->second];
      if (p.key == first->first) {
        kept.config = p.config;
        kept.key = p.key;
        kept.value_index = p.value_index;
      }
      s.by_key_[p.key] = first->second;
      ++s.duplicates_;
      continue;
    }
    p.valid = model.Violations(p.config).empty();
    if (p.valid) p.base = model.EstimateUncalibrated(p.config);
    if (p.valid) p.features = FeaturesOf(p.base, model, p.config);
    s.by_key_[p.key] = s.points_.size();
    if (p.valid) s.valid_.push_back(s.points_.size());
    s.points_.push_back(std::move(p));
  }
  return s;
}

size_t SearchSpaceIndex::ApproximateBytes() const {
  // A std::map / std::unordered_map node: the value, two or three pointers and the allocator's
  // header; a std::string holds its characters beyond the small-string buffer.
  constexpr size_t kNode = 48;
  auto text = [](const std::string& s) { return s.size() > 15 ? s.capacity() + 1 : 0; };
  size_t bytes = sizeof(*this) + valid_.capacity() * sizeof(size_t) +
                 points_.capacity() * sizeof(SpacePoint) + by_key_.bucket_count() * sizeof(void*);
  for (const auto& p : points_) {
    bytes += p.value_index.capacity() * sizeof(uint16_t) + 2 * text(p.key) + kNode +
             sizeof(std::pair<const std::string, size_t>) + text(p.base.bottleneck);
    for (const auto& [name, value] : p.config) {
      bytes += kNode + sizeof(std::pair<const std::string, ParamValue>) + text(name);
    }
  }
  return bytes;
}

int64_t SearchSpaceIndex::Find(const std::string& key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? -1 : static_cast<int64_t>(it->second);
}

Prediction PointPrediction::ToPrediction() const {
  Prediction p;
  p.peak_memory_gib = peak_memory_gib;
  p.mfu = mfu;
  p.step_time_seconds = step_time_seconds;
  p.objective = objective;
  // The calibrated range: two standard deviations of log step time, the memory check's margin.
  if (step_time_seconds > 0) {
    p.step_low = step_time_seconds * std::exp(-2.0 * uncertainty);
    p.step_high = step_time_seconds * std::exp(2.0 * uncertainty);
  }
  if (peak_memory_gib > 0) {
    p.memory_low = std::max(0.0, peak_memory_gib - memory_margin_gib);
    p.memory_high = peak_memory_gib + memory_margin_gib;
    if (capacity_gib > 0) {
      p.verdict = p.memory_low > capacity_gib    ? "does-not-fit"
                  : p.memory_high > capacity_gib ? "marginal"
                                                 : "fits";
    }
  }
  return p;
}

CalibratedPredictor::CalibratedPredictor(const SearchSpaceIndex* space, ObjectiveSpec objective,
                                         CalibrationState calibration,
                                         std::vector<ResidualObservation> residuals)
    : space_(space),
      objective_(objective),
      calibration_(calibration),
      residuals_(std::move(residuals)) {}

PointPrediction CalibratedPredictor::Predict(size_t point_index) const {
  const SpacePoint& p = space_->points()[point_index];
  return FromEstimate(p.base, p.features, &p.value_index);
}

PointPrediction CalibratedPredictor::PredictConfig(const Config& c,
                                                   const PlannerModel& model) const {
  const int64_t i = space_ == nullptr ? -1 : space_->Find(ConfigKey(c));
  if (i >= 0 && space_->points()[i].valid) return Predict(static_cast<size_t>(i));
  std::vector<uint16_t> idx;
  if (space_ != nullptr) {
    for (const auto& param : space_->parameters()) {
      auto it = c.find(param.name);
      uint16_t k = 0;
      for (size_t v = 0; it != c.end() && v < param.values.size(); ++v) {
        if (param.values[v] == it->second) k = static_cast<uint16_t>(v);
      }
      idx.push_back(k);
    }
  }
  const Estimate base = model.EstimateUncalibrated(c);
  return FromEstimate(base, FeaturesOf(base, model, c), space_ == nullptr ? nullptr : &idx);
}

double CalibratedPredictor::ResidualFor(const std::vector<uint16_t>& index,
                                        double* uncertainty) const {
  constexpr double kShrink = 0.5;  // pseudo-weight of the "no residual" prior
  double wsum = 0, rsum = 0, nearest = 1e9;
  for (const auto& o : residuals_) {
    const double d = Distance(index, o.value_index, space_->parameters());
    nearest = std::min(nearest, d);
    const double w = std::exp(-1.5 * d);
    wsum += w;
    rsum += w * o.log_residual;
  }
  const double spread = std::max(calibration_.residual_sigma, 0.03);
  const double far = residuals_.empty() ? 2.0 : std::min(nearest, 4.0);
  *uncertainty = spread * std::sqrt(kShrink / (kShrink + wsum)) + 0.02 * far;
  return wsum > 0 ? rsum / (kShrink + wsum) : 0.0;
}

double CalibratedPredictor::MemoryResidualFor(const std::vector<uint16_t>& index) const {
  constexpr double kShrink = 0.3;
  double wsum = 0, rsum = 0;
  for (const auto& o : residuals_) {
    if (!o.has_memory) continue;
    const double w = std::exp(-2.0 * Distance(index, o.value_index, space_->parameters()));
    wsum += w;
    rsum += w * o.memory_residual_gib;
  }
  return wsum > 0 ? rsum / (kShrink + wsum) : 0.0;
}

PointPrediction CalibratedPredictor::FromEstimate(const Estimate& base,
                                                  const MemoryFeatures& features,
                                                  const std::vector<uint16_t>* index) const {
  PointPrediction out;
  const double alpha = 1.0 / std::max(calibration_.compute_efficiency, 1e-6);
  const double beta = 1.0 / std::max(calibration_.communication_efficiency, 1e-6);
  double step = CalibratedStep(base, alpha, beta,
                               calibration_.microbatch_floor_seconds * features.microbatches);
  double unc = 0.1;
  double memory_residual = 0;
  if (index != nullptr && space_ != nullptr) {
    step *= std::exp(ResidualFor(*index, &unc));
    memory_residual = MemoryResidualFor(*index);
  }
  const double ratio = base.step_time_seconds > 0 ? base.step_time_seconds / step : 0;
  out.step_time_seconds = step;
  out.mfu = base.mfu * ratio;
  out.peak_memory_gib = LearnedPeakGiB(features, calibration_) + memory_residual;
  out.memory_margin_gib =
      calibration_.memory_margin_gib + kMemorySpreadZ * LearnedPeakSdGiB(features, calibration_);
  out.uncertainty = unc;
  out.capacity_gib = base.capacity_gib;
  out.time = base.time;
  out.time.compute *= alpha;
  out.time.pipeline_bubble *= alpha;
  out.time.optimizer *= alpha;
  out.time.tensor_parallel *= beta;
  out.time.context_parallel *= beta;
  out.time.pipeline_p2p *= beta;
  out.time.data_parallel *= beta;
  out.time.expert_parallel *= beta;
  switch (objective_.metric) {
    case ObjectiveMetric::kMfu:
      out.objective = out.mfu;
      break;
    case ObjectiveMetric::kTflopsPerDevice:
      out.objective = base.model_tflops_per_device * ratio;
      break;
    case ObjectiveMetric::kTokensPerSecondPerDevice:
      out.objective = base.tokens_per_second_per_device * ratio;
      break;
    case ObjectiveMetric::kStepTimeSeconds:
      out.objective = step;
      break;
  }
  return out;
}

double ObservedStepSeconds(const TrialMetrics& m, const Estimate& base) {
  if (m.step_time_seconds > 0) return m.step_time_seconds;
  if (base.step_time_seconds <= 0) return 0;
  if (m.mfu > 0 && base.mfu > 0) return base.step_time_seconds * base.mfu / m.mfu;
  if (m.tflops_per_device > 0 && base.model_tflops_per_device > 0) {
    return base.step_time_seconds * base.model_tflops_per_device / m.tflops_per_device;
  }
  if (m.tokens_per_second_per_device > 0 && base.tokens_per_second_per_device > 0) {
    return base.step_time_seconds * base.tokens_per_second_per_device /
           m.tokens_per_second_per_device;
  }
  return 0;
}

namespace {

// What an out-of-memory trial needed at least: the device's capacity, or more when its error
// text names what was allocated plus what it tried to allocate.
double OomNeedGiB(const TrialRecord& t, double capacity) {
  double need = capacity;
  if (t.failure) {
    double tried = 0;
    const auto allocated = AllocatedFromOomText(t.failure->evidence, &tried);
    if (allocated) need = std::max(need, *allocated + tried);
  }
  return need;
}

}  // namespace

CalibrationState FitCalibration(const SearchSpaceIndex& space, const PlannerModel& model,
                                const MessagePool& pool, const CalibrationState& prior) {
  CalibrationState c = prior;
  const double capacity = model.CapacityGiB();
  std::vector<StepObservation> steps;
  std::vector<MemoryObservation> memory;
  for (const auto& t : pool.trials()) {
    if (t.phase == TrialPhase::kSucceeded && t.metrics) {
      const Estimate base = BaseFor(space, model, t.config);
      const MemoryFeatures f = FeaturesOf(base, model, t.config);
      const double obs = ObservedStepSeconds(*t.metrics, base);
      if (obs > 0 && base.step_time_seconds > 0) steps.push_back({base, obs, f.microbatches});
      if (t.metrics->peak_memory_gib > 0) {
        memory.push_back({f, false, t.metrics->peak_memory_gib, 0});
      } else if (t.metrics->device_memory_used_gib > 0) {
        memory.push_back({f, false, 0, 0, t.metrics->device_memory_used_gib});
      }
    } else if (t.phase == TrialPhase::kFailed && t.failure && t.failure->RanOutOfMemory()) {
      const Estimate base = BaseFor(space, model, t.config);
      const double usable = base.capacity_gib > 0 ? base.capacity_gib : capacity;
      memory.push_back({FeaturesOf(base, model, t.config), true, 0, OomNeedGiB(t, usable)});
    }
  }
  c.observations = static_cast<int64_t>(steps.size());
  double alpha = 1, beta = 1, floor = 0;
  if (!steps.empty()) FitEfficiencies(steps, &alpha, &beta, &floor);
  c.compute_efficiency = 1.0 / alpha;
  c.communication_efficiency = 1.0 / beta;
  c.microbatch_floor_seconds = floor;
  double sq = 0;
  for (const auto& o : steps) {
    const double r =
        std::log(o.observed_step / CalibratedStep(o.base, alpha, beta, floor * o.microbatches));
    sq += r * r;
  }
  c.residual_sigma = steps.size() >= 2 ? std::sqrt(sq / (steps.size() - 1)) : 0;
  return FitMemoryCalibration(memory, capacity, c);
}

CalibrationState FitMemoryCalibration(const std::vector<MemoryObservation>& memory, double capacity,
                                      CalibrationState c) {
  c.memory_overhead_gib = 0;
  c.memory_static_scale = c.memory_activation_scale = 1;
  c.memory_logits_bytes = 0;
  FitMemoryModel(memory, &c);
  std::vector<double> diffs;
  int64_t ooms = 0;
  for (const auto& o : memory) {
    if (o.oom) {
      ++ooms;
    } else if (o.peak_gib > 0) {
      diffs.push_back(o.peak_gib - LearnedPeakGiB(o.features, c));
    }
  }
  c.oom_observations = ooms;
  // The margin covers what the fit still gets wrong: wide with nothing observed, then the
  // spread of the measured peaks around the fit. Cold, 10% of the device: in the shared H100
  // set the caching allocator's reserve sat up to 12% of the device above the allocated peak,
  // and the first-principles model missed peaks by up to 31% before the framework profiles
  // (docs/model.md); a first trial that runs out of memory teaches the loop nothing about time.
  double margin = 0.10 * capacity;
  if (diffs.size() == 1) margin = 0.025 * capacity;
  if (diffs.size() >= 2) {
    std::vector<double> dev;
    for (double d : diffs) dev.push_back(std::abs(d));
    std::sort(dev.begin(), dev.end());
    const double mad = 1.4826 * dev[dev.size() / 2];
    margin = 0.01 * capacity + std::min(1.5 * mad, 0.05 * capacity);
  }
  for (const auto& o : memory) {
    if (!o.oom) continue;
    // A failed config must come out as not fitting: raise the margin just past it.
    margin = std::max(margin, capacity - LearnedPeakGiB(o.features, c) + 0.25);
  }
  c.memory_margin_gib = std::clamp(margin, 0.0, 0.4 * capacity);
  return c;
}

std::vector<ResidualObservation> CollectResiduals(const SearchSpaceIndex& space,
                                                  const PlannerModel& model,
                                                  const MessagePool& pool,
                                                  const CalibrationState& calibration,
                                                  ObjectiveSpec objective) {
  std::vector<ResidualObservation> out;
  CalibratedPredictor plain(&space, objective, calibration, {});
  for (const auto& t : pool.trials()) {
    if (t.phase != TrialPhase::kSucceeded || !t.metrics) continue;
    const Estimate base = BaseFor(space, model, t.config);
    const double obs = ObservedStepSeconds(*t.metrics, base);
    if (obs <= 0) continue;
    const int64_t i = space.Find(ConfigKey(t.config));
    if (i < 0) continue;
    const PointPrediction p = plain.Predict(static_cast<size_t>(i));
    if (p.step_time_seconds <= 0) continue;
    ResidualObservation r{space.points()[i].value_index, std::log(obs / p.step_time_seconds)};
    if (t.metrics->peak_memory_gib > 0) {
      r.has_memory = true;
      r.memory_residual_gib = t.metrics->peak_memory_gib - p.peak_memory_gib;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace paratune
