#include "agents/core/framework_rules.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace paratune {

namespace {

using std::to_string;

// Sources, cited once (repository, file, tag or commit).
constexpr const char* kMlmArgs08 =
    "NVIDIA/Megatron-LM megatron/training/arguments.py validate_args, tag core_v0.8.0 "
    "(baf94af3)";
constexpr const char* kMlmArgs019 =
    "NVIDIA/Megatron-LM megatron/training/arguments.py validate_args, tag core_v0.19.0 "
    "(5be96267)";
constexpr const char* kMlmParallelConfig =
    "NVIDIA/Megatron-LM megatron/core/model_parallel_config.py ModelParallelConfig."
    "__post_init__: ValueError in core_v0.8.0 .. core_v0.14.0, a warning from core_v0.15.0";
constexpr const char* kMlmSchedules =
    "NVIDIA/Megatron-LM megatron/core/pipeline_parallel/schedules.py "
    "forward_backward_pipelining_with_interleaving: core_v0.8.0/0.9.0 need M % pp == 0; from "
    "core_v0.10.0 microbatch_group_size_per_vp_stage N (default pp) must lie in [pp, M] and "
    "M % N be 0 or >= pp";
constexpr const char* kTitanDims =
    "pytorch/torchtitan torchtitan/distributed/parallel_dims.py ParallelDims._validate, tag "
    "v0.2.2 (73a0e697) and main b5bcd76c (which adds the explicit ep check)";
constexpr const char* kTitanTrain =
    "pytorch/torchtitan torchtitan/train.py Trainer.__init__ (verify batch sizes), tag v0.2.2";
constexpr const char* kTitanPipeline =
    "pytorch/torchtitan torchtitan/distributed/pipeline_parallel.py build_pipeline_schedule "
    "(fb3b230e): assert local_batch_size % pipeline_parallel_microbatch_size == 0";
constexpr const char* kMaxTextSequence =
    "AI-Hypercomputer/maxtext commit e0f17a00 (2026-04-22, \"deprecate sequence axis\", first "
    "released in maxtext-v0.2.2): src/maxtext/configs/base.yml mesh_axes drops 'sequence'; "
    "src/maxtext/configs/types.py builds ici_parallelism from mesh_axes only";

// NeMo Framework containers and the Megatron-core and Transformer Engine they ship. Sources:
// NeMo Framework user guide 24.09, "Software Component Versions"
// (docs.nvidia.com/nemo-framework/user-guide/24.09/softwarecomponentversions.html) for 24.05 -
// 24.09 (Transformer Engine 1.6.0.dev0, 1.8.0.dev0, 1.10); NVIDIA-NeMo/Megatron-Bridge
// docs/releases/software-versions.md (067f987d) for 25.09 - 26.06 (25.11 ships a dev build of
// 0.15, 26.02 a main build of 0.16), whose Transformer Engine is later than 24.09's.
// `te_before_1_8` names the Transformer Engine of images older than v1.8, whose
// DotProductAttention runs flash-attn's FlashAttention-2 first (a 1.8 dev build precedes the
// release: NeMo 24.07's pin is v1.8~19, docs/model.md "Effects for other stacks"); nullptr else.
struct ImageVersion {
  const char* tag;  // yy.mm
  const char* core;
  const char* te_before_1_8;
};
constexpr ImageVersion kNemoImages[] = {
    {"24.05", "0.7.0", "1.6.0.dev0"}, {"24.07", "0.8.0", "1.8.0.dev0"},
    {"24.09", "0.9.0", nullptr},      {"25.09", "0.14.0", nullptr},
    {"25.11", "0.15.0", nullptr},     {"26.02", "0.16.0", nullptr},
    {"26.04", "0.17.0", nullptr},     {"26.06", "0.18.0", nullptr},
};

// The table's entry for a NeMo image tag ("24.07", or a patch release "26.06.01"; custom builds
// such as "25.11.nemotron_3_nano" are not in the table), or nullptr.
const ImageVersion* NemoImage(std::string_view image) {
  const std::string nemo = "nvcr.io/nvidia/nemo:";
  if (image.rfind(nemo, 0) != 0) return nullptr;
  const std::string tag(image.substr(nemo.size()));
  for (const auto& e : kNemoImages) {
    const std::string t = e.tag;
    const bool patch = tag.size() > t.size() + 1 && tag.rfind(t + ".", 0) == 0 &&
                       tag.find_first_not_of("0123456789", t.size() + 1) == std::string::npos;
    if (tag == t || patch) return &e;
  }
  return nullptr;
}

// MaxText's pre-built TPU images, tagged with the MaxText release (AI-Hypercomputer/maxtext
// docs/tutorials/build_maxtext.md, "Pre-built MaxText Docker images", e591f30c).
constexpr const char* kMaxTextImage =
    "us-docker.pkg.dev/cloud-tpu-images/maxtext-images/tpu_pre_training:";

bool IsMegatron(std::string_view framework) {
  return framework == "megatron-lm" || framework == "megatron-deepspeed";
}

}  // namespace

