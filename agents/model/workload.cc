#include "agents/model/workload.h"

#include <algorithm>

#include "base/json_fields.h"

namespace paratune {

namespace {

std::string KnownPresetNames() {
  std::string s;
  for (const auto& m : ModelPresets()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

std::string KnownAcceleratorNames() {
  std::string s;
  for (const auto& a : Accelerators()) s += (s.empty() ? "" : ", ") + a.name;
  return s;
}

Result<ModelShape> ResolveModel(const ModelSpec& spec) {
  ModelShape m;
  if (!spec.preset.empty()) {
    const ModelShape* preset = FindModelPreset(spec.preset);
    if (preset == nullptr) {
      return Status::Invalid("spec.model.preset: unknown preset \"" + TextExcerpt(spec.preset) +
                             "\" (known: " + KnownPresetNames() + ")");
    }
    m = *preset;
  } else {
    m.name = "custom";
    m.source = "campaign spec";
  }
  auto set = [](const std::optional<int64_t>& v, int64_t* out) {
    if (v) *out = *v;
  };
  const bool hidden_changed = spec.hidden_size || spec.num_attention_heads;
  set(spec.num_layers, &m.num_layers);
  set(spec.hidden_size, &m.hidden_size);
  set(spec.ffn_hidden_size, &m.ffn_hidden_size);
  set(spec.num_attention_heads, &m.num_attention_heads);
  set(spec.num_query_groups, &m.num_query_groups);
  set(spec.vocab_size, &m.vocab_size);
  set(spec.num_experts, &m.num_experts);
  set(spec.moe_top_k, &m.moe_top_k);
  set(spec.moe_ffn_hidden_size, &m.moe_ffn_hidden_size);
  set(spec.head_dim, &m.head_dim);
  if (!spec.activation.empty()) m.swiglu = spec.activation == "swiglu";
  if (spec.tied_embeddings) m.tied_embeddings = *spec.tied_embeddings;
  if ((hidden_changed || spec.head_dim) && m.attention_params_override > 0) {
    m.attention_params_override = 0;
  }
  if (m.ffn_hidden_size == 0) m.ffn_hidden_size = 4 * m.hidden_size;
  if (m.num_query_groups == 0) m.num_query_groups = m.num_attention_heads;
  if (m.vocab_size == 0) m.vocab_size = 32000;
  if (m.num_attention_heads <= 0 || m.hidden_size <= 0 || m.num_layers <= 0) {
    return Status::Invalid("spec.model: numLayers, hiddenSize and numAttentionHeads must be > 0");
  }
  if (m.head_dim == 0 && m.hidden_size % m.num_attention_heads != 0) {
    return Status::Invalid("spec.model.hiddenSize: " + std::to_string(m.hidden_size) +
                           " is not divisible by numAttentionHeads " +
                           std::to_string(m.num_attention_heads));
  }
  if (m.num_attention_heads % m.num_query_groups != 0) {
    return Status::Invalid("spec.model.numQueryGroups: numAttentionHeads " +
                           std::to_string(m.num_attention_heads) + " is not divisible by " +
                           std::to_string(m.num_query_groups));
  }
  if (m.num_experts > 0) {
    if (m.moe_top_k == 0) m.moe_top_k = std::min<int64_t>(2, m.num_experts);
    if (m.moe_ffn_hidden_size == 0) m.moe_ffn_hidden_size = m.ffn_hidden_size;
    if (m.moe_top_k > m.num_experts) {
      return Status::Invalid("spec.model.moeTopK: " + std::to_string(m.moe_top_k) +
                             " exceeds numExperts " + std::to_string(m.num_experts));
    }
    m.num_dense_layers = std::min(m.num_dense_layers, m.num_layers);
  } else {
    m.moe_top_k = 0;
    m.num_dense_layers = 0;
  }
  return m;
}

Status ResolveHardware(const HardwareSpec& hw, Workload* w) {
  w->accel = FindAccelerator(hw.accelerator);
  if (w->accel == nullptr) {
    return Status::Invalid("spec.hardware.accelerator: unknown accelerator \"" + hw.accelerator +
                           "\" (known: " + KnownAcceleratorNames() + ")");
  }
  if (w->accel->tpu && !hw.tpu_topology.empty()) {
    const auto& valid = w->accel->tpu_topologies;
    if (std::find(valid.begin(), valid.end(), hw.tpu_topology) == valid.end()) {
      std::string list;
      for (const auto& t : valid) list += (list.empty() ? "" : ", ") + t;
      return Status::Invalid("spec.hardware.tpuTopology: \"" + hw.tpu_topology + "\" is not a " +
                             w->accel->name + " slice (valid: " + list + ")");
    }
  }
  if (!w->accel->tpu && !hw.tpu_topology.empty()) {
    return Status::Invalid("spec.hardware.tpuTopology: only for TPU accelerators");
  }
  w->devices = hw.TotalDevices();
  if (w->devices <= 0) {
    return Status::Invalid("spec.hardware.nodes: nodes x devicesPerNode must be > 0");
  }
  return Status::Ok();
}

}  // namespace

int64_t Workload::DevicesPerNode() const { return std::max<int64_t>(1, hardware.devices_per_node); }

Result<Workload> ResolveWorkload(const CampaignSpec& spec) {
  Workload w;
  auto model = ResolveModel(spec.model);
  if (!model.ok()) return model.status();
  w.model = std::move(model).value();
  w.training = spec.training;
  w.hardware = spec.hardware;
  if (spec.training.dropout) w.model.dropout = *spec.training.dropout > 0;
  PARATUNE_RETURN_IF_ERROR(ResolveHardware(spec.hardware, &w));
  if (!w.model.IsMoe()) {
    if (spec.training.moe_dispatcher != "alltoall") {
      return Status::Invalid("spec.training.moeDispatcher: " + spec.training.moe_dispatcher +
                             " dispatches MoE tokens; the model has no experts (numExperts)");
    }
    if (spec.training.moe_routing != "learned") {
      return Status::Invalid("spec.training.moeRouting: " + spec.training.moe_routing +
                             " routes MoE tokens; the model has no experts (numExperts)");
    }
  }
  if (w.accel->tpu && w.training.framework == "megatron-lm") w.training.framework = "maxtext";
  return w;
}

Result<Workload> WorkloadFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status::Invalid("PARATUNE_WORKLOAD: must be a JSON object");
  nlohmann::json spec = nlohmann::json::object();
  for (const char* k : {"model", "training", "hardware"}) {
    if (!j.contains(k))
      return Status::Invalid(std::string("PARATUNE_WORKLOAD.") + k + ": required");
    spec[k] = j.at(k);
  }
  // The campaign parser insists on a search space; the workload does not carry one.
  spec["searchSpace"] = {{"parameters", {{{"name", "mbs"}, {"values", {1}}}}}};
  auto campaign = CampaignFromJson(nlohmann::json{{"spec", spec}});
  if (!campaign.ok()) return campaign.status();
  return ResolveWorkload(*campaign);
}

}  // namespace paratune
