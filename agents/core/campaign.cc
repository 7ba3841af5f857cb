#include "agents/core/campaign.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "agents/core/framework_rules.h"
#include "base/json_fields.h"
#include "base/utf8.h"
#include "base/yaml.h"

namespace paratune {

namespace {

constexpr int64_t kMaxCount = 1 << 20;

// Limits on what a spec may hold, so a hostile object cannot make the operator allocate or
// recurse without bound (the API server itself accepts objects up to ~1.5 MiB).
constexpr int kMaxSpecDepth = 64;
constexpr size_t kMaxKeyBytes = 1024;
constexpr size_t kMaxStringBytes = 64 << 10;           // any string in the spec
constexpr size_t kMaxTemplateStringBytes = 256 << 10;  // a string in spec.trialTemplate (scripts)
constexpr size_t kMaxNameBytes = 253;                  // metadata.name/namespace (DNS subdomain)

// Walks `v` (at `path`, `depth` levels below the spec) and refuses nesting deeper than
// kMaxSpecDepth, keys longer than kMaxKeyBytes and strings longer than `max_string`, naming
// the field. The path is built only on the way back from an error.
Status CheckTree(const nlohmann::json& v, int depth, size_t max_string, std::string* where) {
  if (depth > kMaxSpecDepth) {
    return Status::Invalid("nested deeper than " + std::to_string(kMaxSpecDepth) + " levels");
  }
  if (v.is_string() && v.get_ref<const std::string&>().size() > max_string) {
    return Status::Invalid("a string of " + std::to_string(v.get_ref<const std::string&>().size()) +
                           " bytes; the limit is " + std::to_string(max_string));
  }
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      Status s = CheckTree(v[i], depth + 1, max_string, where);
      if (!s.ok()) {
        *where = "[" + std::to_string(i) + "]" + *where;
        return s;
      }
    }
  }
  if (v.is_object()) {
    for (const auto& [k, e] : v.items()) {
      if (k.size() > kMaxKeyBytes) {
        *where = "." + TextExcerpt(k, 40);
        return Status::Invalid("a key of " + std::to_string(k.size()) + " bytes; the limit is " +
                               std::to_string(kMaxKeyBytes));
      }
      const size_t limit =
          depth == 0 && k == "trialTemplate" ? kMaxTemplateStringBytes : max_string;
      Status s = CheckTree(e, depth + 1, limit, where);
      if (!s.ok()) {
        *where = "." + k + *where;
        return s;
      }
    }
  }
  return Status::Ok();
}

Status CheckSpecTree(const nlohmann::json& spec) {
  std::string where;
  Status s = CheckTree(spec, 0, kMaxStringBytes, &where);
  if (s.ok()) return s;
  return Status::Invalid("spec" + where + ": " + s.message());
}

// A JSON number a parameter value may hold: a float beyond int64 would make the integer
// conversion undefined, so it is refused here, naming the field.
Status CheckParamNumber(const nlohmann::json& v, const std::string& path) {
  if (v.is_number_float() && !(std::fabs(v.get<double>()) < 9.0e18)) {
    return Status::Invalid(path + ": " + JsonExcerpt(v) + " is out of range");
  }
  return Status::Ok();
}

// metadata.name or metadata.namespace: a string of at most kMaxNameBytes, or absent.
Status ReadMetadataString(const nlohmann::json& meta, const char* key, std::string* out) {
  if (!meta.contains(key) || meta[key].is_null()) return Status::Ok();
  const auto& v = meta[key];
  const std::string path = std::string("metadata.") + key;
  if (!v.is_string()) return Status::Invalid(path + ": must be a string, got " + JsonExcerpt(v));
  if (v.get_ref<const std::string&>().size() > kMaxNameBytes) {
    return Status::Invalid(path + ": longer than " + std::to_string(kMaxNameBytes) + " characters");
  }
  *out = v.get<std::string>();
  return Status::Ok();
}

