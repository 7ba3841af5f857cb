// The cold model against real runs and published tables, all read from campaign files the way
// `paratune estimate -f` reads them: the 25 H100 configurations of tests/model/data/h100-hf
// (Hugging Face transformers) and the SC'21 / MaxText rows of tests/model/data/published.tsv.
// Prints the "Model vs H100 measurements" section of bench/RESULTS.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "testing/eval/measured_check.h"

namespace paratune {
namespace {

const std::string kData = std::string(PARATUNE_SOURCE_DIR) + "/tests/model/data/";

struct Summary {
  int rows = 0, right = 0, ran = 0;
  double time_sum = 0, time_max = 0, mem_sum = 0, mem_max = 0;
};

void PrintCampaign(const std::string& name, Summary* s) {
  const std::string dir = kData + "h100-hf/";
  auto check = CheckAgainstMeasurements(dir + name + ".yaml", dir + name + ".jsonl");
  if (!check.ok()) {
    std::printf("| %s | error: %s |\n", name.c_str(), check.status().ToString().c_str());
    return;
  }
  for (const auto& r : check->rows) {
    ++s->rows;
    s->right += r.FitCalledRight();
    const Estimate& e = r.predicted;
    std::string measured_time = "-", measured_mem = "OOM", time_err = "", mem_err = "";
    if (r.measured_ok) {
      ++s->ran;
      const double te = r.StepTimeErrorPct(), me = r.PeakMemoryErrorPct();
      s->time_sum += std::fabs(te);
      s->time_max = std::max(s->time_max, std::fabs(te));
      s->mem_sum += std::fabs(me);
      s->mem_max = std::max(s->mem_max, std::fabs(me));
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.3f", r.measured_step_seconds);
      measured_time = buf;
      std::snprintf(buf, sizeof(buf), "%.2f", r.measured_peak_gib);
      measured_mem = buf;
      std::snprintf(buf, sizeof(buf), "%+.1f%%", te);
      time_err = buf;
      std::snprintf(buf, sizeof(buf), "%+.1f%%", me);
      mem_err = buf;
    } else if (r.allocated_at_failure_gib > 0) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "OOM (%.2f alloc.)", r.allocated_at_failure_gib);
      measured_mem = buf;
    }
    std::printf("| %s | %s | %.3f | %s | %s | %.2f / %.2f | %s | %s | %s | %s |\n", name.c_str(),
                ConfigKey(r.config).c_str(), e.step_time_seconds, measured_time.c_str(),
                time_err.c_str(), e.peak_memory_gib, e.capacity_gib, measured_mem.c_str(),
                mem_err.c_str(), e.verdict.c_str(), r.FitCalledRight() ? "yes" : "**no**");
  }
}

void PrintPublished() {
  std::ifstream in(kData + "published.tsv");
  std::printf(
      "\n### Published tables through campaign files\n\n"
      "Each row is a campaign YAML under tests/model/data/ (workload fields included: GeLU, "
      "tied embeddings, dropout, unfused attention for SC'21; headDim 128 for MaxText), "
      "estimated through LoadCampaignFile + ResolveWorkload + EstimateConfig of its baseline, "
      "as `paratune estimate -f` does.\n\n"
      "| file | published | predicted | error |\n|---|---|---|---|\n");
  std::string line;
  double sum[2] = {0, 0}, max[2] = {0, 0};
  int n[2] = {0, 0};
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string file, metric;
    double published = 0;
    ss >> file >> metric >> published;
    auto spec = LoadCampaignFile(kData + file);
    if (!spec.ok()) continue;
    auto w = ResolveWorkload(*spec);
    if (!w.ok()) continue;
    const Estimate e = EstimateConfig(*w, spec->baseline.value_or(Config{}));
    const int t = metric == "mfuPercent";
    const double p = t ? 100.0 * e.mfu : e.hardware_tflops_per_device;
    const double err = (p / published - 1.0) * 100.0;
    sum[t] += std::fabs(err);
    max[t] = std::max(max[t], std::fabs(err));
    ++n[t];
    std::printf("| %s | %.1f %s | %.1f | %+.1f%% |\n", file.c_str(), published,
                t ? "% MFU" : "TFLOP/s/GPU", p, err);
  }
  std::printf(
      "\nSC'21 Table 1: mean |error| %.1f%%, max %.1f%% (%d rows). MaxText: mean %.1f%%, max "
      "%.1f%% (%d rows).\n",
      n[0] ? sum[0] / n[0] : 0, max[0], n[0], n[1] ? sum[1] / n[1] : 0, max[1], n[1]);
}

// Median time of one EstimateConfig under the transformers profile (batches of 100 calls).
void PrintSpeed() {
  auto spec = LoadCampaignFile(kData + "h100-hf/llama32-1b-s4096-gbs32.yaml");
  if (!spec.ok()) return;
  auto w = ResolveWorkload(*spec);
  if (!w.ok()) return;
  const Config configs[] = {{{"mbs", ParamValue::Int(2)}, {"recompute", ParamValue::Enum("none")}},
                            {{"mbs", ParamValue::Int(4)}, {"recompute", ParamValue::Enum("full")}}};
  std::vector<double> per_call;
  double sink = 0;
  for (int batch = 0; batch < 2000; ++batch) {
    const auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) sink += EstimateConfig(*w, configs[i % 2]).step_time_seconds;
    const auto b = std::chrono::steady_clock::now();
    per_call.push_back(std::chrono::duration<double, std::micro>(b - a).count() / 100.0);
  }
  std::sort(per_call.begin(), per_call.end());
  std::printf(
      "\nOne EstimateConfig under the transformers profile: median %.2f us (target < 5 us; "
      "checksum %.0f).\n",
      per_call[per_call.size() / 2], sink);
}

}  // namespace
}  // namespace paratune

int main() {
  using namespace paratune;
  std::printf(
      "## Model vs H100 measurements\n\n"
      "Cold model (no calibration from trials), `framework: transformers`, against real runs on "
      "one H100 80GB (tests/model/data/h100-hf, copied from the shared set; Hugging Face "
      "transformers, bf16 autocast over fp32 weights, SDPA, fused AdamW). Peak memory is "
      "predicted allocated bytes vs `torch.cuda.max_memory_allocated()`; capacity is what the "
      "allocator can hand out (79.11 GiB minus the CUDA context and one fp32 logits block).\n\n"
      "| campaign | config | step s predicted | measured | error | peak GiB predicted / "
      "capacity | measured | error | verdict | right |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n");
  Summary s;
  for (const char* name :
       {"llama3-8b-16l-s4096-gbs16", "llama32-1b-s4096-gbs32", "llama32-1b-s8192-gbs16",
        "qwen25-05b-s4096-gbs32", "qwen25-3b-s4096-gbs16"}) {
    PrintCampaign(name, &s);
  }
  std::printf(
      "\nFit/OOM called right: %d/%d. Where it ran (%d configurations): step time mean |error| "
      "%.1f%%, max %.1f%%; peak memory mean |error| %.1f%%, max %.1f%%.\n",
      s.right, s.rows, s.ran, s.ran ? s.time_sum / s.ran : 0, s.time_max,
      s.ran ? s.mem_sum / s.ran : 0, s.mem_max);
  PrintSpeed();
  PrintPublished();
  return s.rows == 25 ? 0 : 1;
}