bool FrameworkVersion::AtLeast(std::vector<int> v) const {
  if (!known()) return true;
  return !std::lexicographical_compare(parts.begin(), parts.end(), v.begin(), v.end());
}

Result<FrameworkVersion> ParseFrameworkVersion(std::string_view text, const std::string& field) {
  std::string t(text);
  for (const char* prefix : {"core_v", "core_r", "maxtext-v", "v"}) {
    if (t.rfind(prefix, 0) == 0) {
      t = t.substr(std::char_traits<char>::length(prefix));
      break;
    }
  }
  FrameworkVersion v;
  v.text = std::string(text);
  v.source = field;
  std::string cur;
  bool ok = !t.empty();
  for (size_t i = 0; i <= t.size() && ok; ++i) {
    if (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
      cur.push_back(t[i]);
      continue;
    }
    ok = !cur.empty() && cur.size() <= 4 && (i == t.size() || t[i] == '.' || t[i] == '-');
    if (ok) v.parts.push_back(std::stoi(cur));
    cur.clear();
  }
  if (!ok || v.parts.size() < 2 || v.parts.size() > 3) {
    return Status::Invalid(field + ": \"" + std::string(text) +
                           "\" is not a version (0.14.0, core_v0.14.0, v0.2.2, or a MaxText "
                           "checkout date 2026-04-22)");
  }
  return v;
}

FrameworkVersion VersionFromImage(std::string_view framework, std::string_view image) {
  FrameworkVersion out;
  if (framework == "maxtext" && image.rfind(kMaxTextImage, 0) == 0) {
    auto v =
        ParseFrameworkVersion(image.substr(std::char_traits<char>::length(kMaxTextImage)), "image");
    if (!v.ok()) return out;
    out = *v;
    out.source = "image " + std::string(image) + " (MaxText release " + out.text + ")";
    return out;
  }
  const ImageVersion* e = IsMegatron(framework) ? NemoImage(image) : nullptr;
  if (e == nullptr) return out;
  auto v = ParseFrameworkVersion(e->core, "image");
  if (!v.ok()) return out;
  out = *v;
  out.source =
      "image " + std::string(image) + " (NeMo " + e->tag + " ships Megatron-core " + e->core + ")";
  return out;
}

FlashKernel ResolveFlashKernel(std::string_view framework, std::string_view version,
                               std::string_view image) {
  if (framework == "torchtitan") {
    auto v = ParseFrameworkVersion(version, "spec.training.frameworkVersion");
    if (!v.ok() || !v->known() || !v->AtLeast({0, 2, 0})) return {};
    return {"cudnn", "torchtitan " + v->text +
                         " (from v0.2.0 its ScaledDotProductAttention ranks cuDNN attention "
                         "first, torchtitan/models/attention.py)"};
  }
  const ImageVersion* e = IsMegatron(framework) ? NemoImage(image) : nullptr;
  if (e == nullptr || e->te_before_1_8 == nullptr) return {};
  return {"flash2", "image " + std::string(image) + " (NeMo " + e->tag +
                        " ships Transformer Engine " + e->te_before_1_8 +
                        ", before v1.8: DotProductAttention runs flash-attn's FlashAttention-2 "
                        "first)"};
}