Status ParseModel(const nlohmann::json& j, bool required, ModelSpec* m) {
  JsonFields f(j, "spec.model");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(
      f.CheckKnownKeys({"preset", "numLayers", "hiddenSize", "ffnHiddenSize", "numAttentionHeads",
                        "numQueryGroups", "vocabSize", "numExperts", "moeTopK", "moeFfnHiddenSize",
                        "activation", "tiedEmbeddings", "headDim"}));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("preset", &m->preset));
  PARATUNE_RETURN_IF_ERROR(f.ReadOptionalInt("numLayers", 1, 100000, &m->num_layers));
  PARATUNE_RETURN_IF_ERROR(f.ReadOptionalInt("hiddenSize", 1, 1 << 20, &m->hidden_size));
  PARATUNE_RETURN_IF_ERROR(f.ReadOptionalInt("ffnHiddenSize", 1, 1 << 22, &m->ffn_hidden_size));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadOptionalInt("numAttentionHeads", 1, 65536, &m->num_attention_heads));
  PARATUNE_RETURN_IF_ERROR(f.ReadOptionalInt("numQueryGroups", 1, 65536, &m->num_query_groups));
  PARATUNE_RETURN_IF_ERROR(f.ReadOptionalInt("vocabSize", 1, 1 << 24, &m->vocab_size));
  PARATUNE_RETURN_IF_ERROR(f.ReadOptionalInt("numExperts", 0, 65536, &m->num_experts));
  PARATUNE_RETURN_IF_ERROR(f.ReadOptionalInt("moeTopK", 1, 1024, &m->moe_top_k));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadOptionalInt("moeFfnHiddenSize", 1, 1 << 22, &m->moe_ffn_hidden_size));
  if (f.Has("activation")) {
    PARATUNE_RETURN_IF_ERROR(f.ReadEnum("activation", {"swiglu", "gelu"}, &m->activation));
  }
  if (f.Has("tiedEmbeddings")) {
    bool tied = false;
    PARATUNE_RETURN_IF_ERROR(f.ReadBool("tiedEmbeddings", &tied));
    m->tied_embeddings = tied;
  }
  PARATUNE_RETURN_IF_ERROR(f.ReadOptionalInt("headDim", 1, 65536, &m->head_dim));
  if (!required && !m->Described()) return Status::Ok();
  if (m->preset.empty() && (!m->num_layers || !m->hidden_size || !m->num_attention_heads)) {
    return Status::Invalid(
        "spec.model: set a preset, or numLayers, hiddenSize and numAttentionHeads");
  }
  return Status::Ok();
}

Status ParseTraining(const nlohmann::json& j, bool tpu, TrainingSpec* t) {
  JsonFields f(j, "spec.training");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys({"framework", "frameworkVersion", "seqLength",
                                             "globalBatchSize", "precision", "attention", "dropout",
                                             "transformerEngine", "moeDispatcher", "moeRouting"}));
  if (tpu) t->framework = "maxtext";
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum(
      "framework",
      {"megatron-lm", "megatron-deepspeed", "maxtext", "torchtitan", "transformers", "custom"},
      &t->framework));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("frameworkVersion", &t->framework_version));
  if (!t->framework_version.empty()) {
    auto v = ParseFrameworkVersion(t->framework_version, "spec.training.frameworkVersion");
    if (!v.ok()) return v.status();
    t->framework_version_source = "spec.training.frameworkVersion";
  }
  PARATUNE_RETURN_IF_ERROR(
      f.ReadEnum("attention", {"flash", "flash2", "cudnn", "unfused"}, &t->attention));
  if (tpu && (t->attention == "flash2" || t->attention == "cudnn")) {
    return Status::Invalid("spec.training.attention: " + t->attention +
                           " is a GPU kernel; TPU slices run flash (splash) or unfused");
  }
  PARATUNE_RETURN_IF_ERROR(f.ReadBool("transformerEngine", &t->transformer_engine));
  if (t->transformer_engine && t->framework != "torchtitan") {
    return Status::Invalid(
        "spec.training.transformerEngine: applies to framework torchtitan (PyTorch FSDP2 stacks "
        "such as NeMo AutoModel); megatron-lm always runs Transformer Engine, the others never");
  }
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("moeDispatcher", {"alltoall", "deepep"}, &t->moe_dispatcher));
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("moeRouting", {"learned", "fake-balanced"}, &t->moe_routing));
  if (f.Has("dropout")) {
    double p = 0;
    PARATUNE_RETURN_IF_ERROR(f.ReadDouble("dropout", 0.0, 0.999, &p));
    t->dropout = p;
  }
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("seqLength", 1, 1 << 24, &t->seq_length));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("globalBatchSize", 1, 1 << 24, &t->global_batch_size));
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("precision", {"bf16", "fp16", "fp8"}, &t->precision));
  if (t->framework == "megatron-deepspeed" && t->precision == "fp8") {
    return Status::Invalid(
        "spec.training.precision: megatron-deepspeed trains bf16 or fp16 (DeepSpeed's BF16 and "
        "FP16 optimizers), not fp8");
  }
  if (t->global_batch_size == 0) {
    return Status::Invalid("spec.training.globalBatchSize: required");
  }
  return Status::Ok();
}

