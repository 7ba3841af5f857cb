// paratune estimate -f CAMPAIGN.yaml [--set key=value ...] [-o json]
// The performance and memory model for one configuration (contract section 6): the campaign's
// baseline, overridden by --set. Exit 2 with a one-line reason for bad input.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "agents/core/campaign.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "base/strings.h"
#include "cli/command.h"

namespace paratune::cli {

namespace {

std::string ValuesText(const SearchParameter& p) {
  std::string s = "[";
  for (size_t i = 0; i < p.values.size(); ++i) s += (i ? ", " : "") + p.values[i].ToString();
  return s + "]";
}

// Applies `--set key=value` flags to `config`. Unknown keys, malformed values and values outside
// the campaign's search space (for searched keys) are kInvalidArgument naming the flag.
Status ApplySets(const CampaignSpec& spec, const std::vector<std::string>& sets, Config* config) {
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Invalid("--set " + s + ": expected key=value");
    }
    const std::string key = s.substr(0, eq);
    const std::string text = s.substr(eq + 1);
    const ParamInfo* info = FindParameter(key);
    if (info == nullptr) {
      return Status::Invalid("--set " + s + ": unknown parameter \"" + key + "\"");
    }
    auto value = ParseParamText(*info, text, "--set " + s);
    if (!value.ok()) return value.status();
    if (const SearchParameter* sp = spec.FindSearchParameter(key)) {
      bool allowed = false;
      for (const auto& v : sp->values) allowed = allowed || v == *value;
      if (!allowed) {
        return Status::Invalid("--set " + s + ": " + text + " is outside the search space " +
                               ValuesText(*sp));
      }
    }
    (*config)[key] = *value;
  }
  return Status::Ok();
}

// The kernel fields of spec.training that differ from their defaults, as the summary line's tail.
std::string KernelChoices(const TrainingSpec& t) {
  std::string out;
  if (t.attention != "flash") out += ", " + t.attention + " attention";
  if (t.transformer_engine) out += ", Transformer Engine kernels";
  if (t.moe_dispatcher != "alltoall") out += ", " + t.moe_dispatcher + " dispatch";
  if (t.moe_routing != "learned") out += ", " + t.moe_routing + " routing";
  return out;
}

void PrintHuman(const Workload& w, const Config& effective, const Estimate& e) {
  std::ostringstream o;
  o << "Model " << w.model.name << " (" << Fixed(w.model.TotalParams() / 1e9, 2) << "B params) on "
    << w.devices << " x " << w.accel->name << ", seq " << w.training.seq_length << ", global batch "
    << w.training.global_batch_size << ", " << w.training.precision << ", " << w.training.framework
    << KernelChoices(w.training) << "\n";
  if (!w.training.attention_source.empty()) {
    o << "Attention kernel from the " << w.training.attention_source << "\n";
  }
  o << "Config  " << ConfigKey(effective) << "\n\n";
  o << "Memory per device (GiB)            Step time (s)\n";
  const std::pair<const char*, double> mem[] = {{"parameters", e.memory.parameters_gib},
                                                {"gradients", e.memory.gradients_gib},
                                                {"optimizer", e.memory.optimizer_gib},
                                                {"activations", e.memory.activations_gib},
                                                {"other", e.memory.other_gib},
                                                {"peak", e.peak_memory_gib},
                                                {"capacity", e.capacity_gib},
                                                {"", 0}};
  const std::pair<const char*, double> time[] = {{"compute", e.time.compute},
                                                 {"tensor parallel", e.time.tensor_parallel},
                                                 {"context parallel", e.time.context_parallel},
                                                 {"pipeline bubble", e.time.pipeline_bubble},
                                                 {"pipeline p2p", e.time.pipeline_p2p},
                                                 {"data parallel", e.time.data_parallel},
                                                 {"expert parallel", e.time.expert_parallel},
                                                 {"optimizer", e.time.optimizer}};
  for (size_t i = 0; i < 8; ++i) {
    std::string left = mem[i].first[0] ? std::string("  ") + mem[i].first : "";
    if (mem[i].first[0])
      left += std::string(16 - std::string(mem[i].first).size(), ' ') + Fixed(mem[i].second, 2);
    o << left << std::string(left.size() < 35 ? 35 - left.size() : 1, ' ') << time[i].first
      << std::string(18 - std::string(time[i].first).size(), ' ') << Fixed(time[i].second, 3)
      << "\n";
  }
  o << std::string(35, ' ') << "step              " << Fixed(e.step_time_seconds, 3) << "\n\n";
  o << "MFU " << Fixed(e.mfu * 100, 1) << "%  HFU " << Fixed(e.hfu * 100, 1) << "%  model "
    << Fixed(e.model_tflops_per_device, 1) << " TFLOP/s/device  hardware "
    << Fixed(e.hardware_tflops_per_device, 1) << "  tokens/s/device "
    << Fixed(e.tokens_per_second_per_device, 0) << "\n";
  o << "Verdict: " << e.verdict << "   Bottleneck: " << e.bottleneck << "\n";
  // Contract section 14: the range the model's residuals on its fit data give for this
  // framework profile (agents/model/interval.h).
  o << "Interval: step " << Fixed(e.step_time_range.low, 3) << " .. "
    << Fixed(e.step_time_range.high, 3) << " s   peak " << Fixed(e.peak_memory_range.low, 2)
    << " .. " << Fixed(e.peak_memory_range.high, 2) << " GiB of " << Fixed(e.capacity_gib, 2)
    << "   tokens/s/device " << Fixed(e.tokens_range.low, 0) << " .. "
    << Fixed(e.tokens_range.high, 0) << "\n";
  if (!e.violations.empty()) {
    o << "Violations:\n";
    for (const auto& v : e.violations) o << "  - " << v << "\n";
  }
  std::cout << o.str();
}

int RunEstimate(const Args& args) {
  const std::string cmd = "estimate";
  auto file = args.Get("-f");
  if (!file) return ReportError(cmd, Status::Invalid("-f: a campaign file is required"));
  auto spec = LoadCampaignFile(*file);
  if (!spec.ok()) return ReportError(cmd, spec.status());
  auto workload = ResolveWorkload(*spec);
  if (!workload.ok()) return ReportError(cmd, workload.status());
  Config config = spec->baseline.value_or(Config{});
  Status st = ApplySets(*spec, args.GetAll("--set"), &config);
  if (!st.ok()) return ReportError(cmd, st);
  const Estimate e = EstimateConfig(*workload, config);
  if (args.JsonOutput()) {
    std::cout << e.ToJson().dump(2) << "\n";
  } else {
    PrintHuman(*workload, EffectiveConfig(*workload, config), e);
  }
  return kExitOk;
}

}  // namespace

PARATUNE_COMMAND("estimate",
                 "predict memory, step time and MFU of one configuration (-f CAMPAIGN --set k=v)",
                 {}, RunEstimate, {"-f", "--set"});

}  // namespace paratune::cli