std::string TemplateImage(const nlohmann::json& trial_template) {
  const nlohmann::json* c = &trial_template;
  for (const char* k : {"spec", "template", "spec", "containers"}) {
    if (!c->is_object() || !c->contains(k)) return "";
    c = &(*c)[k];
  }
  if (!c->is_array() || c->empty() || !(*c)[0].is_object()) return "";
  const auto& img = (*c)[0].value("image", nlohmann::json());
  return img.is_string() ? img.get<std::string>() : "";
}

Result<FrameworkVersion> ResolveFrameworkVersion(std::string_view framework,
                                                 std::string_view explicit_version,
                                                 const nlohmann::json& trial_template) {
  if (!explicit_version.empty()) {
    return ParseFrameworkVersion(explicit_version, "spec.training.frameworkVersion");
  }
  return VersionFromImage(framework, TemplateImage(trial_template));
}

Status CheckParameterApplies(std::string_view framework, std::string_view name,
                             const std::string& field) {
  if ((name == "dpShard" || name == "dpReplicate") && framework != "torchtitan") {
    return Status::Invalid(field + ": " + std::string(name) +
                           " is torchtitan's data-parallel split; framework " +
                           std::string(framework) + " derives dp from tp, pp and cp");
  }
  if (name == "ppMicrobatchSize" && framework != "torchtitan") {
    return Status::Invalid(field +
                           ": ppMicrobatchSize is torchtitan's pipeline micro-batch; "
                           "framework " +
                           std::string(framework) + " runs mbs sequences per pipeline micro-batch");
  }
  return Status::Ok();
}

namespace {

class Rules {
 public:
  explicit Rules(std::vector<RuleViolation>* out) : out_(out) {}
  void Add(const char* rule, std::string sentence, std::vector<std::string> keys, std::string error,
           const char* source) {
    out_->push_back({rule, std::move(sentence), std::move(keys), std::move(error), source});
  }