Status ParseHardware(const nlohmann::json& j, HardwareSpec* h) {
  JsonFields f(j, "spec.hardware");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(
      f.CheckKnownKeys({"accelerator", "nodes", "devicesPerNode", "tpuTopology", "nodeSelector",
                        "tolerations", "platform", "slices"}));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("accelerator", &h->accelerator));
  if (h->accelerator.empty()) return Status::Invalid("spec.hardware.accelerator: required");
  PARATUNE_RETURN_IF_ERROR(f.ReadString("tpuTopology", &h->tpu_topology));
  if (h->IsTpu()) h->devices_per_node = 4;
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("nodes", 1, 100000, &h->nodes));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("devicesPerNode", 1, 64, &h->devices_per_node));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("slices", 1, 1024, &h->slices));
  if (!h->IsTpu() && h->slices != 1) {
    return Status::Invalid("spec.hardware.slices: only for TPU accelerators (slices over DCN)");
  }
  if (h->IsTpu() && !h->tpu_topology.empty()) {
    if (h->SliceDevices() == 0) {
      return Status::Invalid(
          "spec.hardware.tpuTopology: must look like \"4x4\" or \"8x8x8\", got \"" +
          h->tpu_topology + "\"");
    }
    if (!f.Has("nodes")) {
      h->nodes = std::max<int64_t>(1, h->SliceDevices() / h->devices_per_node);
    }
  }
  if (!h->IsTpu() && !h->tpu_topology.empty()) {
    return Status::Invalid("spec.hardware.tpuTopology: only for TPU accelerators");
  }
  h->platform = h->IsTpu() ? "gke" : "generic";
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("platform", {"gke", "generic"}, &h->platform));
  const auto& sel = f.Get("nodeSelector");
  if (!sel.is_null()) {
    if (!sel.is_object()) return Status::Invalid("spec.hardware.nodeSelector: must be a map");
    for (const auto& [k, v] : sel.items()) {
      if (!v.is_string()) {
        return Status::Invalid("spec.hardware.nodeSelector." + k + ": must be a string");
      }
      h->node_selector[k] = v.get<std::string>();
    }
  }
  const auto& tol = f.Get("tolerations");
  if (!tol.is_null()) {
    if (!tol.is_array()) return Status::Invalid("spec.hardware.tolerations: must be a list");
    h->tolerations = tol;
  }
  return Status::Ok();
}

Status ParseSearchParameter(const nlohmann::json& p, const std::string& path,
                            SearchParameter* out) {
  JsonFields f(p, path);
  if (!p.is_object()) return Status::Invalid(path + ": must be {name, values}");
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys({"name", "values"}));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("name", &out->name));
  const ParamInfo* info = FindParameter(out->name);
  if (info == nullptr) {
    std::string known;
    for (const auto& k : KnownParameters()) known += (known.empty() ? "" : ", ") + k.name;
    return Status::Invalid(path + ".name: unknown parameter \"" + TextExcerpt(out->name) +
                           "\" (known: " + known + ")");
  }
  const auto& values = f.Get("values");
  if (!values.is_array() || values.empty()) {
    return Status::Invalid(path + ".values: must be a non-empty list");
  }
  if (values.size() > 4096) return Status::Invalid(path + ".values: more than 4096 values");
  std::set<ParamValue> seen;  // duplicates in O(n log n): a list may hold 4096 values
  for (size_t i = 0; i < values.size(); ++i) {
    std::string vp = path + ".values[" + std::to_string(i) + "]";
    PARATUNE_RETURN_IF_ERROR(CheckParamNumber(values[i], vp));
    auto v = ParseParamValue(*info, values[i], vp);
    if (!v.ok()) return v.status();
    if (info->type == ParamType::kInt && v->AsInt() < 1 && out->name != "recomputeLayers") {
      return Status::Invalid(vp + ": " + out->name + " must be >= 1");
    }
    if (!seen.insert(*v).second) {
      return Status::Invalid(vp + ": duplicate value " + v->ToString());
    }
    out->values.push_back(*v);
  }
  return Status::Ok();
}

