#include "agents/collectors/metric_derivation.h"

#include <cmath>

#include "base/strings.h"

namespace paratune::collectors {

namespace internal {

namespace {

struct Field {
  const char* key;
  double TrialMetrics::*value;
};
constexpr Field kFields[] = {
    {"mfu", &TrialMetrics::mfu},
    {"tflopsPerDevice", &TrialMetrics::tflops_per_device},
    {"tokensPerSecondPerDevice", &TrialMetrics::tokens_per_second_per_device},
    {"stepTimeSeconds", &TrialMetrics::step_time_seconds},
    {"peakMemoryGiB", &TrialMetrics::peak_memory_gib},
    {"avgMemoryGiB", &TrialMetrics::avg_memory_gib}};

void Set(CollectedMetrics* c, double TrialMetrics::*field, const char* key, double v) {
  if (!std::isfinite(v) || v <= 0) return;
  c->metrics.*field = v;
  c->sources[key] = kSourceDerived;
}

// Megatron-DeepSpeed's TFLOPs: throughput_calculator (megatron/utils.py,
// deepspeedai/Megatron-DeepSpeed@4efb479) counts fwd_bwd = 3 x forward, plus one forward for full
// recompute (4/3 of the model FLOPs) and the attention batched GEMMs for selective recompute.
void CorrectRecompute(const CollectorContext& ctx, CollectedMetrics* c) {
  TrialMetrics& m = c->metrics;
  if (m.tflops_per_device <= 0) return;
  const std::string printed = Significant(m.tflops_per_device, 4);
  if (ctx.model_flops_per_token > 0 && m.tokens_per_second_per_device > 0) {
    m.tflops_per_device = 0;
    Set(c, &TrialMetrics::tflops_per_device, "tflopsPerDevice",
        ctx.model_flops_per_token * m.tokens_per_second_per_device / 1e12);
    c->warnings.push_back("the log's TFLOPs (" + printed +
                          ") count recomputation (Megatron-DeepSpeed); TFLOP/s are the model "
                          "FLOPs of the tokens read instead");
  } else if (ctx.recompute == "full") {
    Set(c, &TrialMetrics::tflops_per_device, "tflopsPerDevice", m.tflops_per_device * 0.75);
    c->warnings.push_back("the log's TFLOPs (" + printed +
                          ") count the full recomputation's extra forward pass "
                          "(Megatron-DeepSpeed); scaled by 3/4 to model FLOPs");
  } else if (ctx.recompute == "selective" || ctx.recompute.empty()) {
    c->warnings.push_back(
        "the log's TFLOPs count recomputation (Megatron-DeepSpeed) and the model's FLOPs are "
        "unknown: TFLOP/s are as printed, high by the recomputed attention when the trial "
        "recomputes");
  }
}

bool Derived(const CollectedMetrics& c, const char* key) {
  auto it = c.sources.find(key);
  return it != c.sources.end() && it->second == kSourceDerived;
}

// A derived MFU over 1 cannot be, and says which input is not the run's. When the TFLOP/s per
// device were derived from the rate and the campaign, the campaign's model or batch shape is
// not the run's (a template that hard-codes another batch or sequence length, a log read against
// another campaign): the derived TFLOP/s and MFU are left out. When they are the log's, the
// campaign's accelerator (or precision, which picks the peak) is not what ran, or the framework
// counts FLOPs its own way: the printed TFLOP/s stay, the MFU is left out. Either way the
// objective is missing for that reason (ObjectiveMissing) rather than an impossible value
// leading the search.
void LeaveOutImpossible(const CollectorContext& ctx, CollectedMetrics* c) {
  TrialMetrics& m = c->metrics;
  const bool tflops_derived = Derived(*c, "tflopsPerDevice");
  const bool impossible = tflops_derived ? m.tflops_per_device > ctx.peak_tflops_per_device
                                         : Derived(*c, "mfu") && m.mfu > 1;
  if (!impossible) return;
  const std::string tflops = Significant(m.tflops_per_device, 4);
  const std::string peak = Significant(ctx.peak_tflops_per_device, 4);
  c->implausible_derivation =
      tflops_derived
          ? "the TFLOP/s per device derived from its rate and the campaign (" + tflops +
                ") exceed the accelerator's peak (" + peak +
                "): the campaign's model or batch shape (spec.model, spec.training.seqLength, "
                "globalBatchSize, devices) is not the run's"
          : "the MFU derived from the TFLOP/s per device it printed (" + tflops +
                ") and the accelerator's peak (" + peak +
                ") is over 1: the campaign's accelerator or precision (spec.hardware.accelerator, "
                "spec.training.precision) is not what ran, or the framework counts FLOPs its own "
                "way";
  c->warnings.push_back(c->implausible_derivation +
                        (tflops_derived ? "; TFLOP/s and MFU are left out" : "; MFU is left out"));
  if (tflops_derived) {
    m.tflops_per_device = 0;
    c->sources.erase("tflopsPerDevice");
  }
  if (Derived(*c, "mfu")) {
    m.mfu = 0;
    c->sources.erase("mfu");
  }
}

}  // namespace

void MarkSources(const TrialMetrics& m, const char* source,
                 std::map<std::string, std::string>* sources) {
  for (const Field& f : kFields) {
    if (m.*f.value > 0 && !sources->count(f.key)) (*sources)[f.key] = source;
  }
}

void DeriveMissing(const CollectorContext& ctx, int64_t logged_gbs, bool counts_recompute,
                   CollectedMetrics* c) {
  TrialMetrics& m = c->metrics;
  for (const Field& f : kFields) {
    if (!std::isfinite(m.*f.value) || m.*f.value < 0) {
      m.*f.value = 0;
      c->sources.erase(f.key);
    }
  }
  const double gbs =
      logged_gbs > 0 ? static_cast<double>(logged_gbs) : static_cast<double>(ctx.global_batch_size);
  const double tokens_per_device =
      ctx.devices > 0 ? gbs * static_cast<double>(ctx.seq_length) / ctx.devices : 0.0;
  if (m.tokens_per_second_per_device == 0 && m.step_time_seconds > 0) {
    Set(c, &TrialMetrics::tokens_per_second_per_device, "tokensPerSecondPerDevice",
        tokens_per_device / m.step_time_seconds);
  }
  if (m.step_time_seconds == 0 && m.tokens_per_second_per_device > 0) {
    Set(c, &TrialMetrics::step_time_seconds, "stepTimeSeconds",
        tokens_per_device / m.tokens_per_second_per_device);
  }
  if (counts_recompute) CorrectRecompute(ctx, c);
  if (m.tflops_per_device == 0 && ctx.model_flops_per_token > 0) {
    Set(c, &TrialMetrics::tflops_per_device, "tflopsPerDevice",
        ctx.model_flops_per_token * m.tokens_per_second_per_device / 1e12);
  }
  if (ctx.peak_tflops_per_device > 0) {
    if (m.tflops_per_device == 0) {
      Set(c, &TrialMetrics::tflops_per_device, "tflopsPerDevice",
          m.mfu * ctx.peak_tflops_per_device);
    }
    if (m.mfu == 0) {
      Set(c, &TrialMetrics::mfu, "mfu", m.tflops_per_device / ctx.peak_tflops_per_device);
    }
    LeaveOutImpossible(ctx, c);
  }
}

}  // namespace internal

std::string MissingObjectiveReason(const std::string& collector, const CollectedMetrics& c,
                                   ObjectiveMetric objective, const CollectorContext& ctx) {
  const TrialMetrics& m = c.metrics;
  if (m.Objective(objective) > 0) return "";
  std::string lacks;
  std::string needs;
  const bool has_rate = m.step_time_seconds > 0 || m.tokens_per_second_per_device > 0;
  const bool shape = ctx.seq_length > 0 && ctx.devices > 0 && ctx.global_batch_size > 0;
  switch (objective) {
    case ObjectiveMetric::kMfu:
    case ObjectiveMetric::kTflopsPerDevice:
      if (!c.implausible_derivation.empty()) {
        return "the " + collector + " log has " +
               (m.tflops_per_device > 0 ? "no MFU" : "no TFLOP/s or MFU") + ", and " +
               c.implausible_derivation;
      }
      lacks = "no TFLOP/s or MFU";
      if (collector == "megatron-lm" || collector == "megatron-bridge") {
        lacks += " (Megatron prints TFLOP/s/GPU only with --log-throughput)";
      }
      if (!has_rate) lacks += " and no step time or tokens/s";
      if (has_rate && ctx.model_flops_per_token <= 0) {
        needs += "the model's FLOPs per token (spec.model)";
      }
      if (objective == ObjectiveMetric::kMfu && ctx.peak_tflops_per_device <= 0) {
        needs += std::string(needs.empty() ? "" : " and ") +
                 "the accelerator's peak TFLOP/s (spec.hardware.accelerator, "
                 "spec.training.precision)";
      }
      break;
    case ObjectiveMetric::kTokensPerSecondPerDevice:
    case ObjectiveMetric::kStepTimeSeconds:
      lacks = "no step time or tokens/s";
      if (!shape) {
        needs = "the batch shape (spec.training.seqLength, globalBatchSize, devices)";
      }
      break;
  }
  std::string out = "the " + collector + " log has " + lacks;
  if (!needs.empty())
    out += "; deriving " + std::string(ObjectiveMetricName(objective)) + " needs " + needs;
  return out;
}

}  // namespace paratune::collectors