 private:
  std::vector<RuleViolation>* out_;
};

void CheckOverlapParamGather(const FrameworkVersion& v, const RuleInputs& in, Rules* r) {
  // --overlap-param-gather needs the distributed optimizer and --overlap-grad-reduce (every
  // version; core 0.19 also accepts Megatron-FSDP or dist_muon, which the vocabulary lacks).
  if (in.overlap_param_gather && (!in.distributed_optimizer || !in.overlap_grad_reduce)) {
    const bool optimizer = !in.distributed_optimizer;
    r->Add("megatron-overlap-param-gather",
           std::string("overlapParamGather needs ") +
               (optimizer ? "distributedOptimizer" : "overlapGradReduce"),
           {"overlapParamGather", optimizer ? "distributedOptimizer" : "overlapGradReduce"},
           optimizer ? "AssertionError: --overlap-param-gather only supported with distributed "
                       "optimizer"
           : v.Before({0, 9})
               ? "AssertionError: --overlap-grad-reduce should be turned on when using "
                 "--overlap-param-gather"
               : "AssertionError: Must use --overlap-param-gather with --overlap-grad-reduce",
           v.Before({0, 9}) ? kMlmArgs08 : kMlmArgs019);
  }
}

void CheckMoeSequenceParallel(const FrameworkVersion& v, const RuleInputs& in, Rules* r) {
  // Expert parallelism with tensor parallelism needs sequence parallelism, refused before core
  // 0.15. Sequence parallelism is already off at tp 1, so tp > 1 is the condition.
  if (v.Before({0, 15}) && in.ep > 1 && in.tp > 1 && !in.sequence_parallel) {
    r->Add("megatron-moe-tp-needs-sequence-parallel",
           "ep " + to_string(in.ep) + " with tp " + to_string(in.tp) +
               " needs sequenceParallel on Megatron-core " + v.text + " (before 0.15)",
           {"ep", "tp", "sequenceParallel"},
           "ValueError: When using expert parallelism and tensor parallelism, sequence "
           "parallelism must be used",
           kMlmParallelConfig);
  }
}

// The interleaved schedule's micro-batch count (M per pipeline per step).
void CheckInterleavedMicrobatches(const FrameworkVersion& v, const RuleInputs& in, Rules* r) {
  if (in.vpp > 1 && in.pp > 1) {
    const int64_t m = in.num_microbatches;
    if (v.Before({0, 10}) && m % in.pp != 0) {
      r->Add("megatron-interleaved-microbatches",
             "vpp " + to_string(in.vpp) + " needs the micro-batch count " + to_string(m) +
                 " (globalBatchSize / (mbs x dp)) divisible by pp " + to_string(in.pp),
             {"vpp", "pp", "mbs"},
             "RuntimeError: number of microbatches (" + to_string(m) +
                 ") is not divisible by pipeline-model-parallel-size (" + to_string(in.pp) +
                 ") when using interleaved schedule",
             kMlmSchedules);
    } else if (!v.Before({0, 10}) && (m < in.pp || m % in.pp != 0)) {
      const bool range = m < in.pp;
      r->Add("megatron-interleaved-microbatches",
             "vpp " + to_string(in.vpp) + " needs the micro-batch count " + to_string(m) +
                 " (globalBatchSize / (mbs x dp)) to be a multiple of pp " + to_string(in.pp) +
                 " (micro-batch groups of pp)",
             {"vpp", "pp", "mbs"},
             range ? "ValueError: The number of contiguous micro-batches in a virtual pipeline "
                     "stageshould range in [PP=" +
                         to_string(in.pp) + " , M=" + to_string(m) + "]"
                   : "RuntimeError: The remainder of M (the total micro-batches) divided by N "
                     "(number of contiguous micro-batches in a virtual pipeline stage) should "
                     "be 0, or larger than or equal to the pipeline-parallel size, but it is " +
                         to_string(m % in.pp) + ".",
             kMlmSchedules);
    }
  }
}

void CheckUnevenPipelineFlags(const FrameworkVersion& v, const RuleInputs& in, Rules* r) {
  // --decoder-first/last-pipeline-num-layers appear in core 0.9.
  if (v.Before({0, 9}) && (in.first_stage_layers_set || in.last_stage_layers_set)) {
    const char* key =
        in.first_stage_layers_set ? "firstPipelineStageLayers" : "lastPipelineStageLayers";
    r->Add("megatron-uneven-pipeline-flags",
           std::string(key) + " needs Megatron-core 0.9 or later (" + v.text +
               " has no --decoder-first/last-pipeline-num-layers)",
           {key},
           std::string("pretrain_gpt.py: error: unrecognized arguments: ") +
               (in.first_stage_layers_set ? "--decoder-first-pipeline-num-layers"
                                          : "--decoder-last-pipeline-num-layers"),
           kMlmArgs08);
  }
}

void CheckTorchtitan(const RuleInputs& in, Rules* r) {
  const int64_t dense = in.dp_replicate * in.cp * in.tp * in.pp;
  const int64_t shard = in.dp_shard > 0 ? in.dp_shard : (dense > 0 ? in.devices / dense : 0);
  if (shard < 1 || dense * shard != in.devices) {
    r->Add(
        "torchtitan-mesh",
        "dpReplicate x dpShard x cp x tp x pp = " + to_string(dense * std::max<int64_t>(shard, 0)) +
            " does not equal the " + to_string(in.devices) + " GPUs",
        {"dpReplicate", "dpShard", "cp", "tp", "pp"},
        "AssertionError: Invalid parallel dims: dp_replicate(" + to_string(in.dp_replicate) +
            ") * dp_shard(" + to_string(shard) + ") * cp(" + to_string(in.cp) + ") * tp(" +
            to_string(in.tp) + ") * pp(" + to_string(in.pp) + ") != WORLD_SIZE(" +
            to_string(in.devices) + ")",
        kTitanDims);
    return;
  }
  const int64_t sparse = shard * in.cp * in.tp;
  if (in.ep > 1 && sparse % in.ep != 0) {
    r->Add("torchtitan-expert-mesh",
           "ep " + to_string(in.ep) + " does not divide dpShard x cp x tp = " + to_string(sparse),
           {"ep", "dpShard", "cp", "tp"},
           "ValueError: expert_parallel_degree (" + to_string(in.ep) +
               ") must divide dp_shard * cp * tp (" + to_string(sparse) + ")",
           kTitanDims);
  }
  if (in.pp > 1 && (in.pp_microbatch < 1 || in.mbs % in.pp_microbatch != 0)) {
    r->Add("torchtitan-pipeline-microbatch",
           "mbs (local batch) " + to_string(in.mbs) + " is not a multiple of ppMicrobatchSize " +
               to_string(in.pp_microbatch),
           {"mbs", "ppMicrobatchSize"},
           "AssertionError: (" + to_string(in.mbs) + ", " + to_string(in.pp_microbatch) + ")",
           kTitanPipeline);
  }
  const int64_t batch_degree = in.dp_replicate * shard;
  if (in.global_batch_size % (in.mbs * batch_degree) != 0) {
    r->Add("torchtitan-batch",
           "globalBatchSize " + to_string(in.global_batch_size) +
               " is not a multiple of mbs (local batch) x dpReplicate x dpShard = " +
               to_string(in.mbs * batch_degree),
           {"mbs", "dpShard", "dpReplicate"},
           "AssertionError: global batch size must be multiple of local batch size times "
           "data-parallel degree (" +
               to_string(in.global_batch_size) + " % (" + to_string(in.mbs) + " * " +
               to_string(batch_degree) + ") != 0)",
           kTitanTrain);
  }
}

void CheckMaxText(const FrameworkVersion& v, const RuleInputs& in, Rules* r) {
  // A MaxText version is a release (0.2.2) or the date of a checkout (2026-04-22).
  const bool dated = v.known() && v.parts[0] >= 2000;
  // Unknown versions: only what every version refuses (older MaxText has the axis).
  if (v.known() && (dated ? v.AtLeast({2026, 4, 22}) : v.AtLeast({0, 2, 2})) &&
      in.ici_sequence > 1) {
    r->Add("maxtext-sequence-axis",
           "iciSequence " + to_string(in.ici_sequence) +
               ": MaxText dropped the 'sequence' mesh axis (2026-04-22, release 0.2.2; use "
               "context parallelism)",
           {"iciSequence"},
           "AssertionError: Number of ICI devices " + to_string(in.devices) +
               " does not match the product of the parallelism " +
               to_string(in.devices / in.ici_sequence),
           kMaxTextSequence);
  }
}

}  // namespace