Status ParseSearchSpace(const nlohmann::json& j, std::vector<SearchParameter>* out) {
  JsonFields f(j, "spec.searchSpace");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys({"parameters"}));
  const auto& params = f.Get("parameters");
  if (!params.is_array() || params.empty()) {
    return Status::Invalid("spec.searchSpace.parameters: must list at least one parameter");
  }
  if (params.size() > 64) {
    return Status::Invalid("spec.searchSpace.parameters: more than 64 parameters");
  }
  for (size_t i = 0; i < params.size(); ++i) {
    SearchParameter p;
    std::string path = "spec.searchSpace.parameters[" + std::to_string(i) + "]";
    PARATUNE_RETURN_IF_ERROR(ParseSearchParameter(params[i], path, &p));
    for (const auto& seen : *out) {
      if (seen.name == p.name) {
        return Status::Invalid(path + ".name: \"" + p.name + "\" is listed twice");
      }
    }
    out->push_back(std::move(p));
  }
  return Status::Ok();
}

Status ParseObjective(const nlohmann::json& j, ObjectiveSpec* o) {
  JsonFields f(j, "spec.objective");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys({"metric", "target"}));
  std::string metric = "mfu";
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum(
      "metric", {"mfu", "tflopsPerDevice", "tokensPerSecondPerDevice", "stepTimeSeconds"},
      &metric));
  if (metric == "mfu") o->metric = ObjectiveMetric::kMfu;
  if (metric == "tflopsPerDevice") o->metric = ObjectiveMetric::kTflopsPerDevice;
  if (metric == "tokensPerSecondPerDevice") o->metric = ObjectiveMetric::kTokensPerSecondPerDevice;
  if (metric == "stepTimeSeconds") o->metric = ObjectiveMetric::kStepTimeSeconds;
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("target", 0.0, 1e12, &o->target));
  if (o->metric == ObjectiveMetric::kMfu && o->target > 1.0) {
    return Status::Invalid("spec.objective.target: an mfu target is a fraction in [0, 1]");
  }
  return Status::Ok();
}

Status ParseBudget(const nlohmann::json& j, BudgetSpec* b) {
  JsonFields f(j, "spec.budget");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(
      f.CheckKnownKeys({"maxTrials", "parallelTrials", "maxFailedTrials", "trialTimeout",
                        "earlyStopping", "maxAcceleratorHours"}));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("maxTrials", 1, 10000, &b->max_trials));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("parallelTrials", 1, 256, &b->parallel_trials));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("maxFailedTrials", 1, 10000, &b->max_failed_trials));
  PARATUNE_RETURN_IF_ERROR(f.ReadBool("earlyStopping", &b->early_stopping));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("maxAcceleratorHours", 0, 1e9, &b->max_accelerator_hours));
  const auto& timeout = f.Get("trialTimeout");
  if (!timeout.is_null()) {
    if (!timeout.is_string() && !timeout.is_number_integer()) {
      return Status::Invalid(
          "spec.budget.trialTimeout: must be a duration like 30m, 1h30m or "
          "90s, got " +
          JsonExcerpt(timeout));
    }
    std::string text = timeout.is_string() ? timeout.get<std::string>() : timeout.dump();
    auto secs = ParseDurationSeconds(text, "spec.budget.trialTimeout");
    if (!secs.ok()) return secs.status();
    b->trial_timeout_seconds = *secs;
  }
  return Status::Ok();
}

