// FindViolations: the launch-time checks of Megatron-LM and MaxText, with the sentence a user
// can act on and the error text the framework prints (so the simulated cluster fails the way a
// real pod does).
#include <algorithm>
#include <string>

#include "agents/core/framework_rules.h"
#include "agents/model/model_internal.h"
#include "agents/model/parallel_plan.h"

namespace paratune {

namespace {

using std::to_string;

class Checker {
 public:
  explicit Checker(std::vector<Violation>* out) : out_(out) {}
  void Add(std::string sentence, std::vector<std::string> keys, std::string error) {
    out_->push_back({std::move(sentence), std::move(keys), std::move(error)});
  }

 private:
  std::vector<Violation>* out_;
};

void CheckPositive(const ParallelPlan& p, bool tpu, Checker* c) {
  const std::pair<const char*, int64_t> gpu[] = {{"tp", p.tp}, {"pp", p.pp}, {"vpp", p.vpp},
                                                 {"cp", p.cp}, {"ep", p.ep}, {"mbs", p.mbs}};
  const std::pair<const char*, int64_t> tpu_axes[] = {
      {"iciData", p.ici_data},
      {"iciFsdp", p.ici_fsdp},
      {"iciTensor", p.ici_tensor},
      {"iciSequence", p.ici_sequence},
      {"iciExpert", p.ici_expert},
      {"dcnData", p.dcn_data},
      {"dcnFsdp", p.dcn_fsdp},
      {"dcnPipeline", p.dcn_pipeline},
      {"perDeviceBatchSize", p.per_device_batch_size}};
  auto check = [c](const char* k, int64_t v) {
    if (v < 1) {
      c->Add(std::string(k) + " " + to_string(v) + " must be at least 1", {k},
             std::string("ValueError: ") + k + " must be a positive integer, got " + to_string(v));
    }
  };
  if (tpu) {
    for (const auto& [k, v] : tpu_axes) check(k, v);
  } else {
    for (const auto& [k, v] : gpu) check(k, v);
  }
}

void CheckGpuSizes(const Workload& w, const ParallelPlan& p, Checker* c) {
  const ModelShape& m = w.model;
  const int64_t mp = p.tp * p.pp * p.cp;
  if (w.devices % mp != 0) {
    c->Add("devices " + to_string(w.devices) +
               " is not divisible by tp x pp x cp = " + to_string(mp) + " (tp " + to_string(p.tp) +
               ", pp " + to_string(p.pp) + ", cp " + to_string(p.cp) + ")",
           {"tp", "pp", "cp"},
           "RuntimeError: world_size (" + to_string(w.devices) +
               ") is not divisible by tensor_model_parallel_size (" + to_string(p.tp) +
               ") x pipeline_model_parallel_size (" + to_string(p.pp) +
               ") x context_parallel_size (" + to_string(p.cp) + ")");
  }
  if (m.num_attention_heads % p.tp != 0) {
    c->Add("numAttentionHeads " + to_string(m.num_attention_heads) + " is not divisible by tp " +
               to_string(p.tp),
           {"tp"},
           "ValueError: num_attention_heads (" + to_string(m.num_attention_heads) +
               ") must be a multiple of tensor_model_parallel_size (" + to_string(p.tp) + ").");
  } else if (m.num_query_groups % p.tp != 0) {
    c->Add("numQueryGroups " + to_string(m.num_query_groups) + " is not divisible by tp " +
               to_string(p.tp),
           {"tp"},
           "ValueError: num_query_groups (" + to_string(m.num_query_groups) +
               ") must be a multiple of tensor_model_parallel_size (" + to_string(p.tp) + ").");
  }
  if (p.sequence_parallel && w.training.seq_length % p.tp != 0) {
    c->Add("seqLength " + to_string(w.training.seq_length) + " is not divisible by tp " +
               to_string(p.tp) + " (sequenceParallel)",
           {"tp", "sequenceParallel"},
           "AssertionError: " + to_string(w.training.seq_length) + " is not divisible by " +
               to_string(p.tp));
  }
  if (p.cp > 1 && w.training.seq_length % (2 * p.cp) != 0) {
    c->Add("seqLength " + to_string(w.training.seq_length) +
               " is not divisible by 2 x cp = " + to_string(2 * p.cp),
           {"cp"},
           "AssertionError: Sequence length should be divisible by 2 * context_parallel_size (" +
               to_string(2 * p.cp) + ") for load balancing");
  }
}

void CheckPipeline(const Workload& w, const ParallelPlan& p, Checker* c) {
  const int64_t layers = w.model.num_layers;
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    const int64_t rest = layers - p.first_stage_layers - p.last_stage_layers;
    const int64_t middle = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
    if (p.pp < 2 || rest < 0 || (middle > 0 && rest % middle != 0) || (middle == 0 && rest != 0)) {
      c->Add("firstPipelineStageLayers/lastPipelineStageLayers leave " + to_string(rest) +
                 " layers that do not split evenly over the other " + to_string(middle) +
                 " stages of pp " + to_string(p.pp),
             {"firstPipelineStageLayers", "lastPipelineStageLayers", "pp"},
             "AssertionError: number of layers (" + to_string(rest) +
                 ") of the middle pipeline stages should be divisible by the number of middle "
                 "stages (" +
                 to_string(middle) + ")");
    }
  } else if (layers % p.pp != 0) {
    c->Add("numLayers " + to_string(layers) + " is not divisible by pp " + to_string(p.pp), {"pp"},
           "AssertionError: number of layers should be divisible by the pipeline parallel size");
  }
  if (p.vpp > 1) {
    const int64_t per_stage = p.MaxStageLayers(layers);
    if (p.pp < 2) {
      c->Add("vpp " + to_string(p.vpp) + " needs pp > 1", {"vpp", "pp"},
             "AssertionError: pipeline-model-parallel size should be greater than 1 with "
             "interleaved schedule");
    } else if (per_stage % p.vpp != 0) {
      c->Add("layers per pipeline stage " + to_string(per_stage) + " is not divisible by vpp " +
                 to_string(p.vpp),
             {"vpp", "pp"},
             "AssertionError: number of layers per pipeline stage must be divisible by the "
             "number of virtual pipeline stages");
    }
  }
}

void CheckBatchAndMoe(const Workload& w, const ParallelPlan& p, Checker* c) {
  const int64_t gbs = w.training.global_batch_size;
  if (gbs % (p.mbs * p.dp) != 0) {
    c->Add("globalBatchSize " + to_string(gbs) +
               " is not divisible by mbs x dp = " + to_string(p.mbs * p.dp) + " (mbs " +
               to_string(p.mbs) + ", dp " + to_string(p.dp) + ")",
           {"mbs", "tp", "pp", "cp"},
           "AssertionError: global batch size (" + to_string(gbs) +
               ") is not divisible by micro batch size (" + to_string(p.mbs) +
               ") times data parallel size (" + to_string(p.dp) + ")");
  }
  const ModelShape& m = w.model;
  if (p.ep > 1 && !m.IsMoe()) {
    c->Add("ep " + to_string(p.ep) + " needs a mixture-of-experts model (numExperts is 0)", {"ep"},
           "AssertionError: num_experts must be non None to use expert model parallelism");
  } else if (m.IsMoe() && m.num_experts % p.ep != 0) {
    c->Add("numExperts " + to_string(m.num_experts) + " is not divisible by ep " + to_string(p.ep),
           {"ep"},
           "AssertionError: Number of experts should be a multiple of expert model parallel_size.");
  } else if (p.ep > 1 && (p.dp * p.cp) % p.ep != 0) {
    c->Add("ep " + to_string(p.ep) + " does not divide dp x cp = " + to_string(p.dp * p.cp), {"ep"},
           "RuntimeError: data_parallel_size x context_parallel_size (" + to_string(p.dp * p.cp) +
               ") is not divisible by expert_model_parallel_size (" + to_string(p.ep) + ")");
  }
  // Megatron-LM megatron/training/arguments.py (validate_args): the userbuffer overlap splits
  // the sequence-parallel all-gather / reduce-scatter around the GEMMs.
  if (p.tp_comm_overlap && !p.sequence_parallel) {
    c->Add("tpCommOverlap needs sequenceParallel (and tp > 1)",
           {"tpCommOverlap", "sequenceParallel"},
           "AssertionError: Tensor parallel communication/GEMM overlap can happen only when "
           "sequence parallelism is enabled");
  }
}

// The version-dependent rules of agents/core/framework_rules.h (overlapParamGather's needs,
// the interleaved schedule, MoE with tp, torchtitan's mesh, MaxText's mesh axes).
void CheckFrameworkVersionRules(const Workload& w, const ParallelPlan& p, Checker* c) {
  auto version = ParseFrameworkVersion(w.training.framework_version, "frameworkVersion");
  RuleInputs in;
  in.framework = w.training.framework;
  in.devices = w.devices;
  in.num_layers = w.model.num_layers;
  in.global_batch_size = w.training.global_batch_size;
  in.tp = p.tp, in.pp = p.pp, in.vpp = p.vpp, in.cp = p.cp, in.ep = p.ep, in.mbs = p.mbs;
  in.dp = p.dp, in.num_microbatches = p.num_microbatches;
  in.sequence_parallel = p.sequence_parallel, in.distributed_optimizer = p.distributed_optimizer;
  in.overlap_grad_reduce = p.overlap_grad_reduce, in.overlap_param_gather = p.overlap_param_gather;
  in.first_stage_layers_set = p.first_stage_layers > 0;
  in.last_stage_layers_set = p.last_stage_layers > 0;
  in.dp_shard = p.dp_shard, in.dp_replicate = p.dp_replicate, in.pp_microbatch = p.pp_microbatch;
  in.ici_sequence = p.ici_sequence;
  for (auto& v : CheckFrameworkRules(version.ok() ? *version : FrameworkVersion{}, in)) {
    c->Add(v.sentence + " [rule " + v.rule + "]", std::move(v.keys), std::move(v.framework_error));
  }
}

void CheckTpu(const Workload& w, const ParallelPlan& p, Checker* c) {
  const int64_t ici = p.ici_data * p.ici_fsdp * p.ici_tensor * p.ici_sequence * p.ici_expert;
  const int64_t dcn = p.DcnProduct();
  const int64_t slices = std::max<int64_t>(1, w.hardware.slices);
  if (slices > 1 && dcn != slices) {
    // jax.experimental.mesh_utils.create_hybrid_device_mesh, which MaxText's create_device_mesh
    // calls with the dcn_*_parallelism axes, needs their product to be the slice count.
    c->Add("dcnData x dcnFsdp x dcnPipeline = " + to_string(dcn) + " does not equal the " +
               to_string(slices) + " slices of spec.hardware.slices",
           {"dcnData", "dcnFsdp", "dcnPipeline"},
           "AssertionError: Number of slices " + to_string(slices) +
               " must equal the product of dcn_mesh_shape");
  } else if (ici * dcn != w.devices) {
    c->Add("iciData x iciFsdp x iciTensor x iciSequence x iciExpert x dcnData = " +
               to_string(ici * dcn) + " does not equal the " + to_string(w.devices) +
               " chips of the slice",
           {"iciData", "iciFsdp", "iciTensor", "iciSequence", "iciExpert", "dcnData"},
           "AssertionError: Number of ICI devices " + to_string(w.devices / dcn) +
               " does not match the product of the parallelism " + to_string(ici));
  }
  const ModelShape& m = w.model;
  if (m.num_query_groups % p.ici_tensor != 0 || m.num_attention_heads % p.ici_tensor != 0) {
    c->Add("numAttentionHeads " + to_string(m.num_attention_heads) + " / numQueryGroups " +
               to_string(m.num_query_groups) + " are not divisible by iciTensor " +
               to_string(p.ici_tensor),
           {"iciTensor"},
           "ValueError: One of pjit outputs with pytree key path ['params']['decoder']['layers']"
           "['self_attention']['key']['kernel'] was given the sharding of NamedSharding(mesh="
           "Mesh('tensor': " +
               to_string(p.ici_tensor) +
               "), spec=PartitionSpec(None, None, "
               "'tensor')), which implies that the global size of its dimension 2 should be "
               "divisible by " +
               to_string(p.ici_tensor) + ", but it is equal to " + to_string(m.num_query_groups));
  }
  if (w.training.seq_length % p.ici_sequence != 0) {
    c->Add("seqLength " + to_string(w.training.seq_length) + " is not divisible by iciSequence " +
               to_string(p.ici_sequence),
           {"iciSequence"},
           "ValueError: max_target_length (" + to_string(w.training.seq_length) +
               ") must be divisible by the sequence parallelism (" + to_string(p.ici_sequence) +
               ")");
  }
  if (p.ici_expert > 1 && (!m.IsMoe() || m.num_experts % p.ici_expert != 0)) {
    c->Add("numExperts " + to_string(m.num_experts) + " is not divisible by iciExpert " +
               to_string(p.ici_expert),
           {"iciExpert"},
           "ValueError: num_experts (" + to_string(m.num_experts) +
               ") must be divisible by expert parallelism (" + to_string(p.ici_expert) + ")");
  }
}

}  // namespace