std::vector<RuleViolation> CheckFrameworkRules(const FrameworkVersion& version,
                                               const RuleInputs& in) {
  std::vector<RuleViolation> out;
  Rules r(&out);
  if (IsMegatron(in.framework)) {
    CheckOverlapParamGather(version, in, &r);
    CheckMoeSequenceParallel(version, in, &r);
    CheckInterleavedMicrobatches(version, in, &r);
    CheckUnevenPipelineFlags(version, in, &r);
  }
  if (in.framework == "torchtitan") CheckTorchtitan(in, &r);
  if (in.framework == "maxtext") CheckMaxText(version, in, &r);
  return out;
}

Config CanonicalConfig(std::string_view framework, const Config& config) {
  Config c = config;
  // arguments.py validate_args: "disable sequence parallelism when tp=1" (core_v0.8.0 through
  // core_v0.19.0): args.sequence_parallel = False.
  if (IsMegatron(framework) && GetInt(c, "tp", 1) == 1) {
    c["sequenceParallel"] = ParamValue::Bool(false);
  }
  // torchtitan reads pipeline_parallel_microbatch_size (default 1) only when it builds a
  // pipeline schedule.
  if (framework == "torchtitan" &&
      (GetInt(c, "pp", 1) <= 1 || GetInt(c, "ppMicrobatchSize", 1) == 1)) {
    c.erase("ppMicrobatchSize");
  }
  return c;
}

std::string CanonicalConfigKey(std::string_view framework, const Config& config) {
  return ConfigKey(CanonicalConfig(framework, config));
}

FlagValue MegatronVirtualPipelineFlag(const FrameworkVersion& version, int64_t vpp,
                                      int64_t layers_per_stage) {
  if (vpp <= 1) return {};
  // --num-virtual-stages-per-pipeline-rank appears in core_v0.11.0 arguments.py.
  if (version.AtLeast({0, 11})) return {"--num-virtual-stages-per-pipeline-rank", vpp};
  return {"--num-layers-per-virtual-pipeline-stage", layers_per_stage / vpp};
}

}  // namespace paratune