Status ParseAgents(const nlohmann::json& j, const CampaignDefaults& defaults, AgentsSpec* a) {
  JsonFields f(j, "spec.agents");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys({"engine", "llm", "knowledgeConfigMaps"}));
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("engine", {"builtin", "llm", "hybrid"}, &a->engine));
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("knowledgeConfigMaps", &a->knowledge_config_maps));
  JsonFields llm(f.Get("llm"), "spec.agents.llm");
  PARATUNE_RETURN_IF_ERROR(llm.CheckObject());
  PARATUNE_RETURN_IF_ERROR(llm.CheckKnownKeys({"endpoint", "model", "apiKeySecretRef"}));
  PARATUNE_RETURN_IF_ERROR(llm.ReadString("endpoint", &a->llm_endpoint));
  PARATUNE_RETURN_IF_ERROR(llm.ReadString("model", &a->llm_model));
  if (a->llm_endpoint.empty()) a->llm_endpoint = defaults.llm_endpoint;
  if (a->llm_model.empty()) a->llm_model = defaults.llm_model;
  JsonFields ref(llm.Get("apiKeySecretRef"), "spec.agents.llm.apiKeySecretRef");
  PARATUNE_RETURN_IF_ERROR(ref.CheckObject());
  PARATUNE_RETURN_IF_ERROR(ref.CheckKnownKeys({"name", "key"}));
  PARATUNE_RETURN_IF_ERROR(ref.ReadString("name", &a->llm_api_key.name));
  PARATUNE_RETURN_IF_ERROR(ref.ReadString("key", &a->llm_api_key.key));
  if (a->engine != "builtin" && a->llm_endpoint.empty()) {
    return Status::Invalid("spec.agents.llm.endpoint: required when engine is " + a->engine +
                           " (or set the operator's default, PARATUNE_LLM_ENDPOINT)");
  }
  if (!a->llm_endpoint.empty() && a->llm_endpoint.rfind("http://", 0) != 0 &&
      a->llm_endpoint.rfind("https://", 0) != 0) {
    return Status::Invalid("spec.agents.llm.endpoint: must start with http:// or https://");
  }
  return Status::Ok();
}

Status ParseBaseline(const nlohmann::json& j, CampaignSpec* c) {
  if (j.is_null()) return Status::Ok();
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      PARATUNE_RETURN_IF_ERROR(CheckParamNumber(v, "spec.baseline." + k));
    }
  }
  auto cfg = ConfigFromJson(j, "spec.baseline");
  if (!cfg.ok()) return cfg.status();
  PARATUNE_RETURN_IF_ERROR(c->CheckInSearchSpace(*cfg, "spec.baseline"));
  c->baseline = *cfg;
  return Status::Ok();
}

Status ParseOutputs(const JsonFields& spec, CampaignSpec* c) {
  JsonFields metrics(spec.Get("metrics"), "spec.metrics");
  PARATUNE_RETURN_IF_ERROR(metrics.CheckObject());
  PARATUNE_RETURN_IF_ERROR(metrics.CheckKnownKeys({"collector"}));
  // Custom jobs report JSON lines; the Hugging Face Trainer's own output (progress bar, log
  // dicts, train_runtime summary) is read by hf-trainer, which reads JSON lines too.
  c->metrics_collector = c->training.framework;
  if (c->training.framework == "custom") c->metrics_collector = "json";
  if (c->training.framework == "transformers") c->metrics_collector = "hf-trainer";
  if (c->training.framework == "nemo") c->metrics_collector = "megatron-bridge";
  // Megatron-DeepSpeed prints Megatron-LM's log lines (seconds instead of milliseconds and
  // "TFLOPs:", which the megatron-lm collector reads too).
  if (c->training.framework == "megatron-deepspeed") c->metrics_collector = "megatron-lm";
  PARATUNE_RETURN_IF_ERROR(metrics.ReadEnum(
      "collector",
      {"megatron-lm", "megatron-bridge", "maxtext", "torchtitan", "hf-trainer", "json"},
      &c->metrics_collector));
  JsonFields pool(spec.Get("messagePool"), "spec.messagePool");
  PARATUNE_RETURN_IF_ERROR(pool.CheckObject());
  PARATUNE_RETURN_IF_ERROR(pool.CheckKnownKeys({"store"}));
  PARATUNE_RETURN_IF_ERROR(pool.ReadEnum("store", {"configMap"}, &c->message_pool_store));
  JsonFields out(spec.Get("output"), "spec.output");
  PARATUNE_RETURN_IF_ERROR(out.CheckObject());
  PARATUNE_RETURN_IF_ERROR(out.CheckKnownKeys({"configMapName", "deleteWithCampaign"}));
  PARATUNE_RETURN_IF_ERROR(out.ReadString("configMapName", &c->output_config_map));
  PARATUNE_RETURN_IF_ERROR(out.ReadBool("deleteWithCampaign", &c->output_delete_with_campaign));
  const auto& tmpl = spec.Get("trialTemplate");
  if (!tmpl.is_null() && !tmpl.is_object()) {
    return Status::Invalid("spec.trialTemplate: must be a batch/v1 JobTemplateSpec object");
  }
  if (tmpl.is_object()) c->trial_template = tmpl;
  return Status::Ok();
}