std::vector<Violation> FindViolations(const Workload& w, const ParallelPlan& p) {
  std::vector<Violation> out;
  Checker c(&out);
  for (const auto& k : p.foreign_keys) {
    c.Add(k + " does not apply to " + w.training.framework + " on " + w.accel->name, {k},
          "error: unrecognized arguments: --" + k);
  }
  const bool tpu = w.IsTpu();
  CheckPositive(p, tpu, &c);
  if (!out.empty()) return out;  // the rest divides by these
  if (w.training.precision == "fp8" && w.accel->fp8_tflops <= 0) {
    c.Add("precision fp8 is not supported by " + w.accel->name, {},
          "RuntimeError: FP8 is not supported on this device");
  }
  if (w.training.precision == "bf16" && w.accel->name.rfind("nvidia-v100", 0) == 0) {
    // Volta (compute capability 7.0) has no bf16 tensor cores.
    c.Add("precision bf16 is not supported by " + w.accel->name + "; use fp16", {},
          "RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to "
          "float16.");
  }
  if (tpu) {
    CheckTpu(w, p, &c);
    CheckFrameworkVersionRules(w, p, &c);
    return out;
  }
  CheckGpuSizes(w, p, &c);
  // torchtitan (and NeMo AutoModel, which uses its pipelining) splits layers over (virtual)
  // stages as evenly as it can, uneven counts allowed (torchtitan/distributed/pipeline_parallel.py
  // generate_llm_fqn_per_model_part): Megatron-LM's divisibility checks do not apply.
  if (internal::ProfileOf(w) != internal::Profile::kTorchtitan) CheckPipeline(w, p, &c);
  CheckBatchAndMoe(w, p, &c);
  CheckFrameworkVersionRules(w, p, &c);
  return out;
}

}  // namespace paratune
