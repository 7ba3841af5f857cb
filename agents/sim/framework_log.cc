#include "agents/sim/framework_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "base/strings.h"

namespace paratune::sim {

namespace {

bool IsMegatron(const Workload& w) { return w.training.framework != "torchtitan" && !w.IsTpu(); }

// Python traceback lines with torchrun's "[rank0]: " prefix (PyTorch >= 2.2).
std::string Ranked(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += "[rank0]: " + line + "\n";
  return out;
}

std::string ThousandsSep(double v) {
  std::string digits = std::to_string(static_cast<int64_t>(v + 0.5));
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it, ++n) {
    if (n > 0 && n % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
  }
  return out;
}

const char* kMegatronTop =
    "Traceback (most recent call last):\n"
    "  File \"/workspace/Megatron-LM/pretrain_gpt.py\", line 284, in <module>\n"
    "    pretrain(\n";
const char* kTitanTop =
    "Traceback (most recent call last):\n"
    "  File \"/workspace/torchtitan/torchtitan/train.py\", line 510, in <module>\n"
    "    trainer.train()\n";
const char* kMaxTextTop =
    "Traceback (most recent call last):\n"
    "  File \"/deps/MaxText/train.py\", line 1046, in <module>\n"
    "    app.run(main)\n"
    "  File \"/usr/local/lib/python3.10/site-packages/absl/app.py\", line 308, in run\n"
    "    _run_main(main, args)\n"
    "  File \"/usr/local/lib/python3.10/site-packages/absl/app.py\", line 254, in _run_main\n"
    "    sys.exit(main(argv))\n"
    "  File \"/deps/MaxText/train.py\", line 1042, in main\n"
    "    train_loop(config)\n";

}  // namespace

std::string FormatUtc(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string FormatAsctime(double unix_seconds) {
  const double whole = std::floor(unix_seconds);
  char ms[16];
  std::snprintf(ms, sizeof(ms), ",%03d",
                std::clamp(static_cast<int>((unix_seconds - whole) * 1000.0), 0, 999));
  return FormatUtc(whole) + ms;
}

std::string StartupLog(const Workload& w, const ParallelPlan& p, double unix_seconds,
                       int64_t total_steps) {
  std::ostringstream o;
  const ModelShape& m = w.model;
  if (w.IsTpu()) {
    o << "Config param per_device_batch_size: " << p.per_device_batch_size << "\n"
      << "Config param remat_policy: "
      << FindParameter("remat")->enum_values[static_cast<int>(p.remat)] << "\n"
      << "Config param ici_data_parallelism: " << p.ici_data << "\n"
      << "Config param ici_fsdp_parallelism: " << p.ici_fsdp << "\n"
      << "Config param ici_sequence_parallelism: " << p.ici_sequence << "\n"
      << "Config param ici_tensor_parallelism: " << p.ici_tensor << "\n"
      << "Config param ici_expert_parallelism: " << p.ici_expert << "\n"
      << "Config param dcn_data_parallelism: " << p.dcn_data << "\n"
      << "Config param max_target_length: " << w.training.seq_length << "\n"
      << "System Information: Jax Version: 0.4.35\n"
      << "System Information: Jaxlib Version: 0.4.35\n"
      << "System Information: Jax Backend: PJRT C API\n"
      << "Num_devices: " << w.devices << ", shape (" << p.dcn_data << ", " << p.ici_data << ", "
      << p.ici_fsdp << ", " << p.ici_sequence << ", " << p.ici_tensor << ", " << p.ici_expert
      << ")\n"
      << "number parameters: " << Fixed(m.TotalParams() / 1e9, 3) << " billion\n";
    return o.str();
  }
  if (!IsMegatron(w)) {
    // torchtitan v0.2.2 (the GPU sample's): torchtitan/train.py and
    // distributed/parallel_dims.py at that tag.
    const std::string at = "[titan] " + FormatAsctime(unix_seconds) + " - root - INFO - ";
    const int64_t replicate = std::max<int64_t>(1, p.dp_replicate);
    const int64_t shard = p.dp_shard > 0 ? p.dp_shard : std::max<int64_t>(1, p.dp / replicate);
    const int64_t gbs = w.training.global_batch_size;
    const int64_t per_step = std::max<int64_t>(1, p.mbs * p.dp);
    o << at << "Starting job: " << m.name << " training\n"
      << at << "Building device mesh with parallelism: pp=" << p.pp
      << ", dp_replicate=" << replicate << ", dp_shard=" << shard << ", cp=" << p.cp
      << ", tp=" << p.tp << ", ep=" << p.ep << ", etp=1\n"
      << at << "Model " << m.name << " size: " << ThousandsSep(m.TotalParams())
      << " total parameters\n"
      << at << "Trainer is initialized with local batch size " << p.mbs << ", global batch size "
      << gbs << ", gradient accumulation steps " << std::max<int64_t>(1, gbs / per_step)
      << ", sequence length " << w.training.seq_length << ", total steps " << total_steps
      << " (warmup " << std::min<int64_t>(total_steps, 200) << ")\n";
    return o.str();
  }
  o << "using world size: " << w.devices << ", data-parallel size: " << p.dp
    << ", context-parallel size: " << p.cp << ", tensor-model-parallel size: " << p.tp
    << ", pipeline-model-parallel size: " << p.pp << "\n"
    << "using torch." << (w.training.precision == "fp16" ? "float16" : "bfloat16")
    << " for parameters ...\n"
    << "------------------------ arguments ------------------------\n"
    << "  micro_batch_size ................................ " << p.mbs << "\n"
    << "  global_batch_size ............................... " << w.training.global_batch_size
    << "\n"
    << "  seq_length ...................................... " << w.training.seq_length << "\n"
    << "  recompute_granularity ........................... "
    << (p.recompute == Recompute::kNone ? "None"
                                        : (p.recompute == Recompute::kFull ? "full" : "selective"))
    << "\n"
    << "  sequence_parallel ............................... "
    << (p.sequence_parallel ? "True" : "False") << "\n"
    << "  use_distributed_optimizer ....................... "
    << (p.distributed_optimizer ? "True" : "False") << "\n"
    << "-------------------- end of arguments ---------------------\n"
    << "> initializing torch distributed ...\n"
    << "> initialized tensor model parallel with size " << p.tp << "\n"
    << "> initialized pipeline model parallel with size " << p.pp << "\n"
    << "building GPT model ...\n"
    << " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): "
    << static_cast<int64_t>(m.TotalParams() / static_cast<double>(p.tp * p.pp)) << "\n"
    << "[after model, optimizer, and learning rate scheduler are built] datetime: "
    << FormatUtc(unix_seconds) << "\n"
    << "training ...\n"
    << "[before the start of training step] datetime: " << FormatUtc(unix_seconds) << "\n";
  return o.str();
}

std::string IterationLine(const Workload& w, const ParallelPlan& p, const IterationStats& s) {
  char buf[512];
  if (w.IsTpu()) {
    const double weights =
        static_cast<double>(p.per_device_batch_size * w.devices * w.training.seq_length);
    std::snprintf(buf, sizeof(buf),
                  "completed step: %lld, seconds: %.3f, TFLOP/s/device: %.3f, Tokens/s/device: "
                  "%.3f, total_weights: %lld, loss: %.3f\n",
                  static_cast<long long>(s.iteration), s.step_seconds, s.model_tflops,
                  s.tokens_per_second, static_cast<long long>(weights), s.loss);
    return buf;
  }
  if (!IsMegatron(w)) {
    std::snprintf(buf, sizeof(buf),
                  "[titan] %s - root - INFO - step: %lld  loss: %7.4f  memory: %5.2fGiB(%.2f%%)  "
                  "tps: %s  tflops: %.2f  mfu: %.2f%%\n",
                  FormatAsctime(s.unix_seconds).c_str(), static_cast<long long>(s.iteration),
                  s.loss, s.memory_gib, 100.0 * s.memory_gib / s.capacity_gib,
                  ThousandsSep(s.tokens_per_second).c_str(), s.model_tflops, 100.0 * s.mfu);
    return buf;
  }
  const int64_t gbs = w.training.global_batch_size;
  if (w.training.framework == "megatron-deepspeed") {
    // bigscience-workshop/Megatron-DeepSpeed megatron/training.py training_log (seconds, and its
    // own TFLOPs estimate, recomputation included; the model FLOPs stand in for it here).
    std::snprintf(buf, sizeof(buf),
                  " iteration %8lld/%8lld | consumed samples: %12lld | consumed tokens: %12lld | "
                  "elapsed time per iteration (s): %.2f | learning rate: %.3E | global batch size: "
                  "%5lld | lm loss: %.6E | grad norm: %.3f | number of skipped iterations:   0 | "
                  "number of nan iterations:   0 | samples per second: %.3f | TFLOPs: %.2f |\n",
                  static_cast<long long>(s.iteration), static_cast<long long>(s.total),
                  static_cast<long long>(s.iteration * gbs),
                  static_cast<long long>(s.iteration * gbs * w.training.seq_length), s.step_seconds,
                  3e-4 * std::min(1.0, static_cast<double>(s.iteration) / 20.0),
                  static_cast<long long>(gbs), s.loss, s.grad_norm,
                  static_cast<double>(gbs) / std::max(1e-9, s.step_seconds), s.model_tflops);
    return buf;
  }
  std::snprintf(buf, sizeof(buf),
                " [%s] iteration %8lld/%8lld | consumed samples: %12lld | elapsed time per "
                "iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: "
                "%.6E | global batch size: %5lld | lm loss: %.6E | loss scale: 1.0 | grad norm: "
                "%.3f | number of skipped iterations:   0 | number of nan iterations:   0 |\n",
                FormatUtc(s.unix_seconds).c_str(), static_cast<long long>(s.iteration),
                static_cast<long long>(s.total), static_cast<long long>(s.iteration * gbs),
                s.step_seconds * 1000.0, s.model_tflops,
                3e-4 * std::min(1.0, static_cast<double>(s.iteration) / 20.0),
                static_cast<long long>(gbs), s.loss, s.grad_norm);
  return buf;
}

std::string MemoryLine(const Workload& w, int64_t after_iterations, double allocated_gib,
                       double peak_gib, double reserved_gib, double argument_gib) {
  char buf[320];
  if (w.IsTpu()) {
    std::snprintf(buf, sizeof(buf),
                  "Total memory size: %.1f GB, Output size: %.1f GB, Temp size: %.1f GB, "
                  "Argument size: %.1f GB, Host temp size: 0.0 GB.\n",
                  peak_gib, argument_gib, peak_gib - argument_gib, argument_gib);
    return buf;
  }
  if (!IsMegatron(w)) return "";
  std::snprintf(buf, sizeof(buf),
                "[Rank 0] (after %lld iterations) memory (MB) | allocated: %.2f | max allocated: "
                "%.2f | reserved: %.2f | max reserved: %.2f\n",
                static_cast<long long>(after_iterations), allocated_gib * 1024, peak_gib * 1024,
                reserved_gib * 1024, reserved_gib * 1024);
  return buf;
}

namespace {

// The first global rank on pod `node` whose data-parallel rank is 0 (-1 when none), for
// Megatron-LM's default rank order: tp varies fastest, then cp, then dp, then pp.
int64_t FirstDataParallelZeroRank(const Workload& w, const ParallelPlan& p, int64_t node) {
  const int64_t per_node = std::max<int64_t>(1, std::min(w.DevicesPerNode(), w.devices));
  const int64_t inner = std::max<int64_t>(1, p.tp * p.cp);
  const int64_t dp = std::max<int64_t>(1, p.dp);
  for (int64_t r = node * per_node; r < (node + 1) * per_node && r < w.devices; ++r) {
    if ((r / inner) % dp == 0) return r;
  }
  return -1;
}

}  // namespace

std::optional<std::string> LineForRank(const Workload& w, const ParallelPlan& p, const RankView& v,
                                       const std::string& line) {
  if (v.nodes <= 1) return line;
  const bool first = v.node_rank == 0;
  const bool last = v.node_rank == v.nodes - 1;
  if (w.IsTpu()) {
    if (line.rfind("completed step:", 0) == 0) return first ? std::optional(line) : std::nullopt;
    return line;
  }
  if (!IsMegatron(w)) {
    if (line.find(" - step: ") != std::string::npos) {
      return first ? std::optional(line) : std::nullopt;
    }
    return line;
  }
  const bool hf = w.training.framework == "transformers";
  if (line.find("elapsed time per iteration (") != std::string::npos) {
    // The Hugging Face Trainer logs (and draws its progress bar) on process zero only.
    return (hf ? first : last) ? std::optional(line) : std::nullopt;
  }
  const std::string memory_prefix = "[Rank 0] (after ";
  if (hf && line.rfind(memory_prefix, 0) == 0) return std::nullopt;
  if (line.rfind(memory_prefix, 0) == 0) {
    const int64_t rank = FirstDataParallelZeroRank(w, p, v.node_rank);
    if (rank < 0) return std::nullopt;
    return "[Rank " + std::to_string(rank) + "]" + line.substr(std::string("[Rank 0]").size());
  }
  return line;
}

std::string LogForRank(const Workload& w, const ParallelPlan& p, const RankView& v,
                       const std::string& log) {
  std::istringstream in(log);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (auto kept = LineForRank(w, p, v, line)) out += *kept + "\n";
  }
  return out;
}

std::string ConfigErrorLog(const Workload& w, const std::string& framework_error) {
  if (w.IsTpu()) {
    std::string frames =
        "  File \"/deps/MaxText/train.py\", line 941, in train_loop\n"
        "    ) = setup_train_loop(config)\n"
        "  File \"/deps/MaxText/train.py\", line 880, in setup_train_loop\n"
        "    init_rng, writer, checkpoint_manager, mesh, model, learning_rate_schedule, tx = "
        "setup_mesh_and_model(config)\n";
    if (framework_error.rfind("AssertionError: Number of", 0) == 0) {
      frames +=
          "  File \"/deps/MaxText/train.py\", line 850, in setup_mesh_and_model\n"
          "    devices_array = max_utils.create_device_mesh(config)\n"
          "  File \"/deps/MaxText/max_utils.py\", line 540, in create_device_mesh\n"
          "    ici_parallelism = fill_unspecified_mesh_axes(ici_parallelism.copy(), "
          "num_devices_per_slice, \"ICI\")\n"
          "  File \"/deps/MaxText/max_utils.py\", line 488, in fill_unspecified_mesh_axes\n"
          "    assert np.prod(parallelism_vals) == target_product, (\n";
    }
    return std::string(kMaxTextTop) + frames + framework_error + "\n";
  }
  std::string frames =
      "  File \"/workspace/Megatron-LM/megatron/training/training.py\", line 277, in pretrain\n"
      "    initialize_megatron(\n"
      "  File \"/workspace/Megatron-LM/megatron/training/initialize.py\", line 70, in "
      "initialize_megatron\n"
      "    validate_args(args, args_defaults)\n"
      "  File \"/workspace/Megatron-LM/megatron/training/arguments.py\", line 239, in "
      "validate_args\n";
  if (framework_error.rfind("ValueError", 0) == 0) {
    frames =
        "  File \"/workspace/Megatron-LM/megatron/training/training.py\", line 300, in pretrain\n"
        "    model, optimizer, opt_param_scheduler = setup_model_and_optimizer(\n"
        "  File \"/workspace/Megatron-LM/pretrain_gpt.py\", line 92, in model_provider\n"
        "    config = core_transformer_config_from_args(args)\n"
        "  File \"<string>\", line 120, in __init__\n"
        "  File \"/workspace/Megatron-LM/megatron/core/transformer/transformer_config.py\", "
        "line 601, in __post_init__\n";
  } else if (framework_error.rfind("RuntimeError", 0) == 0) {
    frames +=
        "  File \"/workspace/Megatron-LM/megatron/core/parallel_state.py\", line 508, in "
        "initialize_model_parallel\n";
  }
  return Ranked(std::string(IsMegatron(w) ? kMegatronTop : kTitanTop) + frames + framework_error);
}

std::string CudaOomLog(const Workload& w, bool at_setup, double tried_gib, double capacity_gib,
                       double free_gib, double reserved_unallocated_gib) {
  std::string frames;
  if (at_setup) {
    frames =
        "  File \"/workspace/Megatron-LM/megatron/training/training.py\", line 300, in pretrain\n"
        "    model, optimizer, opt_param_scheduler = setup_model_and_optimizer(\n"
        "  File \"/workspace/Megatron-LM/megatron/core/distributed/distributed_data_parallel.py\", "
        "line 215, in __init__\n"
        "    self.buffers, self.bucket_groups = _allocate_buffers_for_parameters(\n"
        "  File \"/workspace/Megatron-LM/megatron/core/distributed/param_and_grad_buffer.py\", "
        "line 652, in __init__\n"
        "    self.grad_data = torch.zeros(\n";
  } else {
    frames =
        "  File \"/workspace/Megatron-LM/megatron/training/training.py\", line 386, in pretrain\n"
        "    iteration, num_floating_point_operations_so_far = train(\n"
        "  File \"/workspace/Megatron-LM/megatron/training/training.py\", line 1435, in train\n"
        "    train_step(forward_step_func,\n"
        "  File \"/workspace/Megatron-LM/megatron/training/training.py\", line 754, in train_step\n"
        "    losses_reduced = forward_backward_func(\n"
        "  File \"/workspace/Megatron-LM/megatron/core/pipeline_parallel/schedules.py\", line 472, "
        "in forward_backward_no_pipelining\n"
        "    backward_step(input_tensor, output_tensor, output_tensor_grad, model_type, config)\n"
        "  File \"/workspace/Megatron-LM/megatron/core/pipeline_parallel/schedules.py\", line 366, "
        "in backward_step\n"
        "    torch.autograd.backward(output_tensor[0], grad_tensors=output_tensor_grad[0])\n"
        "  File \"/usr/local/lib/python3.10/dist-packages/torch/autograd/__init__.py\", line 347, "
        "in backward\n"
        "    _engine_run_backward(\n";
  }
  const double in_use = capacity_gib - free_gib;
  const double allocated = in_use - reserved_unallocated_gib - 0.55;
  std::string error =
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " + Fixed(tried_gib, 2) +
      " GiB. GPU 0 has a total capacity of " + Fixed(capacity_gib, 2) + " GiB of which " +
      Fixed(free_gib, 2) + " GiB is free. Including non-PyTorch memory, this process has " +
      Fixed(in_use, 2) + " GiB memory in use. Of the allocated memory " + Fixed(allocated, 2) +
      " GiB is allocated by PyTorch, and " + Fixed(reserved_unallocated_gib, 2) +
      " GiB is reserved by PyTorch but unallocated. If reserved but unallocated "
      "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
      "True to avoid fragmentation.  See documentation for Memory Management  "
      "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
  return Ranked(std::string(IsMegatron(w) ? kMegatronTop : kTitanTop) + frames + error);
}

std::string XlaOomLog(double used_gib, double capacity_gib, double arguments_gib) {
  std::ostringstream o;
  o << kMaxTextTop << "  File \"/deps/MaxText/train.py\", line 960, in train_loop\n"
    << "    state, metrics = p_train_step(state, example_batch, nextrng)\n"
    << "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent "
       "error. Ran out of memory in memory space hbm. Used "
    << Fixed(used_gib, 1) << "G of " << Fixed(capacity_gib, 2) << "G hbm. Exceeded hbm capacity by "
    << Fixed(used_gib - capacity_gib, 1) << "G.\n\n"
    << "Total hbm usage >= " << Fixed(used_gib + 0.52, 1) << "G:\n"
    << "    reserved        530.00M \n"
    << "    program          " << Fixed(used_gib - arguments_gib, 1) << "G \n"
    << "    arguments         " << Fixed(arguments_gib, 1) << "G \n";
  return o.str();
}

namespace {

// An error line's glog prefix at `unix_seconds`: "E1121 05:31:10.512034" (`micros` the
// fraction).
std::string GlogErrorStamp(double unix_seconds, const char* micros) {
  const std::string when = FormatUtc(unix_seconds);
  return "E" + when.substr(5, 2) + when.substr(8, 2) + " " + when.substr(11) + "." + micros;
}

// The watchdog's lines for a collective `work` that timed out on `rank`.
std::string WatchdogLog(double unix_seconds, int64_t seq, int rank, const std::string& work) {
  std::ostringstream o;
  const std::string stamp = GlogErrorStamp(unix_seconds, "512034");
  o << "[rank" << rank << "]:[" << stamp << " 4127 ProcessGroupNCCL.cpp:616] [Rank " << rank
    << "] Watchdog caught collective operation timeout: " << work << "\n"
    << "[rank" << rank << "]:[" << stamp << " 4127 ProcessGroupNCCL.cpp:1785] [PG 0 (default_pg) "
    << "Rank " << rank
    << "] Exception (either an error or timeout) detected by watchdog at work: " << seq
    << ", last enqueued NCCL work: " << seq + 1 << ", last completed NCCL work: " << seq - 1
    << ".\n"
    << "terminate called after throwing an instance of 'c10::DistBackendError'\n"
    << "  what():  [PG 0 (default_pg) Rank " << rank
    << "] Process group watchdog thread terminated with exception: [Rank " << rank
    << "] Watchdog caught collective operation timeout: " << work << "\n";
  return o.str();
}

}  // namespace

std::string NcclTimeoutLog(const Workload& w, double unix_seconds, int64_t seq, int rank) {
  (void)w;
  return WatchdogLog(unix_seconds, seq, rank,
                     "WorkNCCL(SeqNum=" + std::to_string(seq) +
                         ", OpType=_REDUCE_SCATTER_BASE, NumelIn=268435456, NumelOut=33554432, "
                         "Timeout(ms)=600000) ran for 600081 milliseconds before timing out.");
}

std::string NcclAllreduceTimeoutLog(double unix_seconds, int64_t seq, int rank) {
  return WatchdogLog(unix_seconds, seq, rank,
                     "WorkNCCL(SeqNum=" + std::to_string(seq) +
                         ", OpType=ALLREDUCE, NumelIn=39321600, NumelOut=39321600, "
                         "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.");
}

std::string XidFallenOffBusLog(const Workload& w, int rank, int local_rank) {
  // PCI bus ids of the eight GPUs of a DGX/HGX H100 board.
  static const char* kBus[] = {"1b", "43", "52", "61", "9d", "c3", "d1", "df"};
  const std::string bus = kBus[((local_rank % 8) + 8) % 8];
  std::ostringstream o;
  o << "NVRM: Xid (PCI:0000:" << bus << ":00): 79, pid=4127, name=python, GPU has fallen off the "
    << "bus.\n"
    << "NVRM: GPU 0000:" << bus << ":00.0: GPU has fallen off the bus.\n";
  std::string error =
      "RuntimeError: CUDA error: unspecified launch failure\n"
      "CUDA kernel errors might be asynchronously reported at some other API call, so the "
      "stacktrace below might be incorrect.\n"
      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.";
  std::string tb = std::string(IsMegatron(w) ? kMegatronTop : kTitanTop) +
                   "  File \"/workspace/Megatron-LM/megatron/training/training.py\", line 1435, "
                   "in train\n"
                   "    train_step(forward_step_func,\n" +
                   error;
  std::istringstream in(tb);
  for (std::string line; std::getline(in, line);) {
    o << "[rank" << rank << "]: " << line << "\n";
  }
  return o.str();
}

std::string EccErrorLog(const Workload& w, double unix_seconds, int rank) {
  std::ostringstream o;
  o << "NVRM: Xid (PCI:0000:" << (rank % 2 ? "9b" : "1b") << ":00): 48, pid=4127, "
    << "name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the "
       "framebuffer at partition 5, subpartition 1.\n";
  std::string error =
      "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
      "CUDA kernel errors might be asynchronously reported at some other API call, so the "
      "stacktrace below might be incorrect.\n"
      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.";
  o << Ranked(std::string(IsMegatron(w) ? kMegatronTop : kTitanTop) +
              "  File \"/workspace/Megatron-LM/megatron/training/training.py\", line 1435, in "
              "train\n"
              "    train_step(forward_step_func,\n" +
              error);
  (void)unix_seconds;
  return o.str();
}

std::string TpuSliceFailureLog(const Workload& w, double unix_seconds, int rank) {
  // The TPU runtime's session master (on worker 0) and tpunetd, as MaxText's maxtest guide
  // quotes them (benchmarks/maxtest/getting_started.md, "Slice Failure / Chip Driver Error").
  const int per_host = static_cast<int>(std::max<int64_t>(1, w.DevicesPerNode()));
  const int worker = rank / per_host;
  const int chip = rank % per_host;
  const std::string stamp = GlogErrorStamp(unix_seconds, "796514");
  std::ostringstream o;
  o << stamp << "     915 session_master.cc:505] Session is failing with the following status: "
    << "Session master detected TPU session error from worker maxtext-" << worker
    << ".headless-svc:8471. The reporting TPU chip locations are:tpu" << worker << ":pe" << chip / 2
    << ":" << chip % 2 << "\n"
    << stamp << "     915 tpunetd_client.cc:311] Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR "
    << "in session e6c885828b5" << std::hex << (0x38167 + worker * 16 + chip) << std::dec
    << "; Start failure handling\n";
  return o.str();
}

}  // namespace paratune::sim
