// A configuration (contract section 3 keys) resolved against a workload: every knob with its
// effective value, defaults filled the way the framework fills them. The performance model and
// the simulated cluster both work on this flat struct, so a Config is parsed once per estimate.
//
// Defaults (what Megatron-LM / MaxText do when the flag is absent):
//   GPU: tp = pp = vpp = cp = ep = 1, mbs = 1, recompute = none, recomputeLayers = all layers
//   of a stage, sequenceParallel = (tp > 1), distributedOptimizer = false, overlapGradReduce =
//   overlapParamGather = false, fusedCrossEntropy = false, tpCommOverlap = torchCompile = false,
//   first/lastPipelineStageLayers = an even split. dp = devices / (tp * pp * cp). TPU: iciFsdp =
//   devices / (iciData * iciTensor * iciSequence * iciExpert * dcnData) (MaxText's
//   "-1" fill), the other axes 1, remat = full, perDeviceBatchSize = globalBatchSize / devices
//   (at least 1).
#ifndef PARATUNE_AGENTS_MODEL_PARALLEL_PLAN_H_
#define PARATUNE_AGENTS_MODEL_PARALLEL_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/model/workload.h"

namespace paratune {

enum class Recompute { kNone, kSelective, kFull };

// MaxText remat policies, in the order of the `remat` parameter's words.
enum class Remat {
  kMinimal,
  kMinimalFlash,
  kSaveDotWithContextExceptMlp,
  kSaveDotExceptMlpwi,
  kSaveDotExceptMlp,
  kSaveQkvProj,
  kSaveOutProj,
  kQkvProjOffloaded,
  kMinimalOffloaded,
  kFull,
};

struct ParallelPlan {
  // GPU (Megatron-LM, torchtitan).
  int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, mbs = 1, dp = 1;
  Recompute recompute = Recompute::kNone;
  int64_t recompute_layers = 0;  // per stage, under full recompute
  bool sequence_parallel = false, distributed_optimizer = false, overlap_grad_reduce = false,
       overlap_param_gather = false, fused_cross_entropy = false;
  // TP collectives overlapped with the GEMMs they feed (Megatron-LM --tp-comm-overlap, TE
  // userbuffers; torchtitan AsyncTP), and torch.compile of the model (torchtitan, Hugging Face).
  bool tp_comm_overlap = false, torch_compile = false;
  int64_t first_stage_layers = 0, last_stage_layers = 0;  // 0: even split
  int64_t num_microbatches = 1;                           // per step per pipeline
  int64_t dp_shard = -1, dp_replicate = 1;  // torchtitan dpShard (-1: fill) and dpReplicate
  // torchtitan's pipeline micro-batch (ppMicrobatchSize, --parallelism.
  // pipeline_parallel_microbatch_size): with pp > 1 its local batch (mbs) runs as one pipeline
  // schedule of mbs / pp_microbatch micro-batches, once per gradient-accumulation step.
  int64_t pp_microbatch = 1;
  // Derived (FillGpuDefaults): sequences in one forward pass through a stage, and the pipeline
  // schedules (flushes) per optimizer step. Megatron-LM: mbs and 1; torchtitan with pp > 1:
  // pp_microbatch and its gradient-accumulation steps.
  int64_t micro_batch = 1;
  int64_t pipeline_schedules = 1;
  // Micro-batches one pipeline schedule runs (what fills its pipeline).
  int64_t MicrobatchesPerSchedule() const {
    return std::max<int64_t>(1, num_microbatches / std::max<int64_t>(1, pipeline_schedules));
  }
  // TPU (MaxText).
  int64_t ici_data = 1, ici_fsdp = 1, ici_tensor = 1, ici_sequence = 1, ici_expert = 1,
          dcn_data = 1;
  // Across slices (issue 38): MaxText's dcn_fsdp_parallelism and dcn_pipeline_parallelism.
  int64_t dcn_fsdp = 1, dcn_pipeline = 1;
  // Slices the DCN axes span: dcnData x dcnFsdp x dcnPipeline.
  int64_t DcnProduct() const { return dcn_data * dcn_fsdp * dcn_pipeline; }
  Remat remat = Remat::kFull;
  int64_t per_device_batch_size = 1;
  // Keys set in the config that do not apply to this workload's framework (e.g. iciFsdp on a
  // GPU); they are ignored and reported as violations.
  std::vector<std::string> foreign_keys;

  // Layers on the first and last stage and on a middle stage.
  int64_t FirstStageLayers(int64_t num_layers) const;
  int64_t LastStageLayers(int64_t num_layers) const;
  int64_t MiddleStageLayers(int64_t num_layers) const;
  int64_t MaxStageLayers(int64_t num_layers) const;
};

ParallelPlan PlanFromConfig(const Workload& w, const Config& c);
// The plan as a Config holding every key that applies to the workload's framework.
Config PlanToConfig(const Workload& w, const ParallelPlan& p);

// A broken constraint: a sentence for people that names the keys, the keys to blame, and the
// text the framework itself prints when launched with it (exception type included).
struct Violation {
  std::string sentence;
  std::vector<std::string> keys;
  std::string framework_error;
};

// Every broken constraint of `p` for `w` (empty when the plan is launchable).
std::vector<Violation> FindViolations(const Workload& w, const ParallelPlan& p);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_MODEL_PARALLEL_PLAN_H_
