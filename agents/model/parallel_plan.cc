#include "agents/model/parallel_plan.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "agents/model/model_internal.h"

namespace paratune {

namespace {

enum Key {
  kTp,
  kPp,
  kVpp,
  kCp,
  kEp,
  kMbs,
  kRecompute,
  kRecomputeLayers,
  kSequenceParallel,
  kDistributedOptimizer,
  kOverlapGradReduce,
  kOverlapParamGather,
  kFusedCrossEntropy,
  kTpCommOverlap,
  kTorchCompile,
  kFirstStageLayers,
  kLastStageLayers,
  kIciData,
  kIciFsdp,
  kIciTensor,
  kIciSequence,
  kIciExpert,
  kDcnData,
  kDcnFsdp,
  kDcnPipeline,
  kRemat,
  kPerDeviceBatchSize,
  kNumKeys
};

// Sorted by name for binary search.
constexpr std::array<std::pair<std::string_view, Key>, kNumKeys> kKeys = {{
    {"cp", kCp},
    {"dcnData", kDcnData},
    {"dcnFsdp", kDcnFsdp},
    {"dcnPipeline", kDcnPipeline},
    {"distributedOptimizer", kDistributedOptimizer},
    {"ep", kEp},
    {"firstPipelineStageLayers", kFirstStageLayers},
    {"fusedCrossEntropy", kFusedCrossEntropy},
    {"iciData", kIciData},
    {"iciExpert", kIciExpert},
    {"iciFsdp", kIciFsdp},
    {"iciSequence", kIciSequence},
    {"iciTensor", kIciTensor},
    {"lastPipelineStageLayers", kLastStageLayers},
    {"mbs", kMbs},
    {"overlapGradReduce", kOverlapGradReduce},
    {"overlapParamGather", kOverlapParamGather},
    {"perDeviceBatchSize", kPerDeviceBatchSize},
    {"pp", kPp},
    {"recompute", kRecompute},
    {"recomputeLayers", kRecomputeLayers},
    {"remat", kRemat},
    {"sequenceParallel", kSequenceParallel},
    {"torchCompile", kTorchCompile},
    {"tp", kTp},
    {"tpCommOverlap", kTpCommOverlap},
    {"vpp", kVpp},
}};

int KeyIndex(std::string_view name) {
  auto it = std::lower_bound(kKeys.begin(), kKeys.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  return (it != kKeys.end() && it->first == name) ? it->second : -1;
}

bool IsTpuKey(int k) { return k >= kIciData; }

Recompute ParseRecompute(const std::string& s) {
  if (s == "full") return Recompute::kFull;
  if (s == "selective") return Recompute::kSelective;
  return Recompute::kNone;
}

Remat ParseRemat(const std::string& s) {
  const ParamInfo* info = FindParameter("remat");
  for (size_t i = 0; i < info->enum_values.size(); ++i) {
    if (info->enum_values[i] == s) return static_cast<Remat>(i);
  }
  return Remat::kFull;
}

struct SetFlags {
  bool sp = false, recompute_layers = false, fsdp = false, pdbs = false, dcn_data = false;
};

void ApplyKey(int k, const ParamValue& v, ParallelPlan* p, SetFlags* set) {
  const int64_t i = v.AsInt();
  switch (k) {
    case kTp:
      p->tp = i;
      break;
    case kPp:
      p->pp = i;
      break;
    case kVpp:
      p->vpp = i;
      break;
    case kCp:
      p->cp = i;
      break;
    case kEp:
      p->ep = i;
      break;
    case kMbs:
      p->mbs = i;
      break;
    case kRecompute:
      p->recompute = ParseRecompute(v.AsString());
      break;
    case kRecomputeLayers:
      p->recompute_layers = i;
      set->recompute_layers = true;
      break;
    case kSequenceParallel:
      p->sequence_parallel = v.AsBool();
      set->sp = true;
      break;
    case kDistributedOptimizer:
      p->distributed_optimizer = v.AsBool();
      break;
    case kOverlapGradReduce:
      p->overlap_grad_reduce = v.AsBool();
      break;
    case kOverlapParamGather:
      p->overlap_param_gather = v.AsBool();
      break;
    case kFusedCrossEntropy:
      p->fused_cross_entropy = v.AsBool();
      break;
    case kTpCommOverlap:
      p->tp_comm_overlap = v.AsBool();
      break;
    case kTorchCompile:
      p->torch_compile = v.AsBool();
      break;
    case kFirstStageLayers:
      p->first_stage_layers = i;
      break;
    case kLastStageLayers:
      p->last_stage_layers = i;
      break;
    case kIciData:
      p->ici_data = i;
      break;
    case kIciFsdp:
      p->ici_fsdp = i;
      set->fsdp = true;
      break;
    case kIciTensor:
      p->ici_tensor = i;
      break;
    case kIciSequence:
      p->ici_sequence = i;
      break;
    case kIciExpert:
      p->ici_expert = i;
      break;
    case kDcnData:
      p->dcn_data = i;
      set->dcn_data = true;
      break;
    case kDcnFsdp:
      p->dcn_fsdp = i;
      break;
    case kDcnPipeline:
      p->dcn_pipeline = i;
      break;
    case kRemat:
      p->remat = ParseRemat(v.AsString());
      break;
    case kPerDeviceBatchSize:
      p->per_device_batch_size = i;
      set->pdbs = true;
      break;
    default:
      break;
  }
}

void FillGpuDefaults(const Workload& w, const SetFlags& set, ParallelPlan* p) {
  if (!set.sp) p->sequence_parallel = p->tp > 1;
  if (p->tp == 1) p->sequence_parallel = false;  // Megatron turns it off for tp 1
  const int64_t model_parallel = std::max<int64_t>(1, p->tp * p->pp * p->cp);
  p->dp = std::max<int64_t>(1, w.devices / model_parallel);
  const int64_t per_step = std::max<int64_t>(1, p->mbs * p->dp);
  p->num_microbatches = std::max<int64_t>(1, w.training.global_batch_size / per_step);
  p->micro_batch = p->mbs;
  p->pipeline_schedules = 1;
  if (internal::ProfileOf(w) == internal::Profile::kTorchtitan && p->pp > 1) {
    // torchtitan splits each local batch into local_batch_size / pipeline_parallel_microbatch_size
    // micro-batches (torchtitan/distributed/pipeline_parallel.py build_pipeline_schedule), and
    // its train step runs one pp_schedule.step per gradient-accumulation step
    // (torchtitan/train.py train_step): a pipeline flush, and an FSDP reduce-scatter at each
    // schedule's last backward (torch/distributed/pipelining/stage.py
    // backward_maybe_with_nosync), per accumulation step. NeMo AutoModel's LBS / MBS / GA the same.
    p->micro_batch = std::clamp<int64_t>(p->pp_microbatch, 1, std::max<int64_t>(1, p->mbs));
    p->pipeline_schedules = p->num_microbatches;
    p->num_microbatches *= std::max<int64_t>(1, p->mbs / p->micro_batch);
  }
  if (!set.recompute_layers) p->recompute_layers = p->MaxStageLayers(w.model.num_layers);
}

void FillTpuDefaults(const Workload& w, const SetFlags& set, ParallelPlan* p) {
  if (!set.dcn_data && w.hardware.slices > 1) {
    // MaxText's dcn_data_parallelism: -1 (configs/base.yml) takes the slices the other DCN
    // axes leave.
    p->dcn_data = std::max<int64_t>(
        1, w.hardware.slices / std::max<int64_t>(1, p->dcn_fsdp * p->dcn_pipeline));
  }
  if (!set.fsdp) {
    const int64_t others = std::max<int64_t>(
        1, p->ici_data * p->ici_tensor * p->ici_sequence * p->ici_expert * p->DcnProduct());
    p->ici_fsdp = std::max<int64_t>(1, w.devices / others);
  }
  if (!set.pdbs) {
    p->per_device_batch_size =
        std::max<int64_t>(1, w.training.global_batch_size / std::max<int64_t>(1, w.devices));
  }
}

}  // namespace

int64_t ParallelPlan::FirstStageLayers(int64_t num_layers) const {
  if (pp <= 1) return num_layers;
  if (first_stage_layers > 0) return first_stage_layers;
  return MiddleStageLayers(num_layers);
}

int64_t ParallelPlan::LastStageLayers(int64_t num_layers) const {
  if (pp <= 1) return num_layers;
  if (last_stage_layers > 0) return last_stage_layers;
  return MiddleStageLayers(num_layers);
}

int64_t ParallelPlan::MiddleStageLayers(int64_t num_layers) const {
  if (pp <= 1) return num_layers;
  int64_t rest = num_layers - first_stage_layers - last_stage_layers;
  int64_t stages = pp - (first_stage_layers > 0 ? 1 : 0) - (last_stage_layers > 0 ? 1 : 0);
  if (stages <= 0) return 0;
  return std::max<int64_t>(0, (rest + stages - 1) / stages);
}

int64_t ParallelPlan::MaxStageLayers(int64_t num_layers) const {
  return std::max({FirstStageLayers(num_layers), LastStageLayers(num_layers),
                   pp > 2 ? MiddleStageLayers(num_layers) : 0});
}

ParallelPlan PlanFromConfig(const Workload& w, const Config& c) {
  ParallelPlan p;
  SetFlags set;
  const bool tpu = w.IsTpu();
  for (const auto& [name, value] : c) {
    int k = KeyIndex(name);
    if (k < 0) continue;
    if (IsTpuKey(k) != tpu) {
      p.foreign_keys.push_back(name);
      continue;
    }
    ApplyKey(k, value, &p, &set);
  }
  p.pp_microbatch = GetInt(c, "ppMicrobatchSize", 1);
  if (tpu) {
    FillTpuDefaults(w, set, &p);
  } else {
    FillGpuDefaults(w, set, &p);
  }
  // torchtitan's data-parallel split (agents/core/framework_rules.h checks its mesh rule).
  p.dp_shard = GetInt(c, "dpShard", -1);
  p.dp_replicate = GetInt(c, "dpReplicate", 1);
  return p;
}

Config PlanToConfig(const Workload& w, const ParallelPlan& p) {
  Config c;
  auto i = [&](const char* k, int64_t v) { c[k] = ParamValue::Int(v); };
  auto b = [&](const char* k, bool v) { c[k] = ParamValue::Bool(v); };
  if (w.IsTpu()) {
    i("iciData", p.ici_data);
    i("iciFsdp", p.ici_fsdp);
    i("iciTensor", p.ici_tensor);
    i("iciSequence", p.ici_sequence);
    i("iciExpert", p.ici_expert);
    i("dcnData", p.dcn_data);
    if (p.dcn_fsdp != 1) i("dcnFsdp", p.dcn_fsdp);  // only when set: TPU configs keep their keys
    if (p.dcn_pipeline != 1) i("dcnPipeline", p.dcn_pipeline);
    c["remat"] = ParamValue::Enum(FindParameter("remat")->enum_values[static_cast<int>(p.remat)]);
    i("perDeviceBatchSize", p.per_device_batch_size);
    return c;
  }
  i("tp", p.tp);
  i("pp", p.pp);
  i("vpp", p.vpp);
  i("cp", p.cp);
  i("ep", p.ep);
  i("mbs", p.mbs);
  static const char* kRecomputeNames[] = {"none", "selective", "full"};
  c["recompute"] = ParamValue::Enum(kRecomputeNames[static_cast<int>(p.recompute)]);
  if (p.recompute == Recompute::kFull) i("recomputeLayers", p.recompute_layers);
  b("sequenceParallel", p.sequence_parallel);
  b("distributedOptimizer", p.distributed_optimizer);
  b("overlapGradReduce", p.overlap_grad_reduce);
  b("overlapParamGather", p.overlap_param_gather);
  b("fusedCrossEntropy", p.fused_cross_entropy);
  // Overlap and compilation only when asked for: absent means off, as in the frameworks.
  if (p.tp_comm_overlap) b("tpCommOverlap", true);
  if (p.torch_compile) b("torchCompile", true);
  // Uneven stages only when asked for: absent means Megatron's even split.
  if (p.first_stage_layers > 0) i("firstPipelineStageLayers", p.first_stage_layers);
  if (p.last_stage_layers > 0) i("lastPipelineStageLayers", p.last_stage_layers);
  if (p.pp_microbatch != 1) i("ppMicrobatchSize", p.pp_microbatch);
  return c;
}

}  // namespace paratune