// spec.queueName becomes the value of the kueue.x-k8s.io/queue-name label: a label value
// (at most 63 characters, alphanumerics, '-', '_', '.', alphanumeric at both ends).
Status ParseQueueName(const JsonFields& spec, std::string* out) {
  PARATUNE_RETURN_IF_ERROR(spec.ReadString("queueName", out));
  const std::string& q = *out;
  if (q.empty()) return Status::Ok();
  auto alnum = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; };
  bool ok = q.size() <= 63 && alnum(q.front()) && alnum(q.back());
  for (char ch : q) ok = ok && (alnum(ch) || ch == '-' || ch == '_' || ch == '.');
  if (!ok) {
    return Status::Invalid(
        "spec.queueName: must be a Kueue LocalQueue name usable as a label value (at most 63 "
        "characters: letters, digits, '-', '_', '.'), got \"" +
        TextExcerpt(q) + "\"");
  }
  return Status::Ok();
}

// spec.scheduling (issue 38). The level is a node label key (Kueue's Topology levels are
// node labels, kueue.x-k8s.io/v1beta1 Topology spec.levels[].nodeLabel).
Status ParseScheduling(const nlohmann::json& j, SchedulingSpec* s) {
  if (j.is_null()) return Status::Ok();
  JsonFields f(j, "spec.scheduling");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(
      f.CheckKnownKeys({"topologyLevel", "topologyPolicy", "maxRestarts", "startupPolicy"}));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("topologyLevel", &s->topology_level));
  for (char ch : s->topology_level) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && std::strchr("-_./", ch) == nullptr) {
      return Status::Invalid("spec.scheduling.topologyLevel: must be a node label key, got \"" +
                             TextExcerpt(s->topology_level) + "\"");
    }
  }
  std::string policy = "Preferred";
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("topologyPolicy", {"Required", "Preferred"}, &policy));
  s->topology_required = policy == "Required";
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("maxRestarts", 0, 100, &s->max_restarts));
  return f.ReadEnum("startupPolicy", {"AnyOrder", "InOrder"}, &s->startup_policy);
}

Status ParseSpec(const nlohmann::json& j, const CampaignParseOptions& options, CampaignSpec* c) {
  JsonFields f(j, "spec");
  if (!j.is_object()) return Status::Invalid("spec: required, must be an object");
  PARATUNE_RETURN_IF_ERROR(CheckSpecTree(j));
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys(
      {"model", "training", "hardware", "searchSpace", "baseline", "objective", "budget", "agents",
       "trialTemplate", "metrics", "messagePool", "output", "queueName", "scheduling"}));
  PARATUNE_RETURN_IF_ERROR(ParseModel(f.Get("model"), options.require_model, &c->model));
  PARATUNE_RETURN_IF_ERROR(ParseHardware(f.Get("hardware"), &c->hardware));
  PARATUNE_RETURN_IF_ERROR(ParseTraining(f.Get("training"), c->hardware.IsTpu(), &c->training));
  PARATUNE_RETURN_IF_ERROR(ParseSearchSpace(f.Get("searchSpace"), &c->search_space));
  PARATUNE_RETURN_IF_ERROR(ParseBaseline(f.Get("baseline"), c));
  for (size_t i = 0; i < c->search_space.size(); ++i) {
    PARATUNE_RETURN_IF_ERROR(
        CheckParameterApplies(c->training.framework, c->search_space[i].name,
                              "spec.searchSpace.parameters[" + std::to_string(i) + "].name"));
  }
  PARATUNE_RETURN_IF_ERROR(ParseObjective(f.Get("objective"), &c->objective));
  PARATUNE_RETURN_IF_ERROR(ParseBudget(f.Get("budget"), &c->budget));
  PARATUNE_RETURN_IF_ERROR(ParseAgents(f.Get("agents"), options.defaults, &c->agents));
  PARATUNE_RETURN_IF_ERROR(ParseQueueName(f, &c->queue_name));
  PARATUNE_RETURN_IF_ERROR(ParseScheduling(f.Get("scheduling"), &c->scheduling));
  PARATUNE_RETURN_IF_ERROR(ParseOutputs(f, c));
  const std::string image = TemplateImage(c->trial_template);
  if (c->training.framework_version.empty()) {  // the version of a known image, if any
    const FrameworkVersion v = VersionFromImage(c->training.framework, image);
    c->training.framework_version = v.text;
    c->training.framework_version_source = v.source;
  }
  if (c->training.attention == "flash") {  // the framework's own kernel: this version's, image's
    const FlashKernel k =
        ResolveFlashKernel(c->training.framework, c->training.framework_version, image);
    if (!k.kernel.empty()) {
      c->training.attention = k.kernel;
      c->training.attention_source = k.reason;
    }
  }
  return Status::Ok();
}

}  // namespace

