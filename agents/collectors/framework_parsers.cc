#include "agents/collectors/framework_parsers.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "agents/collectors/log_lines.h"

namespace paratune::collectors::internal {

namespace {

constexpr double kMiBPerGiB = 1024.0;
constexpr double kGBPerGiB = 1.073741824;  // 1e9 bytes in GiB

bool Has(std::string_view line, std::string_view s) {
  return line.find(s) != std::string_view::npos;
}

// A logged count as an integer; values outside int64 (a garbled "iteration 1e300") give 0, which
// the collectors treat as "not printed" (converting them would be undefined behaviour).
int64_t ToCount(double v) { return (v > -9.0e18 && v < 9.0e18) ? static_cast<int64_t>(v) : 0; }

void AddMemory(double avg_gib, double peak_gib, LogMemory* m) {
  if (peak_gib > 0) m->peak_gib = std::max(m->peak_gib, peak_gib);
  if (avg_gib > 0) {
    m->avg_gib += avg_gib;
    ++m->avg_count;
  }
}

void Push(StepSample s, int64_t rank, ParsedLog* out) {
  s.rank = rank;
  out->samples.push_back(s);
}

// Megatron-LM's `report_memory`: `[Rank 0] (after 10 iterations) memory (MB) | allocated: ... |
// max allocated: ...` (megatron/training/utils/common_utils.py, NVIDIA/Megatron-LM@d98e8a6).
// Megatron-Bridge's: `[Rank 0] (after 10 iterations) memory (GB) | mem-allocated-gigabytes: 12.3
// | mem-max-allocated-gigabytes: 45.6 | ...`, decimal gigabytes (bytes / 1.0e9; report_memory in
// src/megatron/bridge/training/utils/train_utils.py, NVIDIA-NeMo/Megatron-Bridge@067f987).
bool ParseMegatronMemory(std::string_view line, ParsedLog* out) {
  double alloc = 0, max_alloc = 0;
  if (Has(line, "memory (MB)")) {
    NumberAfter(line, "| allocated:", &alloc);
    NumberAfter(line, "max allocated:", &max_alloc);
    AddMemory(alloc / kMiBPerGiB, max_alloc / kMiBPerGiB, &out->memory);
    return true;
  }
  if (Has(line, "mem-max-allocated-gigabytes") || Has(line, "memory (GB)")) {
    NumberAfter(line, "mem-allocated-gigabytes", &alloc);
    NumberAfter(line, "mem-max-allocated-gigabytes", &max_alloc);
    AddMemory(alloc / kGBPerGiB, max_alloc / kGBPerGiB, &out->memory);
    return true;
  }
  return false;
}

// Megatron-LM training_log (megatron/training/training.py, NVIDIA/Megatron-LM@d98e8a6):
// ` [2026-...] iteration 10/ 100 | consumed samples: ... | elapsed time per iteration (ms): 9100.2
// | throughput per GPU (TFLOP/s/GPU): 412.3 | ... | global batch size: 512 |`, the throughput
// field only with --log-throughput (off by default). Validation: ` validation loss at iteration
// 100 | lm loss value: ...` (evaluate_and_print_results). Megatron-DeepSpeed prints the same line
// in ms (deepspeedai/Megatron-DeepSpeed@4efb479) or seconds (bigscience-workshop fork) with
// `tokens per gpu per second (tgs):` and `TFLOPs:`, whose FLOPs count recomputation
// (throughput_calculator in megatron/utils.py adds one forward pass for full recompute and the
// attention batched GEMMs for selective recompute). The argonne-lcf fork (2025) prints the same
// fields as `iteration=  136004/  136100 | ... | elapsed_time_per_iteration_ms=3415.3 | ... |
// tokens_per_gpu_per_second_tgs=4797.255 | TFLOPs=53.66 |`.
void ParseMegatronLine(std::string_view line, int64_t rank, ParsedLog* out) {
  double v = 0;
  if (Has(line, "validation loss at")) {
    ++out->other_lines;
    return;
  }
  if (ParseMegatronMemory(line, out)) return;
  // load_checkpoint's `  successfully loaded checkpoint from DIR [ t 1/2, p 1/1 ] at iteration N`
  // (megatron/training/checkpointing.py, NVIDIA/Megatron-LM@d98e8a6; Megatron-Bridge's
  // checkpointing.py prints the same, NVIDIA-NeMo/Megatron-Bridge@067f987): N is the iteration
  // training resumes from (0 under --finetune), so this process trains N + 1 first.
  if (Has(line, "successfully loaded checkpoint") && NumberAfter(line, "at iteration", &v)) {
    out->first_trained_step = ToCount(v) + 1;
    return;
  }
  // The Megatron-LM v1.1.5 forks of DeepSpeedExamples (and BigScience's Megatron-DeepSpeed of
  // 2021) print `Effective Tera Flops per GPU: 41.94 and total parameters 52.005 B` on a line of
  // its own after each iteration's (`flops_calculator` in megatron/utils.py: parameters x batch x
  // seq x 2 x 4 FLOPs, the 4 counting the recomputed forward): that iteration's TFLOP/s.
  if (NumberAfter(line, "Effective Tera Flops per GPU", &v)) {
    for (auto it = out->samples.rbegin(); it != out->samples.rend(); ++it) {
      if (it->rank != rank) continue;
      if (it->tflops_per_device <= 0) {
        it->tflops_per_device = v;
        it->tflops_counts_recompute = true;
      }
      break;
    }
    return;
  }
  StepSample s;
  if (NumberAfter(line, "elapsed time per iteration (ms)", &v) ||
      NumberAfter(line, "elapsed_time_per_iteration_ms", &v)) {
    s.step_time_seconds = v / 1000.0;
  } else if (NumberAfter(line, "elapsed time per iteration (s)", &v)) {
    s.step_time_seconds = v;
  } else {
    return;
  }
  if (NumberAfter(line, "iteration", &v)) s.step = ToCount(v);
  if (NumberAfter(line, "throughput per GPU (TFLOP/s/GPU)", &v)) {
    s.tflops_per_device = v;
  } else if (NumberAfter(line, "TFLOPs", &v)) {
    s.tflops_per_device = v;
    s.tflops_counts_recompute = true;
  }
  // Pai-Megatron-Patch (alibaba) adds ` tokens/sec/gpu: N |` (global batch x seq length /
  // elapsed / world size) to Megatron-LM's line (its run scripts as quoted in DeepLink-org
  // AIChipBenchmark llm/QwenVL/README.md, abfb98e).
  // OpenEuroLLM's fork (OpenEuroLLM/NVIDIA-Megatron-LM, megatron/training/training.py, cfae326
  // of 2026-03) adds ` Tokens per second per GPU (Tok/s/GPU): N |` beside the throughput field
  // (global batch x seq length / elapsed / world size).
  // Megatron-LM's own RL training (--perform-rl-step, megatron/rl/rl_utils.py
  // log_rl_throughput_metrics, 7597a0d of 2026-04) adds ` toks/s: N | toks/s/gpu: N |` (the same
  // quotient), then compute_ and actual_ twins under sequence packing: the first is read.
  if (NumberAfter(line, "tokens per gpu per second (tgs)", &v) ||
      NumberAfter(line, "tokens_per_gpu_per_second_tgs", &v) ||
      NumberAfter(line, "tokens/sec/gpu", &v) || NumberAfter(line, "(Tok/s/GPU)", &v) ||
      NumberAfter(line, "| toks/s/gpu", &v)) {
    s.tokens_per_second_per_device = v;
  }
  // epfLLM's Megatron-LLM (megatron/training.py, 9380370 of 2023-09) adds ` rate (tokens/sec):
  // N |`: the tokens counted on every data-parallel rank (all-reduced in finetune.py) over the
  // interval, the whole job's.
  if (NumberAfter(line, "rate (tokens/sec)", &v)) s.tokens_per_second_all_devices = v;
  if (NumberAfter(line, "global batch size", &v) || NumberAfter(line, "global_batch_size", &v)) {
    s.global_batch_size = ToCount(v);
  }
  if (out->pending) {  // Megatron-Bridge printed this interval's `Step Time` line first
    if (s.tflops_per_device <= 0) s.tflops_per_device = out->pending_sample.tflops_per_device;
    out->pending = false;
  }
  Push(s, rank, out);
}

// NeMo Automodel (NVIDIA-NeMo/Automodel, nemo_automodel/recipes/llm/train_ft.py log_train_metrics
// and _run_train_optim_step, @36044ad): rank 0 logs every optimizer step, behind `2025-08-20
// 10:00:00 | INFO | root | `, `step 10 | epoch 0 | loss 2.3456 | grad_norm 1.2345 | lr 1.00e-05 |
// mem 12.34 GiB | tps 12345.67(1543.21/gpu) | num_label_tokens 4096`, steps counted from 0.
// Since 2025-08-18 (e557448ff) `tps` is the step's tokens summed over the data-parallel ranks over
// the time since the previous step ended: the whole job's tokens/s, the first step holding the
// start-up and a step after a validation or checkpoint save holding that pause. `/gpu` (since
// 2025-08-28, db4c6227a) divides it by the data- and context-parallel sizes only, so it is per
// device when tp = pp = 1. `mem` is torch.cuda.max_memory_allocated() / 2**30, the peak being
// reset after each line. Before 2025-08-18 the line read `step 8 | epoch 0 | loss ... | grad_norm
// ... | mem: 14.58 GiB | tps 9328.79` (finetune.py, b37910a9: no lr before 2025-07-22), its step
// counting micro-batches (so the first optimizer step is `step 4` under 4 accumulation steps), and
// its tps rank 0's own tokens over the time since the last line: a per-device figure when tp = pp
// = 1. `[val] ...` lines are validation. The VLM, distillation and diffusion-LM recipes print the
// same fields among their own; base_recipe.py prints `Loading checkpoint from DIR` when it
// resumes, and that process's first step warms up as a fresh one's does. Returns whether the line
// was one of these.
bool ParseAutomodelLine(std::string_view line, int64_t rank, ParsedLog* out) {
  if (Has(line, "Loading checkpoint from") && !Has(line, "from iteration")) {
    out->automodel_checkpoint_loaded = true;
    return true;
  }
  const size_t epoch = line.find(" | epoch ");
  if (epoch == std::string_view::npos) return false;
  if (Has(line, "[val]")) {
    ++out->other_lines;
    return true;
  }
  const size_t step_at = line.rfind("step ", epoch);
  double tps = 0;
  if (step_at == std::string_view::npos || !NumberAfter(line, "| tps", &tps) || tps <= 0) {
    return false;
  }
  double step = 0;
  if (!NumberAfter(line.substr(step_at, epoch - step_at), "step", &step)) return false;
  StepSample s;
  s.step = ToCount(step);
  double v = 0;
  if (NumberAfter(line, "| mem:", &v)) {  // before 2025-08-18: rank 0's own tokens/s
    s.tokens_per_second_per_device = tps;
  } else {
    NumberAfter(line, "| mem", &v);
    s.tokens_per_second_all_devices = tps;
    // `tps 12345.67(1543.21/gpu)`: the figure in parentheses right after tps.
    std::string_view rest = line.substr(line.find("| tps") + 5);
    rest.remove_prefix(std::min(rest.size(), rest.find('(')));
    double per_gpu = 0;
    if (rest.size() > 1 && Has(rest.substr(0, rest.find(')') + 1), "/gpu)") &&
        NumberAfter(rest, "(", &per_gpu)) {
      s.tokens_per_second_per_device = per_gpu;
    }
  }
  s.memory_gib = v;
  out->automodel_steps = true;
  if (out->automodel_checkpoint_loaded) {
    out->first_trained_step = s.step;
    out->automodel_checkpoint_loaded = false;
  }
  Push(s, rank, out);
  return true;
}

// Megatron-Bridge (src/megatron/bridge/training/utils/train_utils.py training_log,
// NVIDIA-NeMo/Megatron-Bridge@067f987): Megatron-LM's iteration line on the last rank, and on rank
// 0 `Step Time : 5.41s GPU utilization: 412.3MODEL_TFLOP/s/GPU` (no iteration number). NeMo 2 /
// NeMo 1 (Lightning progress bar and its logger): `Training epoch 0, iteration 9/99 | ... |
// global_step: 9 | ... | train_step_timing in s: 5.41 | TFLOPS_per_GPU: 412.3` or the tqdm postfix
// `... global_step=99.00, consumed_samples=25600.0, train_step_timing in s=3.130]`; with
// log_tokens_per_sec also `tokens_per_sec_per_gpu: ...`.
void ParseBridgeLine(std::string_view line, int64_t rank, ParsedLog* out) {
  double v = 0;
  if (ParseAutomodelLine(line, rank, out)) return;
  if (NumberAfter(line, "Step Time :", &v) || NumberAfter(line, "Step Time:", &v)) {
    if (out->pending) Push(out->pending_sample, -1, out);  // no iteration line followed
    StepSample s;
    s.step_time_seconds = v;
    s.numbered = false;
    if (NumberAfter(line, "GPU utilization", &v)) s.tflops_per_device = v;
    out->pending = true;
    out->pending_sample = s;
    return;
  }
  if (NumberAfter(line, "train_step_timing in s", &v)) {
    out->nemo_steps = true;
    StepSample s;
    s.step_time_seconds = v;
    double step = 0;
    if (NumberAfter(line, "global_step", &step) || NumberAfter(line, "iteration", &step)) {
      s.step = ToCount(step);
    } else {
      s.numbered = false;
    }
    if (NumberAfter(line, "TFLOPS_per_GPU", &v)) s.tflops_per_device = v;
    // StepTimingCallback (nemo/utils/exp_manager.py, NVIDIA/NeMo@8cfedd7) with
    // log_tokens_per_sec: `tokens_per_sec_per_gpu: 6.859e+03` (tokens of one GPU / step time).
    if (NumberAfter(line, "tokens_per_sec_per_gpu", &v)) s.tokens_per_second_per_device = v;
    // NeMo 2's Hugging Face AutoModel
    // (nemo/collections/llm/gpt/model/hf_auto_model_for_causal_lm.py, NVIDIA/NeMo@8cfedd7) adds
    // `tps=` to the bar: tokens/s summed over the data-parallel ranks (all_reduce SUM), the whole
    // job's.
    if (NumberAfter(line, ", tps=", &v)) s.tokens_per_second_all_devices = v;
    if (NumberAfter(line, "global_batch_size", &v)) s.global_batch_size = ToCount(v);
    Push(s, rank, out);
    return;
  }
  if (Has(line, "val_loss") && !Has(line, "train_step_timing")) ++out->other_lines;
  ParseMegatronLine(line, rank, out);
}

// MaxText (src/maxtext/common/metric_logger.py _log_training_metrics,
// AI-Hypercomputer/maxtext@e591f30): `completed step: 5, seconds: 2.517, TFLOP/s/device: 120.634,
// Tokens/s/device: 3255.461, total_weights: ..., loss: ...`; 2023 releases printed `TFLOP/s:`
// (per device, without the suffix) and no tokens. Batch ramp-up steps are marked `[Rampup Batch
// Size Phase]` and profiler boundary steps `completed profiler activation/deactivation step`:
// neither is a steady step. Memory: `Total memory size: 15.8 GB` (older) and `Total estimated
// memory size: 15.8 GB` (src/maxtext/utils/max_utils.py print_compiled_memory_stats), bytes /
// 1024**3, so GiB as printed.
void ParseMaxTextLine(std::string_view line, int64_t rank, ParsedLog* out) {
  double v = 0;
  if (NumberAfter(line, "Total memory size", &v) ||
      NumberAfter(line, "Total estimated memory size", &v)) {
    AddMemory(v, v, &out->memory);
    return;
  }
  // print_mem_stats: `Using (GB) 12.3 / 95.74 (12.85%) on TPU_0(...)`, one per local device,
  // bytes / 2**30 (print_cpu_ram_stats' host line ends `-->  Available:` instead).
  if (Has(line, " on ") && !Has(line, "Available") && NumberAfter(line, "Using (GB)", &v)) {
    AddMemory(0, v, &out->memory);
    return;
  }
  // load_state_if_possible's `restoring from this run's directory step S` (`... latest step S`
  // before 2024; src/maxtext/common/checkpointing.py, AI-Hypercomputer/maxtext@e591f30): the
  // checkpoint of step S holds the state after that step (maybe_save_checkpoint saves
  // state.step - 1), so training resumes at S + 1 (train.py get_first_step).
  if (Has(line, "restoring from this run's directory") && NumberAfter(line, "step", &v)) {
    out->first_trained_step = ToCount(v) + 1;
    return;
  }
  if (Has(line, "Profiler session started") || Has(line, "Profiler session tear down")) {
    out->profiler_session = true;
    ++out->other_lines;
    return;
  }
  if (Has(line, "[Rampup Batch Size Phase]") || Has(line, "completed profiler")) {
    ++out->other_lines;
    return;
  }
  bool step_line = NumberAfter(line, "completed step", &v);
  // The same line quoted without its first word (tpu-recipes' GPT3-175B fp8 README, 48e590c6:
  // `step: 100, seconds: 14.245, TFLOP/s/device: ...`): the fields after it are MaxText's own.
  const size_t start = line.find_first_not_of(' ');
  if (!step_line && start != std::string_view::npos && line.substr(start).rfind("step:", 0) == 0 &&
      Has(line, ", seconds:") && Has(line, "TFLOP/s")) {
    step_line = NumberAfter(line, "step", &v);
  }
  if (!step_line) {
    if (Has(line, "eval metrics after step")) ++out->other_lines;
    return;
  }
  StepSample s;
  s.step = ToCount(v);
  if (NumberAfter(line, "seconds", &v)) s.step_time_seconds = v;
  if (NumberAfter(line, "TFLOP/s/device", &v) || NumberAfter(line, "TFLOP/s", &v)) {
    s.tflops_per_device = v;
  }
  if (NumberAfter(line, "Tokens/s/device", &v)) s.tokens_per_second_per_device = v;
  Push(s, rank, out);
}

// The time torchtitan's logger prints in front of every line: `[titan] 2026-05-20 03:18:47,745 - `
// (torchtitan/tools/logging.py, "[titan] %(asctime)s - %(name)s - ...", since 2024-04 c22d1a8d;
// asctime is Python logging's `%Y-%m-%d %H:%M:%S,mmm`), in seconds from 1970-01-01 of that
// clock; 0 when the line has none.
double TitanTimestamp(std::string_view line) {
  size_t at = line.find("[titan] ");
  if (at == std::string_view::npos) return 0;
  std::string_view t = line.substr(at + 8);
  // YYYY-MM-DD HH:MM:SS,mmm: 23 characters, digits where digits belong.
  static constexpr std::string_view kShape = "dddd-dd-dd dd:dd:dd,ddd";
  if (t.size() < kShape.size()) return 0;
  for (size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = t[i] >= '0' && t[i] <= '9';
    if (kShape[i] == 'd' ? !digit : t[i] != kShape[i]) return 0;
  }
  auto num = [&t](size_t pos, size_t len) {
    int64_t v = 0;
    for (size_t i = pos; i < pos + len; ++i) v = v * 10 + (t[i] - '0');
    return v;
  };
  int64_t y = num(0, 4), m = num(5, 2), d = num(8, 2);
  if (m < 1 || m > 12 || d < 1 || d > 31) return 0;
  // Days from 1970-01-01 of the proleptic Gregorian date (H. Hinnant's days_from_civil).
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  return static_cast<double>(days * 86400 + num(11, 2) * 3600 + num(14, 2) * 60 + num(17, 2)) +
         static_cast<double>(num(20, 3)) / 1000.0;
}

// torchtitan's mesh line of 2024-04 to 2025-12 (parallel_dims.py ParallelDims.build_mesh,
// `logger.info(f"Building {len(dims)}-D device mesh with {names}, {dims}")`): a Python list of
// the names of the dimensions above 1 and a list of their sizes, e.g. `Building 2-D device mesh
// with ['dp_shard', 'tp'], [4, 2]`. `non_data_parallel` gets pp x cp x tp (1 when none is
// listed); false when the line is not that line or its lists do not pair up.
bool OldTorchtitanMesh(std::string_view line, double* non_data_parallel) {
  size_t at = line.find("-D device mesh with [");
  if (at == std::string_view::npos) return false;
  std::string_view rest = line.substr(at + 20);
  size_t names_end = rest.find(']');
  if (names_end == std::string_view::npos) return false;
  std::vector<std::string_view> names;
  std::string_view list = rest.substr(1, names_end - 1);
  for (size_t q = list.find('\''); q != std::string_view::npos; q = list.find('\'', q)) {
    size_t e = list.find('\'', q + 1);
    if (e == std::string_view::npos) return false;
    names.push_back(list.substr(q + 1, e - q - 1));
    q = e + 1;
  }
  std::string_view dims = rest.substr(names_end + 1);
  size_t open = dims.find('[');
  size_t close = dims.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return false;
  }
  dims = dims.substr(open + 1, close - open - 1);
  std::vector<double> sizes;
  while (!dims.empty()) {
    size_t comma = dims.find(',');
    std::string item(dims.substr(0, comma));
    char* end = nullptr;
    const double d = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || !(d >= 1) || d > 1e6) return false;
    sizes.push_back(d);
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  if (sizes.size() != names.size()) return false;
  double product = 1;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "pp" || names[i] == "cp" || names[i] == "tp") product *= sizes[i];
  }
  *non_data_parallel = product;
  return true;
}

