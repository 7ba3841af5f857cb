#include "agents/predict/memory_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <set>
#include <string>

#include "agents/model/parallel_plan.h"
#include "agents/model/workload.h"

namespace paratune {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kTerms = 4;  // fixed, static scale, activation scale, logits bytes
using Vec = std::array<double, kTerms>;
using Mat = std::array<Vec, kTerms>;

// Prior: the model as it is, with these standard deviations per term.
constexpr Vec kPriorMean = {0.0, 1.0, 1.0, 0.0};
constexpr Vec kPriorSd = {3.0, 0.15, 0.6, 4.0};
constexpr double kNoiseSd = 0.4;   // GiB: run-to-run spread of a measured peak
constexpr double kOomExtra = 1.0;  // GiB above what an OOM needed at least
constexpr double kOomSd = 0.15;    // GiB: an OOM bound, once violated, is nearly a constraint

Vec Row(const MemoryFeatures& f) { return {1.0, f.static_gib, f.activations_gib, f.logit_gelems}; }

// Solves a * x = b by Gauss-Jordan with partial pivoting (a is positive definite here).
Vec Solve(Mat a, Vec b) {
  for (int col = 0; col < kTerms; ++col) {
    int piv = col;
    for (int r = col + 1; r < kTerms; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[piv][col])) piv = r;
    }
    std::swap(a[col], a[piv]);
    std::swap(b[col], b[piv]);
    const double d = a[col][col];
    if (std::abs(d) < 1e-12) continue;
    for (int r = 0; r < kTerms; ++r) {
      if (r == col) continue;
      const double m = a[r][col] / d;
      for (int k = col; k < kTerms; ++k) a[r][k] -= m * a[col][k];
      b[r] -= m * b[col];
    }
  }
  Vec x{};
  for (int i = 0; i < kTerms; ++i)
    x[i] = std::abs(a[i][i]) < 1e-12 ? kPriorMean[i] : b[i] / a[i][i];
  return x;
}

struct Target {
  Vec row;
  double y = 0;          // GiB the learned terms must produce (overhead already subtracted)
  double sd = kNoiseSd;  // how tightly (an out-of-memory bound is held tighter than a peak)
};

// `cov` (optional): the posterior covariance (the normal matrix's inverse). `no_logits`: the
// logits term held at 0 (a negative byte count is not physical).
Vec Fit(const std::vector<Target>& targets, std::vector<double>* cov = nullptr,
        bool no_logits = false) {
  Mat a{};
  Vec b{};
  for (int i = 0; i < kTerms; ++i) {
    const double p = 1.0 / (kPriorSd[i] * kPriorSd[i]);
    a[i][i] += p;
    b[i] += p * kPriorMean[i];
  }
  if (no_logits) a[3][3] += 1e8;
  for (const auto& t : targets) {
    const double w = 1.0 / (t.sd * t.sd);
    for (int i = 0; i < kTerms; ++i) {
      for (int k = 0; k < kTerms; ++k) a[i][k] += w * t.row[i] * t.row[k];
      b[i] += w * t.row[i] * t.y;
    }
  }
  if (cov != nullptr) {
    cov->assign(kTerms * kTerms, 0.0);
    for (int k = 0; k < kTerms; ++k) {
      Vec e{};
      e[k] = 1;
      const Vec col = Solve(a, e);
      for (int i = 0; i < kTerms; ++i) (*cov)[i * kTerms + k] = col[i];
    }
  }
  Vec x = Solve(a, b);
  if (x[3] < 0 && !no_logits) return Fit(targets, cov, true);
  return x;
}

void Store(const Vec& x, CalibrationState* c) {
  c->memory_overhead_gib = x[0];
  c->memory_static_scale = std::max(0.5, x[1]);
  c->memory_activation_scale = std::max(0.2, x[2]);
  c->memory_logits_bytes = x[3];
}

// Ordinal of a recomputation setting by memory kept (larger keeps more).
int RecomputeRank(const std::string& v) {
  if (v == "none") return 2;
  if (v == "selective") return 1;
  return 0;  // full
}

}  // namespace

MemoryFeatures FeaturesOf(const Estimate& base, const PlannerModel& model, const Config& c) {
  MemoryFeatures f;
  f.static_gib = base.memory.parameters_gib + base.memory.gradients_gib + base.memory.optimizer_gib;
  f.activations_gib = base.memory.activations_gib;
  // Whatever the breakdown does not name (framework overhead; all of it for a model that
  // reports only a peak) is kept as is.
  f.overhead_gib = base.peak_memory_gib - f.static_gib - f.activations_gib;
  const Workload* w = model.workload();
  if (w == nullptr || w->IsTpu()) return f;
  const ParallelPlan p = PlanFromConfig(*w, c);
  const double tokens = static_cast<double>(w->training.seq_length) /
                        static_cast<double>(std::max<int64_t>(1, p.cp)) *
                        static_cast<double>(std::max<int64_t>(1, p.micro_batch));
  f.logit_gelems = tokens * static_cast<double>(w->model.vocab_size) /
                   static_cast<double>(std::max<int64_t>(1, p.tp)) / kGiB;
  f.microbatches = static_cast<double>(std::max<int64_t>(1, p.num_microbatches));
  return f;
}