int64_t HardwareSpec::TotalDevices() const { return SliceDevices() * std::max<int64_t>(1, slices); }

int64_t HardwareSpec::SliceDevices() const {
  if (!IsTpu() || tpu_topology.empty()) return nodes * devices_per_node;
  int64_t product = 1;
  std::stringstream ss(tpu_topology);
  std::string part;
  int dims = 0;
  while (std::getline(ss, part, 'x')) {
    if (part.empty() || part.size() > 4 ||
        part.find_first_not_of("0123456789") != std::string::npos) {
      return 0;
    }
    int64_t d = std::stoll(part);
    if (d < 1) return 0;
    product *= d;
    ++dims;
  }
  return (dims == 2 || dims == 3) ? product : 0;
}

const char* ObjectiveMetricName(ObjectiveMetric m) {
  switch (m) {
    case ObjectiveMetric::kMfu:
      return "mfu";
    case ObjectiveMetric::kTflopsPerDevice:
      return "tflopsPerDevice";
    case ObjectiveMetric::kTokensPerSecondPerDevice:
      return "tokensPerSecondPerDevice";
    case ObjectiveMetric::kStepTimeSeconds:
      return "stepTimeSeconds";
  }
  return "mfu";
}

const SearchParameter* CampaignSpec::FindSearchParameter(const std::string& param) const {
  for (const auto& p : search_space) {
    if (p.name == param) return &p;
  }
  return nullptr;
}

Status CampaignSpec::CheckInSearchSpace(const Config& c, const std::string& field) const {
  for (const auto& [k, v] : c) {
    const SearchParameter* p = FindSearchParameter(k);
    if (p == nullptr) {
      return Status::Invalid(field + "." + k + ": \"" + k + "\" is not in spec.searchSpace");
    }
    bool allowed = false;
    for (const auto& a : p->values) allowed = allowed || a == v;
    if (!allowed) {
      std::string list;
      for (const auto& a : p->values) list += (list.empty() ? "" : ", ") + a.ToString();
      return Status::Invalid(field + "." + k + ": " + v.ToString() +
                             " is outside the search space [" + list + "]");
    }
  }
  return Status::Ok();
}

int64_t CampaignSpec::SearchSpaceSize() const {
  int64_t n = 1;
  for (const auto& p : search_space) {
    int64_t k = static_cast<int64_t>(p.values.size());
    if (n > INT64_MAX / k) return INT64_MAX;
    n *= k;
  }
  return n;
}

Result<CampaignSpec> CampaignFromJson(const nlohmann::json& object,
                                      const CampaignParseOptions& options) {
  if (!object.is_object()) return Status::Invalid("campaign: must be an object");
  CampaignSpec c;
  const nlohmann::json* spec = &object;
  if (object.contains("spec") || object.contains("kind")) {
    std::string kind = object.contains("kind") && object["kind"].is_string()
                           ? object["kind"].get<std::string>()
                           : "TuningCampaign";
    if (kind != "TuningCampaign") {
      return Status::Invalid("kind: expected TuningCampaign, got \"" + TextExcerpt(kind) + "\"");
    }
    if (object.contains("metadata") && object["metadata"].is_object()) {
      const auto& meta = object["metadata"];
      PARATUNE_RETURN_IF_ERROR(ReadMetadataString(meta, "name", &c.name));
      PARATUNE_RETURN_IF_ERROR(ReadMetadataString(meta, "namespace", &c.namespace_));
    }
    if (!object.contains("spec")) return Status::Invalid("spec: required");
    spec = &object.at("spec");
  }
  try {
    Status s = ParseSpec(*spec, options, &c);
    if (!s.ok()) return s;
  } catch (const std::exception& e) {
    return Status::Invalid(std::string("spec: ") + e.what());
  }
  return c;
}

