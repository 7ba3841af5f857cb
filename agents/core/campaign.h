// The TuningCampaign spec of contract section 2 as a plain struct, and its parser. The parser
// accepts the object Kubernetes serves (JSON) or a YAML file a user wrote; both go through the
// same JSON path so the operator and the CLI agree on every default and every error. Errors are
// kInvalidArgument and name the field ("spec.budget.maxTrials: must be >= 1").
//
// This layer checks structure, types, enums and the search space. What needs the catalogs
// (is the preset known, does the config fit the devices) is checked by agents/model.
#ifndef PARATUNE_AGENTS_CORE_CAMPAIGN_H_
#define PARATUNE_AGENTS_CORE_CAMPAIGN_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "base/status.h"

namespace paratune {

// Model shape. Every field but `preset` is an override: unset fields come from the preset
// (agents/model fills them); a campaign without a preset must set the shape itself.
struct ModelSpec {
  std::string preset;
  std::optional<int64_t> num_layers;
  std::optional<int64_t> hidden_size;
  std::optional<int64_t> ffn_hidden_size;
  std::optional<int64_t> num_attention_heads;
  std::optional<int64_t> num_query_groups;
  std::optional<int64_t> vocab_size;
  std::optional<int64_t> num_experts;
  std::optional<int64_t> moe_top_k;
  std::optional<int64_t> moe_ffn_hidden_size;
  // Workload fields (contract section 10); unset: the preset's value (custom shapes: swiglu,
  // untied, hiddenSize / numAttentionHeads).
  std::string activation;  // "" | swiglu | gelu
  std::optional<bool> tied_embeddings;
  std::optional<int64_t> head_dim;

  // True when the campaign names a preset or gives a shape.
  bool Described() const { return !preset.empty() || num_layers || hidden_size; }
};

struct TrainingSpec {
  // megatron-lm | megatron-deepspeed | maxtext | torchtitan | transformers | custom
  std::string framework = "megatron-lm";
  int64_t seq_length = 4096;
  int64_t global_batch_size = 0;   // required
  std::string precision = "bf16";  // bf16 | fp16 | fp8
  // Attention kernels: flash (the framework's own fused kernel: cuDNN fused attention under
  // Transformer Engine >= 1.8, PyTorch SDPA's FlashAttention-2 under torchtitan, splash/flash under
  // MaxText) | flash2 (FlashAttention-2: Transformer Engine before v1.8 with flash-attn installed,
  // as in NeMo <= 24.07 containers) | cudnn (cuDNN fused attention / FlashAttention-3 class) |
  // unfused (materialized s x s scores, SC'21-era Megatron-LM).
  std::string attention = "flash";
  // Set when `flash` was resolved to the kernel a known version or image runs
  // (agents/core/framework_rules.h ResolveFlashKernel): the sentence saying why.
  std::string attention_source;
  // torchtitan profile (PyTorch FSDP2 stacks) only: the layers run Transformer Engine's kernels
  // (NeMo AutoModel `backend: {attn: te, linear: te, rms_norm: te, rope_fusion: true}`): cuDNN
  // attention unless `attention` says otherwise, and fused norms / RoPE.
  bool transformer_engine = false;
  // MoE token dispatch: alltoall (one copy per routed expert: Megatron-LM's alltoall dispatcher)
  // | deepep (DeepEP / Hybrid-EP: one copy per destination rank, per node across nodes).
  std::string moe_dispatcher = "alltoall";
  // MoE routing the run sees: learned (a trained router: a token's experts spread at random) |
  // fake-balanced (NeMo AutoModel's benchmark `fake_balanced_gate: true`: token t takes experts
  // t*k .. t*k+k-1 mod E, so its experts sit on as few ranks as the layout allows).
  std::string moe_routing = "learned";
  // Attention/hidden dropout probability; unset: the preset's (GPT-style presets drop out,
  // Llama-style ones do not). Only whether it is > 0 matters to the model (stored masks).
  std::optional<double> dropout;
  // spec.training.frameworkVersion (agents/core/framework_rules.h): the version whose rules and
  // flag names apply ("0.14.0" Megatron-core, "0.2.2" torchtitan, "2026-04-22" MaxText). Unset:
  // read from a known image of the trial template (then `framework_version_source` says which),
  // else "" (the newest rules).
  std::string framework_version;
  std::string framework_version_source;
};

struct HardwareSpec {
  std::string accelerator;  // catalog name, see agents/model
  int64_t nodes = 1;
  int64_t devices_per_node = 8;  // for TPUs: chips per host
  std::string tpu_topology;      // "4x4", "8x8x8"; TPU slices only
  // TPU slices per trial (multi-slice over DCN, issue 38): `tpuTopology` and `nodes` describe one
  // slice; the trial's JobSet runs one child Job per slice. Always 1 for GPUs.
  int64_t slices = 1;
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();
  // Where the trials run: "gke" adds GKE's node labels as default node selectors
  // (cloud.google.com/gke-accelerator, gke-tpu-accelerator, gke-tpu-topology) and places TPU
  // slices exclusively per node pool; "generic" adds none (nodeSelector alone picks nodes).
  // Unset: "gke" for TPU accelerators (they exist only on GKE), "generic" for GPUs.
  std::string platform;

  bool OnGke() const { return platform == "gke"; }

