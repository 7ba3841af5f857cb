// Framework rules by version (issue 35): which framework version a campaign's trials run
// (spec.training.frameworkVersion, or read from a known image tag), the launch-time checks that
// version enforces (a candidate it would refuse is rejected before launch, the rule named), the
// canonical form of a configuration (two candidates the framework runs identically are one) and
// the flag a parameter maps to where the name or meaning changed between versions.
//
// Every rule names the file and the tag or commit of the framework source that enforces it; the
// table of images and versions names the release notes it comes from. docs/api.md section 3
// lists the rules for users. Pure functions over plain values: thread-safe.
#ifndef PARATUNE_AGENTS_CORE_FRAMEWORK_RULES_H_
#define PARATUNE_AGENTS_CORE_FRAMEWORK_RULES_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "agents/core/config.h"
#include "base/status.h"

namespace paratune {

// A framework version as numbers compared left to right: Megatron-core "0.8" -> {0, 8},
// torchtitan "0.2.2" -> {0, 2, 2}, MaxText (no releases: the date of the checkout or image)
// "2026-04-22" -> {2026, 4, 22}. Empty parts: unknown; then a version-dependent rule refuses a
// candidate only where every version does (no candidate some version runs is kept from running).
struct FrameworkVersion {
  std::vector<int> parts;
  std::string text;    // as written or derived ("0.8", "core_v0.14.0", "2026-04-22")
  std::string source;  // "spec.training.frameworkVersion", "image nvcr.io/nvidia/nemo:24.07 ..."

  bool known() const { return !parts.empty(); }
  // True when known and >= the given version; also true for unknown versions.
  bool AtLeast(std::vector<int> v) const;
  // True only when known and older than `v`.
  bool Before(std::vector<int> v) const { return known() && !AtLeast(std::move(v)); }
};

// Parses "0.8", "0.14.0", "core_v0.14.0", "core_r0.8.0", "v0.2.2", "2026-04-22". `field` names
// the place for the error.
Result<FrameworkVersion> ParseFrameworkVersion(std::string_view text, const std::string& field);

// The version a known image carries for `framework` ("megatron-lm": the Megatron-core in
// NVIDIA's NeMo container), or an unknown version when the image is not in the table.
FrameworkVersion VersionFromImage(std::string_view framework, std::string_view image);

// What `attention: flash` (the framework's own fused kernel) is for this framework, version and
// trial image, when they decide it: `kernel` "flash2" or "cudnn" with the sentence why, or an
// empty kernel (the profile's default: cuDNN under Transformer Engine, FlashAttention-2 under
// torchtitan's SDPA of unknown or older versions, splash under MaxText).
//  - Megatron-LM in a NeMo 24.05 / 24.07 image: Transformer Engine 1.6.0.dev0 / 1.8.0.dev0, before
//    v1.8, ranks flash-attn's FlashAttention-2 before cuDNN's fused attention -> flash2.
//  - torchtitan >= 0.2.0: its ScaledDotProductAttention ranks SDPBackend.CUDNN_ATTENTION first
//    (torchtitan/models/attention.py at v0.2.0; v0.1.0 did so on B200 only) -> cudnn.
struct FlashKernel {
  std::string kernel;
  std::string reason;
};
FlashKernel ResolveFlashKernel(std::string_view framework, std::string_view version,
                               std::string_view image);

// The first container image of a JobTemplateSpec ("" when none).
std::string TemplateImage(const nlohmann::json& trial_template);

// The version the trials run: `explicit_version` when set (parsed; errors name
// spec.training.frameworkVersion), else the version of the template's image, else unknown.
Result<FrameworkVersion> ResolveFrameworkVersion(std::string_view framework,
                                                 std::string_view explicit_version,
                                                 const nlohmann::json& trial_template);

// Parameters of one framework only: dpShard and dpReplicate are torchtitan's data-parallel split,
// ppMicrobatchSize its pipeline micro-batch (docs/api.md section 3). kInvalidArgument naming
// `field` when `name` does not apply.
Status CheckParameterApplies(std::string_view framework, std::string_view name,
                             const std::string& field);

// What the rules read: effective values, defaults filled the way the framework fills them
// (agents/model's ParallelPlan provides them).
struct RuleInputs {
  std::string framework;  // spec.training.framework
  int64_t devices = 1, num_layers = 1, global_batch_size = 1;
  int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, mbs = 1, dp = 1, num_microbatches = 1;
  bool sequence_parallel = false, distributed_optimizer = false, overlap_grad_reduce = false,
       overlap_param_gather = false;
  bool first_stage_layers_set = false, last_stage_layers_set = false;
  // torchtitan: data_parallel_shard_degree (-1: fill) and data_parallel_replicate_degree.
  int64_t dp_shard = -1, dp_replicate = 1;
  // torchtitan: pipeline_parallel_microbatch_size.
  int64_t pp_microbatch = 1;
  // MaxText.
  int64_t ici_sequence = 1;
};

struct RuleViolation {
  std::string rule;      // "megatron-overlap-param-gather"
  std::string sentence;  // for people, names the keys
  std::vector<std::string> keys;
  std::string framework_error;  // what the framework prints
  std::string source;           // file and tag/commit enforcing it
};

// Every rule of `version` that `in` breaks (empty: the framework would launch it).
std::vector<RuleViolation> CheckFrameworkRules(const FrameworkVersion& version,
                                               const RuleInputs& in);

// The configuration as the framework runs it, for duplicate detection: Megatron-LM turns
// sequence parallelism off at tp 1, so sequenceParallel is false when tp is 1 (a config without
// tp has tp 1). Other frameworks: unchanged.
Config CanonicalConfig(std::string_view framework, const Config& config);
// ConfigKey(CanonicalConfig(...)).
std::string CanonicalConfigKey(std::string_view framework, const Config& config);

// The Megatron-LM flag for the contract's vpp (virtual pipeline chunks per stage): from core
// 0.11 "--num-virtual-stages-per-pipeline-rank vpp"; before, only
// "--num-layers-per-virtual-pipeline-stage (layers per stage / vpp)". Empty flag for vpp 1.
struct FlagValue {
  std::string flag;
  int64_t value = 0;
};
FlagValue MegatronVirtualPipelineFlag(const FrameworkVersion& version, int64_t vpp,
                                      int64_t layers_per_stage);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_CORE_FRAMEWORK_RULES_H_