Result<CampaignSpec> CampaignFromYaml(const std::string& text,
                                      const CampaignParseOptions& options) {
  auto j = YamlToJson(text);
  if (!j.ok()) return j.status();
  if (j->is_array()) {
    for (const auto& doc : *j) {
      if (doc.is_object() && doc.contains("kind") && doc["kind"] == "TuningCampaign") {
        return CampaignFromJson(doc, options);
      }
    }
    return Status::Invalid("kind: no TuningCampaign document in the file");
  }
  return CampaignFromJson(*j, options);
}

Result<CampaignSpec> LoadCampaignFile(const std::string& path,
                                      const CampaignParseOptions& options) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read campaign file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > (8 << 20)) return Status::Invalid(path + ": larger than 8 MiB");
  auto c = CampaignFromYaml(ss.str(), options);  // YAML is a superset of JSON.
  if (!c.ok()) return c.status().WithPrefix(path);
  return c;
}

nlohmann::json WorkloadJson(const CampaignSpec& spec) {
  nlohmann::json model = nlohmann::json::object();
  const ModelSpec& m = spec.model;
  if (!m.preset.empty()) model["preset"] = m.preset;
  auto put = [&](const char* k, const std::optional<int64_t>& v) {
    if (v) model[k] = *v;
  };
  put("numLayers", m.num_layers);
  put("hiddenSize", m.hidden_size);
  put("ffnHiddenSize", m.ffn_hidden_size);
  put("numAttentionHeads", m.num_attention_heads);
  put("numQueryGroups", m.num_query_groups);
  put("vocabSize", m.vocab_size);
  put("numExperts", m.num_experts);
  put("moeTopK", m.moe_top_k);
  put("moeFfnHiddenSize", m.moe_ffn_hidden_size);
  put("headDim", m.head_dim);
  if (!m.activation.empty()) model["activation"] = m.activation;
  if (m.tied_embeddings) model["tiedEmbeddings"] = *m.tied_embeddings;
  const TrainingSpec& t = spec.training;
  const HardwareSpec& h = spec.hardware;
  nlohmann::json hw = {
      {"accelerator", h.accelerator}, {"nodes", h.nodes}, {"devicesPerNode", h.devices_per_node}};
  if (!h.tpu_topology.empty()) hw["tpuTopology"] = h.tpu_topology;
  if (h.slices > 1) hw["slices"] = h.slices;
  nlohmann::json training = {{"framework", t.framework},
                             {"seqLength", t.seq_length},
                             {"globalBatchSize", t.global_batch_size},
                             {"precision", t.precision},
                             {"attention", t.attention}};
  if (t.dropout) training["dropout"] = *t.dropout;
  if (t.transformer_engine) training["transformerEngine"] = true;
  if (t.moe_dispatcher != "alltoall") training["moeDispatcher"] = t.moe_dispatcher;
  if (t.moe_routing != "learned") training["moeRouting"] = t.moe_routing;
  if (!t.framework_version.empty()) training["frameworkVersion"] = t.framework_version;
  return {{"model", model}, {"training", training}, {"hardware", hw}};
}

Result<int64_t> ParseDurationSeconds(const std::string& text, const std::string& field) {
  if (text.empty()) return Status::Invalid(field + ": empty duration");
  int64_t total = 0;
  int64_t cur = 0;
  bool digits = false;
  for (char ch : text) {
    if (ch >= '0' && ch <= '9') {
      cur = cur * 10 + (ch - '0');
      digits = true;
      if (cur > 100000000) return Status::Invalid(field + ": duration too long");
      continue;
    }
    int64_t unit = ch == 'h' ? 3600 : ch == 'm' ? 60 : ch == 's' ? 1 : 0;
    if (unit == 0 || !digits) {
      return Status::Invalid(field + ": must look like 30m, 1h30m or 90s, got \"" +
                             TextExcerpt(text) + "\"");
    }
    total += cur * unit;
    cur = 0;
    digits = false;
  }
  total += cur;  // a bare number counts as seconds
  if (total < 1) return Status::Invalid(field + ": must be at least 1s");
  return total;
}

}  // namespace paratune