  bool IsTpu() const { return accelerator.rfind("tpu-", 0) == 0; }
  // Chips of one slice: the TPU topology's ("4x4" -> 16), or nodes * devicesPerNode; 0 when
  // the topology is malformed.
  int64_t SliceDevices() const;
  // Devices of the whole trial: SliceDevices() x slices.
  int64_t TotalDevices() const;
};

// spec.scheduling (issue 38): how a trial's pods are placed and restarted.
struct SchedulingSpec {
  // Kueue topology-aware scheduling: the node label of the topology level (e.g.
  // cloud.google.com/gce-topology-block) whose domain a multi-node trial's pods must share
  // (kueue.x-k8s.io/podset-required-topology) or should share (podset-preferred-topology).
  // "" (default): no topology request.
  std::string topology_level;
  bool topology_required = false;  // topologyPolicy: Required | Preferred (default)
  // The JobSet's failurePolicy.maxRestarts. Default 0: a failed trial is diagnosed, not rerun.
  int64_t max_restarts = 0;
  // The JobSet's startupPolicy.startupPolicyOrder: AnyOrder (JobSet's default) or InOrder.
  std::string startup_policy = "AnyOrder";
};

struct SearchParameter {
  std::string name;
  std::vector<ParamValue> values;  // distinct, in the order given
};

enum class ObjectiveMetric { kMfu, kTflopsPerDevice, kTokensPerSecondPerDevice, kStepTimeSeconds };

struct ObjectiveSpec {
  ObjectiveMetric metric = ObjectiveMetric::kMfu;
  double target = 0.0;  // 0: none
  // stepTimeSeconds is minimized, the others maximized.
  bool Maximize() const { return metric != ObjectiveMetric::kStepTimeSeconds; }
};
const char* ObjectiveMetricName(ObjectiveMetric m);

struct BudgetSpec {
  int64_t max_trials = 20;
  int64_t parallel_trials = 1;
  int64_t max_failed_trials = 8;
  int64_t trial_timeout_seconds = 1800;
  // Stop a running trial once its logged step times show it cannot beat the best (issue 13).
  bool early_stopping = true;
  // Devices x wall time of the trials' pods the campaign may spend, in hours; 0: no limit.
  double max_accelerator_hours = 0;
};

struct SecretKeyRef {
  std::string name;
  std::string key;
};

struct AgentsSpec {
  std::string engine = "builtin";  // builtin | llm | hybrid
  std::string llm_endpoint;
  std::string llm_model;
  SecretKeyRef llm_api_key;
  std::vector<std::string> knowledge_config_maps;
};

struct CampaignSpec {
  std::string name;        // metadata.name ("" when parsed from a bare spec)
  std::string namespace_;  // metadata.namespace
  ModelSpec model;
  TrainingSpec training;
  HardwareSpec hardware;
  std::vector<SearchParameter> search_space;
  std::optional<Config> baseline;
  ObjectiveSpec objective;
  BudgetSpec budget;
  AgentsSpec agents;
  nlohmann::json trial_template = nlohmann::json::object();
  std::string metrics_collector;  // defaults to the framework's name
  std::string message_pool_store = "configMap";
  std::string output_config_map;
  // spec.output.deleteWithCampaign: the published ConfigMap carries the campaign's
  // ownerReference (garbage-collected with it). Default false: it outlives the campaign.
  bool output_delete_with_campaign = false;
  // spec.queueName: the Kueue LocalQueue of the trials ("" none). Trial Jobs then carry
  // kueue.x-k8s.io/queue-name and are created suspended for Kueue to admit.
  std::string queue_name;
  SchedulingSpec scheduling;

  const SearchParameter* FindSearchParameter(const std::string& param) const;
  // True when every key of `c` is searched and every value is allowed.
  Status CheckInSearchSpace(const Config& c, const std::string& field) const;
  // Number of configurations in the cartesian product (saturates at INT64_MAX).
  int64_t SearchSpaceSize() const;
};

// Operator-wide defaults for what a campaign leaves empty (the Helm chart's llm.endpoint and
// llm.model, which the operator program reads from PARATUNE_LLM_ENDPOINT and PARATUNE_LLM_MODEL
// and passes to its reconcilers).
struct CampaignDefaults {
  std::string llm_endpoint;  // used when spec.agents.llm.endpoint is empty
  std::string llm_model;     // used when spec.agents.llm.model is empty
};

struct CampaignParseOptions {
  // A campaign to tune needs its model. `paratune propose` works from hardware, mesh and profile
  // alone, so it parses with this off: an absent or empty spec.model is then accepted and
  // ModelSpec::Described() is false.
  bool require_model = true;
  CampaignDefaults defaults;
};

// Parses a whole TuningCampaign object ({apiVersion, kind, metadata, spec}) or a bare spec
// object. Never throws.
Result<CampaignSpec> CampaignFromJson(const nlohmann::json& object,
                                      const CampaignParseOptions& options = {});
// Parses YAML text (one document or several; the TuningCampaign document is used).
Result<CampaignSpec> CampaignFromYaml(const std::string& text,
                                      const CampaignParseOptions& options = {});
// Reads and parses a YAML or JSON file.
Result<CampaignSpec> LoadCampaignFile(const std::string& path,
                                      const CampaignParseOptions& options = {});

// The workload section carried to trials as PARATUNE_WORKLOAD: model, training and hardware,
// camelCase, as in the spec. Every field the performance model reads (ResolveWorkload) is in it:
// agents/predict/planning_cache.h keys the shared model and search space on it.
nlohmann::json WorkloadJson(const CampaignSpec& spec);

// Parses "30m", "1h30m", "90s", "2h" or a bare number of seconds.
Result<int64_t> ParseDurationSeconds(const std::string& text, const std::string& field);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_CORE_CAMPAIGN_H_