// torchtitan (torchtitan/components/metrics.py MetricsProcessor.log, pytorch/torchtitan@b5bcd76):
// `step: 10  loss:  7.1234  grad_norm: 1.2  memory: 61.23GiB(77.51%)  tps: 3,255  tflops: 412.30
// mfu: 41.69%` (mfu `N/A` under quantisation), coloured; `validate step: 10 ...` for validation.
// Before 2024-11 (4d182a13e) the tokens field was `wps:` and there was no tflops field. tps is per
// device: tokens of this rank / time / non-data-parallel size (metrics.py MetricsProcessor.log;
// ParallelDims.non_data_parallel_size = cp x tp x pp in torchtitan/distributed/parallel_dims.py,
// which prints the mesh as `Building device mesh with parallelism: pp=1, dp_replicate=1,
// dp_shard=4, cp=1, tp=2, ep=1` since 2025-12 (183a0d2e7); from 2024-04 (c22d1a8d) until then
// as `Building 3-D device mesh with ['dp_shard', 'cp', 'tp'], [2, 2, 2]`, the dimensions above 1
// only: OldTorchtitanMesh). Before 2024-10 (b19456a98, context parallelism) the divisor was
// tp x pp (model_parallel_size), the same product.
void ParseTorchtitanLine(std::string_view line, int64_t rank, ParsedLog* out) {
  double v = 0;
  if (OldTorchtitanMesh(line, &v)) {
    out->logged_non_data_parallel = v;
    return;
  }
  if (Has(line, "Building device mesh with parallelism")) {
    double pp = 1, cp = 1, tp = 1;
    NumberAfter(line, "pp=", &pp);
    NumberAfter(line, " cp=", &cp);
    NumberAfter(line, " tp=", &tp);
    out->logged_non_data_parallel = std::max(1.0, pp) * std::max(1.0, cp) * std::max(1.0, tp);
    return;
  }
  // `Training starts at step N` (torchtitan/train.py, after the checkpoint load: self.step + 1):
  // N > 1 is a resumed run, whose step N compiles and warms up as step 1 does.
  if (NumberAfter(line, "Training starts at step", &v)) {
    out->first_trained_step = ToCount(v);
    return;
  }
  // Since 2026-08 (73aed7f6c, "fold batch dim") torchtitan budgets tokens, not sequences:
  // `Trainer is initialized with 8192 tokens per DP rank, 65536 tokens per train step, gradient
  // accumulation steps 2, maximum context length 8192, ...` (torchtitan/trainer.py): a rank's
  // tokens of one accumulation step, times the steps.
  if (Has(line, "tokens per DP rank")) {
    double per_rank = 0, accum = 1;
    NumberAfter(line, "gradient accumulation steps", &accum);
    if (NumberAfter(line, "initialized with", &per_rank) && per_rank > 0) {
      out->logged_tokens_per_device_step = per_rank * std::max(1.0, accum);
    }
    return;
  }
  if (Has(line, "local batch size") && Has(line, "sequence length")) {
    double local = 0, seq = 0, accum = 1;
    NumberAfter(line, "gradient accumulation steps", &accum);
    if (NumberAfter(line, "local batch size", &local) &&
        NumberAfter(line, "sequence length", &seq)) {
      out->logged_tokens_per_device_step = local * std::max(1.0, accum) * seq;
    }
    return;
  }
  if (Has(line, "validate step:") || Has(line, "validation step:")) {
    ++out->other_lines;
    return;
  }
  if (!NumberAfter(line, "step:", &v)) return;
  StepSample s;
  s.step = ToCount(v);
  if (!NumberAfter(line, "tps:", &v) && !NumberAfter(line, "wps:", &v)) return;
  s.tokens_per_second_per_device = v;
  if (NumberAfter(line, "tflops:", &v)) s.tflops_per_device = v;
  if (NumberAfter(line, "mfu:", &v)) s.mfu = v / 100.0;
  if (NumberAfter(line, "memory:", &v)) s.memory_gib = v;
  s.logged_at_seconds = TitanTimestamp(line);
  Push(s, rank, out);
}

