#include "agents/core/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace paratune {

ParamValue ParamValue::Int(int64_t v) {
  ParamValue p;
  p.type_ = ParamType::kInt;
  p.int_ = v;
  return p;
}

ParamValue ParamValue::Bool(bool v) {
  ParamValue p;
  p.type_ = ParamType::kBool;
  p.int_ = v ? 1 : 0;
  return p;
}

ParamValue ParamValue::Enum(std::string v) {
  ParamValue p;
  p.type_ = ParamType::kEnum;
  p.str_ = std::move(v);
  return p;
}

std::string ParamValue::ToString() const {
  switch (type_) {
    case ParamType::kInt:
      return std::to_string(int_);
    case ParamType::kBool:
      return int_ ? "true" : "false";
    case ParamType::kEnum:
      return str_;
  }
  return "";
}

nlohmann::json ParamValue::ToJson() const {
  switch (type_) {
    case ParamType::kInt:
      return int_;
    case ParamType::kBool:
      return int_ != 0;
    case ParamType::kEnum:
      return str_;
  }
  return nullptr;
}

bool ParamValue::operator<(const ParamValue& o) const {
  if (type_ != o.type_) return type_ < o.type_;
  if (int_ != o.int_) return int_ < o.int_;
  return str_ < o.str_;
}

const std::vector<ParamInfo>& KnownParameters() {
  using T = ParamType;
  static const std::vector<ParamInfo> kParams = {
      {"tp", T::kInt, {}, false, "tensor-parallel size"},
      {"pp", T::kInt, {}, false, "pipeline-parallel size"},
      {"vpp", T::kInt, {}, false, "virtual pipeline chunks per stage (interleaved 1F1B)"},
      {"cp", T::kInt, {}, false, "context-parallel size"},
      {"ep", T::kInt, {}, false, "expert-parallel size"},
      {"mbs", T::kInt, {}, false, "micro-batch size"},
      {"recompute", T::kEnum, {"none", "selective", "full"}, false, "activation recomputation"},
      {"recomputeLayers", T::kInt, {}, false, "layers per stage recomputed under full recompute"},
      {"sequenceParallel", T::kBool, {}, false, "Megatron sequence parallelism (needs tp > 1)"},
      {"distributedOptimizer", T::kBool, {}, false, "shard optimizer states over data parallel"},
      {"overlapGradReduce", T::kBool, {}, false, "overlap gradient reduce-scatter with backward"},
      {"overlapParamGather", T::kBool, {}, false, "overlap parameter all-gather with forward"},
      {"fusedCrossEntropy", T::kBool, {}, false, "fused vocab-parallel cross entropy"},
      {"tpCommOverlap",
       T::kBool,
       {},
       false,
       "overlap TP collectives with GEMMs (Megatron --tp-comm-overlap, torchtitan AsyncTP)"},
      {"torchCompile", T::kBool, {}, false, "torch.compile the model (torchtitan compile)"},
      {"firstPipelineStageLayers", T::kInt, {}, false, "layers on the first pipeline stage"},
      {"lastPipelineStageLayers", T::kInt, {}, false, "layers on the last pipeline stage"},
      // torchtitan's data-parallel split (docs/api.md section 3): FSDP shard degree
      // (--parallelism.data_parallel_shard_degree, -1: the rest of the GPUs) and replicas
      // (--parallelism.data_parallel_replicate_degree, HSDP/DDP).
      {"dpShard", T::kInt, {}, false, "torchtitan FSDP shard degree (-1: the remaining GPUs)"},
      {"dpReplicate", T::kInt, {}, false, "torchtitan data-parallel replicas (HSDP/DDP)"},
      // torchtitan's --parallelism.pipeline_parallel_microbatch_size (default 1): with pp > 1 the
      // local batch (mbs) runs as mbs / ppMicrobatchSize pipeline micro-batches.
      {"ppMicrobatchSize", T::kInt, {}, false, "torchtitan pipeline micro-batch size (pp > 1)"},
      {"iciData", T::kInt, {}, true, "ICI data-parallel axis"},
      {"iciFsdp", T::kInt, {}, true, "ICI fully-sharded data-parallel axis"},
      {"iciTensor", T::kInt, {}, true, "ICI tensor-parallel axis"},
      {"iciSequence", T::kInt, {}, true, "ICI sequence-parallel axis"},
      {"iciExpert", T::kInt, {}, true, "ICI expert-parallel axis"},
      {"dcnData", T::kInt, {}, true, "data parallel across slices (DCN)"},
      // MaxText's dcn_fsdp_parallelism and dcn_pipeline_parallelism (configs/base.yml): the
      // fsdp and pipeline axes across slices (issue 38).
      {"dcnFsdp", T::kInt, {}, true, "fully-sharded data parallel across slices (DCN)"},
      {"dcnPipeline", T::kInt, {}, true, "pipeline stages across slices (DCN)"},
      {"remat",
       T::kEnum,
       {"minimal", "minimal_flash", "save_dot_with_context_except_mlp", "save_dot_except_mlpwi",
        "save_dot_except_mlp", "save_qkv_proj", "save_out_proj", "qkv_proj_offloaded",
        "minimal_offloaded", "full"},
       true,
       "MaxText remat policy"},
      {"perDeviceBatchSize", T::kInt, {}, true, "MaxText per-device batch size"},
  };
  return kParams;
}