double LearnedPeakGiB(const MemoryFeatures& f, const CalibrationState& c) {
  return f.overhead_gib + c.memory_overhead_gib + c.memory_static_scale * f.static_gib +
         c.memory_activation_scale * f.activations_gib + c.memory_logits_bytes * f.logit_gelems;
}

void FitMemoryModel(const std::vector<MemoryObservation>& obs, CalibrationState* c) {
  std::vector<Target> targets;
  for (const auto& o : obs) {
    if (!o.oom && o.peak_gib > 0) {
      targets.push_back({Row(o.features), o.peak_gib - o.features.overhead_gib});
    }
  }
  Vec x = Fit(targets);
  std::vector<double> cov;
  // Out-of-memory configurations and device-level readings are inequalities: each one
  // predicted below what it needed (above what the device held) joins the fit as an
  // observation at that bound, until none is violated.
  std::set<size_t> active;
  for (int round = 0; round < 6; ++round) {
    CalibrationState trial = *c;
    Store(x, &trial);
    bool added = false;
    for (size_t i = 0; i < obs.size(); ++i) {
      const MemoryObservation& o = obs[i];
      if (active.count(i) > 0) continue;
      const double learned = LearnedPeakGiB(o.features, trial);
      double bound = 0;
      if (o.oom && learned < o.needs_gib) bound = o.needs_gib + kOomExtra;
      if (!o.oom && o.peak_gib <= 0 && o.at_most_gib > 0 && learned > o.at_most_gib) {
        bound = o.at_most_gib;
      }
      if (bound <= 0) continue;
      active.insert(i);
      targets.push_back({Row(o.features), bound - o.features.overhead_gib, kOomSd});
      added = true;
    }
    if (!added) break;
    x = Fit(targets);
  }
  x = Fit(targets, &cov);
  Store(x, c);
  c->memory_covariance.clear();
  // The spread is reported once a peak was measured: out-of-memory bounds alone pin too little
  // for it to mean anything but "the prior".
  if (!targets.empty() && targets.size() > active.size()) c->memory_covariance = std::move(cov);
}

double LearnedPeakSdGiB(const MemoryFeatures& f, const CalibrationState& c) {
  if (c.memory_covariance.size() != kTerms * kTerms) return 0.0;
  const Vec x = Row(f);
  double v = 0;
  for (int i = 0; i < kTerms; ++i) {
    for (int k = 0; k < kTerms; ++k) v += x[i] * c.memory_covariance[i * kTerms + k] * x[k];
  }
  return std::sqrt(std::max(0.0, v));
}

std::optional<double> AllocatedFromOomText(const std::string& text, double* tried_gib) {
  static const std::regex kAllocated(R"(([0-9.]+) ([GM])iB is allocated by PyTorch)");
  static const std::regex kTried(R"(Tried to allocate ([0-9.]+) ([GM])iB)");
  auto gib = [](const std::smatch& m) {
    const double v = std::strtod(m[1].str().c_str(), nullptr);
    return m[2].str() == "M" ? v / 1024.0 : v;
  };
  std::smatch m;
  if (tried_gib != nullptr) {
    *tried_gib = std::regex_search(text, m, kTried) ? gib(m) : 0.0;
  }
  if (!std::regex_search(text, m, kAllocated)) return std::nullopt;
  return gib(m);
}

bool NeedsAtLeastAsMuchMemory(const Config& candidate, const Config& failed) {
  // Larger keeps more memory.
  static const std::set<std::string> kLarger = {"mbs", "perDeviceBatchSize"};
  // Smaller keeps more memory (finer sharding, or a memory-saving switch turned on).
  static const std::set<std::string> kSmaller = {"tp",
                                                 "pp",
                                                 "cp",
                                                 "ep",
                                                 "iciFsdp",
                                                 "iciTensor",
                                                 "sequenceParallel",
                                                 "distributedOptimizer",
                                                 "fusedCrossEntropy"};
  for (const auto& [key, fv] : failed) {
    auto it = candidate.find(key);
    if (it == candidate.end()) return false;
    const ParamValue& cv = it->second;
    if (cv == fv) continue;
    if (key == "recompute" && cv.type() == ParamType::kEnum) {
      if (RecomputeRank(cv.AsString()) < RecomputeRank(fv.AsString())) return false;
      continue;
    }
    if (cv.type() == ParamType::kEnum || fv.type() == ParamType::kEnum) return false;
    if (kLarger.count(key) > 0) {
      if (cv.AsInt() < fv.AsInt()) return false;
    } else if (kSmaller.count(key) > 0) {
      if (cv.AsInt() > fv.AsInt()) return false;
    } else {
      return false;
    }
  }
  return candidate.size() == failed.size();
}

}  // namespace paratune