// One JSON object per line with TrialMetrics keys and optionally "step" (contract section 4).
bool ParseJsonLine(std::string_view line, int64_t rank, ParsedLog* out) {
  size_t brace = line.find('{');
  if (brace == std::string_view::npos) return false;
  nlohmann::json j = nlohmann::json::parse(line.substr(brace), nullptr, false);
  if (!j.is_object()) return false;
  auto num = [&j](const char* k) {
    return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0;
  };
  StepSample s;
  s.step = ToCount(num("step"));
  s.numbered = j.contains("step");
  s.mfu = num("mfu");
  s.tflops_per_device = num("tflopsPerDevice");
  s.tokens_per_second_per_device = num("tokensPerSecondPerDevice");
  s.step_time_seconds = num("stepTimeSeconds");
  AddMemory(num("avgMemoryGiB"), num("peakMemoryGiB"), &out->memory);
  if (s.mfu > 0 || s.tflops_per_device > 0 || s.tokens_per_second_per_device > 0 ||
      s.step_time_seconds > 0) {
    Push(s, rank, out);
  }
  return true;
}

// `0:02:03.45` (Trainer.log_metrics prints train_runtime as h:mm:ss.ss) or plain seconds.
bool RuntimeAfter(std::string_view line, std::string_view label, double* out) {
  size_t pos = line.find(label);
  if (pos == std::string_view::npos) return false;
  std::string_view rest = line.substr(pos + label.size());
  size_t start = rest.find_first_of("0123456789");
  if (start == std::string_view::npos) return false;
  double total = 0, part = 0;
  size_t p = start;
  while (p < rest.size()) {
    char* end = nullptr;
    std::string token(rest.substr(p, 32));
    part = std::strtod(token.c_str(), &end);
    if (end == token.c_str()) break;
    total = total * 60 + part;
    p += static_cast<size_t>(end - token.c_str());
    if (p < rest.size() && rest[p] == ':') {
      ++p;
      continue;
    }
    break;
  }
  *out = total;
  return total > 0;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The last tqdm update in `line`: `N/M [elapsed<left, RATE]` (the bar may share its line with
// other output: tqdm redraws with '\r' and no newline, so the next record follows it). RATE is
// the text after the last comma inside the brackets.
bool FindTqdm(std::string_view line, double* n, double* total, std::string_view* rate) {
  bool found = false;
  for (size_t slash = line.find('/'); slash != std::string_view::npos;
       slash = line.find('/', slash + 1)) {
    size_t a = slash;
    while (a > 0 && IsDigit(line[a - 1])) --a;
    size_t b = slash + 1;
    while (b < line.size() && IsDigit(line[b])) ++b;
    if (a == slash || b == slash + 1 || line.substr(b, 2) != " [") continue;
    const size_t close = line.find(']', b + 2);
    if (close == std::string_view::npos) continue;
    const std::string_view inside = line.substr(b + 2, close - b - 2);
    const size_t comma = inside.rfind(',');
    if (comma == std::string_view::npos || inside.find('<') == std::string_view::npos) continue;
    *n = std::atof(std::string(line.substr(a, slash - a)).c_str());
    *total = std::atof(std::string(line.substr(slash + 1, b - slash - 1)).c_str());
    *rate = inside.substr(comma + 1);
    found = true;
    slash = close;
  }
  return found;
}

// One end-of-run summary line into the run's summary. ProgressCallback.on_log prints on every
// local main process (`state.is_local_process_zero`), so a multi-node run prints the final dict
// once per node, each with its own train_runtime and rates for the same run: dicts that share
// their `train_loss` (the same run's end) are one sample, the mean of their printers' (rates and
// step times). A dict of another run replaces the summary. `Trainer.log_metrics`'s `***** train
// metrics *****` block (one `key = value` per line) repeats the last dict: it only fills what no
// dict printed.
void MergeSummary(std::string_view line, const RunSummary& d, RunSummary* sum) {
  const bool dict = line.find('{') != std::string_view::npos;
  if (!dict) {
    if (sum->runtime_seconds <= 0) sum->runtime_seconds = d.runtime_seconds;
    if (sum->samples_per_second <= 0) sum->samples_per_second = d.samples_per_second;
    if (sum->steps_per_second <= 0) sum->steps_per_second = d.steps_per_second;
    if (sum->tokens_per_second_per_device <= 0) {
      sum->tokens_per_second_per_device = d.tokens_per_second_per_device;
    }
    return;
  }
  double loss = 0;
  const bool has_loss = NumberAfter(line, "'train_loss'", &loss);
  if (sum->printers == 0 || !has_loss || sum->train_loss != loss) {
    *sum = d;
    sum->printers = 1;
    sum->train_loss = has_loss ? std::optional<double>(loss) : std::nullopt;
    return;
  }
  const double n = sum->printers;
  auto mean = [n](double a, double b) { return (a * n + b) / (n + 1); };
  sum->runtime_seconds = mean(sum->runtime_seconds, d.runtime_seconds);
  sum->samples_per_second = mean(sum->samples_per_second, d.samples_per_second);
  // The step time is the mean of the printers' step times (1 / train_steps_per_second).
  if (sum->steps_per_second > 0 && d.steps_per_second > 0) {
    sum->steps_per_second = 1.0 / mean(1.0 / sum->steps_per_second, 1.0 / d.steps_per_second);
  }
  sum->tokens_per_second_per_device =
      mean(sum->tokens_per_second_per_device, d.tokens_per_second_per_device);
  ++sum->printers;
}

// The value of the Hugging Face Trainer metric `key` in bytes: the end-of-run dict's `'key': 1234`
// (bytes, an int) or log_metrics's `  key = 117MB` (metrics_format in trainer_pt_utils.py prints
// every `_mem_` metric as `v >> 20` followed by `MB`). The key must stand whole (not the tail of
// a longer name).
bool TrainerMemoryBytes(std::string_view line, std::string_view key, double* bytes) {
  for (size_t at = line.find(key); at != std::string_view::npos; at = line.find(key, at + 1)) {
    const char before = at == 0 ? ' ' : line[at - 1];
    if ((before >= 'a' && before <= 'z') || before == '_') continue;
    std::string_view rest = line.substr(at + key.size());
    constexpr std::string_view kBetween = "'\" :=\t";  // between a key and its value
    if (rest.empty() || kBetween.find(rest.front()) == std::string_view::npos) continue;
    const size_t p = rest.find_first_not_of(kBetween);
    if (p == std::string_view::npos) continue;
    rest.remove_prefix(p);
    size_t end = 0;
    while (end < rest.size() && (IsDigit(rest[end]) || rest[end] == '-' || rest[end] == '.')) {
      ++end;
    }
    if (end == 0) continue;
    const double v = std::atof(std::string(rest.substr(0, end)).c_str());
    *bytes = rest.substr(end, 2) == "MB" ? v * 1024.0 * 1024.0 : v;
    return true;
  }
  return false;
}

// The Hugging Face Trainer's memory metrics (skip_memory_metrics=False, off by default;
// TrainerMemoryTracker in src/transformers/trainer_utils.py, huggingface/transformers@007360d):
// the end-of-run dict, and log_metrics's block after it, carry `before_init_mem_gpu` (allocated
// when the Trainer was built), `init_mem_gpu_alloc_delta` (what building it allocated: the model
// moved to the device), `train_mem_gpu_alloc_delta` (allocated at train()'s end over its start)
// and `train_mem_gpu_peaked_delta` (the peak over the end; the tracker resets the peak when
// train() starts). Their sum is the peak allocated while training (torch.cuda.max_memory_allocated
// of the printing rank), short of whatever the script itself allocated between building the
// Trainer and calling train(). Each complete printing is one reading (each node's local rank 0
// prints the dict: the largest is the peak).
void ParseTrainerMemory(std::string_view line, ParsedLog* out) {
  TrainerMemoryMetrics& t = out->trainer_memory;
  double v = 0;
  if (TrainerMemoryBytes(line, "before_init_mem_gpu", &v)) t.before_init = v;
  if (TrainerMemoryBytes(line, "init_mem_gpu_alloc_delta", &v)) t.init_alloc = v;
  if (TrainerMemoryBytes(line, "train_mem_gpu_alloc_delta", &v)) t.train_alloc = v;
  if (TrainerMemoryBytes(line, "train_mem_gpu_peaked_delta", &v)) t.train_peaked = v;
  if (!t.before_init || !t.init_alloc || !t.train_alloc || !t.train_peaked) return;
  const double peak = *t.before_init + *t.init_alloc + *t.train_alloc + *t.train_peaked;
  if (peak > 0) {
    out->memory.library_peak_gib =
        std::max(out->memory.library_peak_gib, peak / (1024.0 * 1024.0 * 1024.0));
  }
  t = TrainerMemoryMetrics{};
}

// The Hugging Face Trainer (src/transformers/trainer.py, trainer_callback.py ProgressCallback,
// trainer_utils.py speed_metrics; huggingface/transformers@c599e98): every `logging_steps` a
// Python dict `{'loss': 2.1, 'grad_norm': ..., 'learning_rate': ..., 'epoch': 0.1}` (no time), the
// tqdm bar ` 45%|####5     | 45/100 [01:23<01:42,  1.86s/it]` (or `2.31it/s`; one bar update per
// optimizer step, redrawn with '\r'), evaluation dicts `{'eval_loss': ...}` with their own bar,
// and at the end `{'train_runtime': 123.4, 'train_samples_per_second': 10.2,
// 'train_steps_per_second': 1.3, ...}` (samples over the whole run; `train_tokens_per_second`,
// per device, with include_tokens_per_second=True). Example scripts repeat the summary as
// `  train_runtime = 0:02:03.45` lines (Trainer.log_metrics). JSON lines are read too.
void ParseHfLine(std::string_view line, int64_t rank, ParsedLog* out) {
  double v = 0;
  RunSummary& sum = out->summary;
  if (Has(line, "_mem_gpu")) ParseTrainerMemory(line, out);
  // Newer Trainers add `train_runtime` and `train_tokens_per_second` to every logging_steps dict
  // too (the tokens seen by all ranks since the start over the runtime so far, with
  // include_num_input_tokens_seen): not the end-of-run figures, which carry no 'loss'.
  const bool per_log_dict = Has(line, "'loss'") || Has(line, "\"loss\"") ||
                            Has(line, "'learning_rate'") || Has(line, "\"learning_rate\"");
  if (!per_log_dict &&
      (Has(line, "train_runtime") || Has(line, "train_samples_per_second") ||
       Has(line, "train_steps_per_second") || Has(line, "train_tokens_per_second"))) {
    RunSummary d;
    if (RuntimeAfter(line, "train_runtime", &v)) d.runtime_seconds = v;
    if (NumberAfter(line, "train_samples_per_second'", &v) ||
        NumberAfter(line, "train_samples_per_second", &v)) {
      d.samples_per_second = v;
    }
    if (NumberAfter(line, "train_steps_per_second'", &v) ||
        NumberAfter(line, "train_steps_per_second", &v)) {
      d.steps_per_second = v;
    }
    if (NumberAfter(line, "train_tokens_per_second'", &v) ||
        NumberAfter(line, "train_tokens_per_second", &v)) {
      d.tokens_per_second_per_device = v;
    }
    MergeSummary(line, d, &sum);
    return;
  }
  if (Has(line, "'eval_") || Has(line, "\"eval_")) {
    ++out->other_lines;
    return;
  }
  if (line.find("{\"") != std::string_view::npos && ParseJsonLine(line, rank, out)) return;
  double n = 0, total = 0;
  std::string_view rate;
  if (!FindTqdm(line, &n, &total, &rate) || !NumberAfter(rate, "", &v) || v <= 0) return;
  StepSample s;
  s.step = ToCount(n);
  s.series = ToCount(total);
  if (Has(rate, "s/it")) {
    s.step_time_seconds = v;
  } else if (Has(rate, "it/s")) {
    s.step_time_seconds = 1.0 / v;
  } else {
    return;
  }
  Push(s, rank, out);
}

bool IsPause(std::string_view line) {
  // Lines that start a pause (not those reporting its end: "Successfully saved checkpoint").
  for (std::string_view w :
       {"alidation", "validate step", "[val] ", "eval", "aving checkpoint", "aving the checkpoint",
        "Checkpoint Save", "Scheduled async checkpoint", "Saving model",
        // Megatron-LM's timers after a save (megatron/training/training.py
        // save_checkpoint_and_time: `save-checkpoint ...: (min, max)`); on a rank that prints
        // the iteration lines but not rank 0's `saving checkpoint`, the only sign of the save.
        "save-checkpoint"}) {
    if (Has(line, w)) return true;
  }
  return false;
}

bool ParseFrameworkLine(const std::string& collector, std::string_view line, int64_t rank,
                        ParsedLog* out) {
  if (collector == "megatron-lm") {
    ParseMegatronLine(line, rank, out);
  } else if (collector == "megatron-bridge") {
    ParseBridgeLine(line, rank, out);
  } else if (collector == "maxtext") {
    ParseMaxTextLine(line, rank, out);
  } else if (collector == "torchtitan") {
    ParseTorchtitanLine(line, rank, out);
  } else if (collector == "hf-trainer") {
    ParseHfLine(line, rank, out);
  } else if (collector == "json") {
    ParseJsonLine(line, rank, out);
  } else {
    return false;
  }
  return true;
}

// NeMo's asynchronous checkpoint save (nemo/utils/callbacks/dist_ckpt_io.py,
// NVIDIA/NeMo@00b7275): `Scheduled async checkpoint save for PATH` when its writer processes
// start, and its finalize function's `Successfully saved checkpoint from iteration N to PATH`
// (or Megatron-Bridge's `Async checkpoint save for step N ... finalized successfully`) once
// AsyncFinalizerCallback, which polls it after every training batch, finds it done. The steps in
// between run beside the writers, however many there are.
void TrackAsyncSave(std::string_view line, ParsedLog* out) {
  if (Has(line, "Scheduled async checkpoint save")) {
    if (!out->async_save_pending) {
      out->async_save_steps.emplace_back(std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min());
    }
    out->async_save_pending = true;
  } else if (Has(line, "Successfully saved checkpoint") || Has(line, "finalized successfully")) {
    out->async_save_pending = false;
  }
}

// DeepSpeed's throughput timer, beneath Megatron-DeepSpeed and the Hugging Face Trainer with
// DeepSpeed (ThroughputTimer.stop in deepspeed/utils/timer.py, deepspeedai/DeepSpeed@edaa722):
// every steps_per_print optimizer steps (10 by default until 2024-10, f74ea69ab; unset, so off,
// since), on rank 0, `epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=58.7,
// CurrSamplesPerSec=61.4, MemAllocated=6.01GB, MaxMemAllocated=19.52GB` (`0/80,
// RunningAvgSamplesPerSec=...` before 2022-11), where GB is bytes / 1024**3:
// torch.cuda.max_memory_allocated() of rank 0.
void ParseDeepSpeedMemory(std::string_view line, ParsedLog* out) {
  double v = 0;
  if (Has(line, "RunningAvgSamplesPerSec") && NumberAfter(line, "MaxMemAllocated", &v) && v > 0) {
    out->memory.library_peak_gib = std::max(out->memory.library_peak_gib, v);
  }
}

bool ParseLine(const std::string& collector, std::string_view line, int64_t rank, ParsedLog* out) {
  const size_t before = out->samples.size();
  if (!ParseFrameworkLine(collector, line, rank, out)) return false;
  ParseDeepSpeedMemory(line, out);
  if (out->samples.size() == before && !line.empty() && IsPause(line)) {
    const int64_t last = out->samples.empty() ? -1 : out->samples.back().step;
    if (out->pauses.empty() || out->pauses.back() != last) out->pauses.push_back(last);
  }
  if (out->async_save_pending) {
    auto& [first, last] = out->async_save_steps.back();
    for (size_t i = before; i < out->samples.size(); ++i) {
      first = std::min(first, out->samples[i].step);
      last = std::max(last, out->samples[i].step);
    }
  }
  TrackAsyncSave(line, out);
  return true;
}

// ` [2025-10-02 22:52:07] iteration       10/      50 |`: Megatron's iteration record starts with
// `iteration`, after spaces and the optional bracketed time (not NeMo's `Training epoch 0,
// iteration 9/99 | ...` progress line, which ends without `|`).
bool StartsMegatronIteration(std::string_view text) {
  size_t p = text.find_first_not_of(' ');
  if (p != std::string_view::npos && text[p] == '[') {
    p = text.find(']', p);
    if (p != std::string_view::npos) p = text.find_first_not_of(' ', p + 1);
  }
  return p != std::string_view::npos && text.substr(p, 9) == "iteration";
}

// Whether `text` is a Megatron iteration or memory record that does not end as Megatron ends it.
bool IncompleteMegatronRecord(std::string_view text) {
  const bool iteration = StartsMegatronIteration(text) && Has(text, "|");
  const bool memory = Has(text, "memory (") && Has(text, "(after");
  if (!iteration && !memory) return false;
  std::string_view t = text.substr(0, text.find_last_not_of(' ') + 1);
  if (memory) return !Has(t, "max reserved") && !Has(t, "max-reserved");
  return t.back() != '|' ||  // not empty: an iteration record starts with `iteration`
         !(Has(t, "elapsed time per iteration") || Has(t, "elapsed_time_per_iteration"));
}

// A Megatron record has about thirty fields (under 1,000 characters): wrapped at 60 columns or
// more it spans at most 17 lines. The bound keeps a hostile log (every line as wide as the widest)
// from being joined into one record scanned again at every join.
constexpr int kMaxContinuationLines = 24;

// A Megatron record quoted from an issue or pull request is sometimes hard-wrapped at a fixed
// column, mid-word: `... | number of s` / `kipped iterations:   0 |`, `max alloca` / `ted: 12712.4`
// (NVIDIA-NeMo/Megatron-Bridge#841, wrapped at 86 columns, trailing spaces trimmed). Megatron
// prints each record on one line that ends with `|` (training_log appends ` |` after every field)
// or, for report_memory, with its `max reserved` field, so a record line that ends otherwise, as
// wide as the widest line of the log (less one for a trimmed space), is joined with the lines that
// follow while they stay that wide: a full-width line was cut mid-word (joined as is), a line one
// narrower lost a space at the cut (joined with one). A line that starts a record of its own
// (indented, or `[`) is never a continuation.
std::vector<CleanLine> JoinWrappedRecords(std::vector<CleanLine> lines) {
  size_t width = 0;
  for (const CleanLine& l : lines) width = std::max(width, l.text.size());
  if (width < 60) return lines;
  std::vector<CleanLine> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    CleanLine record = std::move(lines[i]);
    size_t last_width = record.text.size();
    for (int joined = 0; joined < kMaxContinuationLines && i + 1 < lines.size() &&
                         last_width + 1 >= width && IncompleteMegatronRecord(record.text);
         ++joined) {
      const std::string& next = lines[i + 1].text;
      if (next.empty() || next[0] == ' ' || next[0] == '[' || lines[i + 1].rank >= 0) break;
      if (last_width < width) record.text += ' ';
      record.text += next;
      last_width = next.size();
      ++i;
    }
    out.push_back(std::move(record));
  }
  return out;
}

// The framework's own memory lines first; a library's (DeepSpeed's, the Trainer's tracker) only
// when the framework printed none.
void FinishLog(ParsedLog* out) {
  if (out->pending) out->samples.push_back(out->pending_sample);
  out->pending = false;
  const bool framework_memory =
      out->memory.peak_gib > 0 || std::any_of(out->samples.begin(), out->samples.end(),
                                              [](const StepSample& s) { return s.memory_gib > 0; });
  if (!framework_memory) out->memory.peak_gib = out->memory.library_peak_gib;
}

}  // namespace

Result<ParsedLog> ParseLog(const std::string& collector, std::string_view log) {
  ParsedLog parsed;
  if (!ParseLine(collector, "", -1, &parsed)) {
    std::string known;
    for (const auto& n : CollectorNames()) known += (known.empty() ? "" : ", ") + n;
    return Status::Invalid("spec.metrics.collector: unknown collector \"" + collector +
                           "\" (known: " + known + ")");
  }
  std::vector<CleanLine> lines = CleanLines(log);
  if (collector == "megatron-lm" || collector == "megatron-bridge") {
    lines = JoinWrappedRecords(std::move(lines));
  }
  for (const CleanLine& line : lines) ParseLine(collector, line.text, line.rank, &parsed);
  FinishLog(&parsed);
  return parsed;
}

}  // namespace paratune::collectors::internal