const ParamInfo* FindParameter(std::string_view name) {
  for (const auto& p : KnownParameters()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string ParameterEnvName(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0) out.push_back('_');
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

namespace {

std::string AllowedWords(const ParamInfo& info) {
  std::string s;
  for (const auto& w : info.enum_values) s += (s.empty() ? "" : "|") + w;
  return s;
}

}  // namespace

Result<ParamValue> ParseParamValue(const ParamInfo& info, const nlohmann::json& v,
                                   const std::string& field) {
  if (v.is_string()) return ParseParamText(info, v.get<std::string>(), field);
  switch (info.type) {
    case ParamType::kInt:
      if (v.is_number_integer()) return ParamValue::Int(v.get<int64_t>());
      if (v.is_number_float()) {
        // Range-check before converting: casting 1e300 or NaN to int64 is undefined behaviour.
        const double d = v.get<double>();
        if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e15) {
          return ParamValue::Int(static_cast<int64_t>(d));
        }
      }
      return Status::Invalid(field + ": " + info.name + " takes an integer, got " + v.dump());
    case ParamType::kBool:
      if (v.is_boolean()) return ParamValue::Bool(v.get<bool>());
      return Status::Invalid(field + ": " + info.name + " takes true or false, got " + v.dump());
    case ParamType::kEnum:
      return Status::Invalid(field + ": " + info.name + " takes one of " + AllowedWords(info) +
                             ", got " + v.dump());
  }
  return Status::Internal("unreachable");
}

Result<ParamValue> ParseParamText(const ParamInfo& info, std::string_view text,
                                  const std::string& field) {
  std::string t(text);
  switch (info.type) {
    case ParamType::kInt: {
      int64_t out = 0;
      auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
      if (ec != std::errc() || ptr != t.data() + t.size() || t.empty()) {
        return Status::Invalid(field + ": " + info.name + " takes an integer, got \"" + t + "\"");
      }
      return ParamValue::Int(out);
    }
    case ParamType::kBool: {
      std::string l = t;
      std::transform(l.begin(), l.end(), l.begin(), ::tolower);
      if (l == "true" || l == "1" || l == "yes") return ParamValue::Bool(true);
      if (l == "false" || l == "0" || l == "no") return ParamValue::Bool(false);
      return Status::Invalid(field + ": " + info.name + " takes true or false, got \"" + t + "\"");
    }
    case ParamType::kEnum:
      for (const auto& w : info.enum_values) {
        if (w == t) return ParamValue::Enum(t);
      }
      return Status::Invalid(field + ": " + info.name + " takes one of " + AllowedWords(info) +
                             ", got \"" + t + "\"");
  }
  return Status::Internal("unreachable");
}

std::string ConfigKey(const Config& config) {
  std::string key;
  for (const auto& [k, v] : config) {
    if (!key.empty()) key += ',';
    key += k + "=" + v.ToString();
  }
  return key;
}

nlohmann::json ConfigToJson(const Config& config) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : config) j[k] = v.ToJson();
  return j;
}

Result<Config> ConfigFromJson(const nlohmann::json& j, const std::string& field) {
  if (!j.is_object()) return Status::Invalid(field + ": must be an object of parameter: value");
  Config c;
  for (const auto& [k, v] : j.items()) {
    const ParamInfo* info = FindParameter(k);
    if (info == nullptr) {
      return Status::Invalid(field + "." + k + ": unknown parameter \"" + k + "\"");
    }
    auto pv = ParseParamValue(*info, v, field + "." + k);
    if (!pv.ok()) return pv.status();
    c[k] = *pv;
  }
  return c;
}

int64_t GetInt(const Config& c, std::string_view key, int64_t fallback) {
  auto it = c.find(std::string(key));
  return it == c.end() ? fallback : it->second.AsInt();
}

bool GetBool(const Config& c, std::string_view key, bool fallback) {
  auto it = c.find(std::string(key));
  return it == c.end() ? fallback : it->second.AsBool();
}

std::string GetEnum(const Config& c, std::string_view key, std::string_view fallback) {
  auto it = c.find(std::string(key));
  return it == c.end() ? std::string(fallback) : it->second.AsString();
}

std::vector<std::string> ChangedKeys(const Config& a, const Config& b) {
  std::vector<std::string> out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || !(it->second == v)) out.push_back(k);
  }
  for (const auto& [k, v] : b) {
    if (a.find(k) == a.end()) out.push_back(k);
  }
  return out;
}

}  // namespace paratune
