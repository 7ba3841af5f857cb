// Name and value normalisation shared by the reply parsers (declared in reply_parser.h).
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "agents/llm/reply_parser.h"
#include "base/strings.h"

namespace paratune::llm {
namespace {

// Lower case with '-', '_', ' ' and leading dashes removed: "TENSOR_MODEL_PARALLEL_SIZE" ->
// "tensormodelparallelsize", "--sequence-parallel" -> "sequenceparallel".
std::string Squash(std::string_view raw) {
  std::string out;
  for (char c : raw) {
    if (c == '-' || c == '_' || c == ' ' || c == '`' || c == '*' || c == '"' || c == '\'') {
      continue;
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

const std::map<std::string, std::string>& Aliases() {
  static const auto* aliases = [] {
    auto* m = new std::map<std::string, std::string>{
        {"tensormodelparallelsize", "tp"},
        {"tensorparallelsize", "tp"},
        {"tensorparallel", "tp"},
        {"tpsize", "tp"},
        {"pipelinemodelparallelsize", "pp"},
        {"pipelineparallelsize", "pp"},
        {"pipelineparallel", "pp"},
        {"ppsize", "pp"},
        {"virtualpipelinemodelparallelsize", "vpp"},
        {"virtualpipelinesize", "vpp"},
        {"contextparallelsize", "cp"},
        {"contextparallel", "cp"},
        {"expertmodelparallelsize", "ep"},
        {"expertparallelsize", "ep"},
        {"expertparallel", "ep"},
        {"microbatchsize", "mbs"},
        {"microbatch", "mbs"},
        {"ac", "recompute"},
        {"recomputegranularity", "recompute"},
        {"activationcheckpointing", "recompute"},
        {"activationrecomputation", "recompute"},
        {"recomputenumlayers", "recomputeLayers"},
        {"sp", "sequenceParallel"},
        {"usedistributedoptimizer", "distributedOptimizer"},
        {"distopt", "distributedOptimizer"},
        {"crossentropylossfusion", "fusedCrossEntropy"},
        {"decoderfirstpipelinenumlayers", "firstPipelineStageLayers"},
        {"decoderlastpipelinenumlayers", "lastPipelineStageLayers"},
        {"icidataparallelism", "iciData"},
        {"icifsdpparallelism", "iciFsdp"},
        {"icitensorparallelism", "iciTensor"},
        {"icisequenceparallelism", "iciSequence"},
        {"iciexpertparallelism", "iciExpert"},
        {"dcndataparallelism", "dcnData"},
        {"dcnfsdpparallelism", "dcnFsdp"},
        {"dcnpipelineparallelism", "dcnPipeline"},
        {"rematpolicy", "remat"},
        // torchtitan's job config (torchtitan/config/job_config.py, v0.2.2), with or without
        // its section: --parallelism.tensor_parallel_degree, --training.local_batch_size, ...
        {"tensorparalleldegree", "tp"},
        {"pipelineparalleldegree", "pp"},
        {"contextparalleldegree", "cp"},
        {"expertparalleldegree", "ep"},
        {"dataparallelsharddegree", "dpShard"},
        {"dataparallelreplicatedegree", "dpReplicate"},
        {"localbatchsize", "mbs"},
        {"pipelineparallelmicrobatchsize", "ppMicrobatchSize"},
        {"activationcheckpointmode", "recompute"},
        {"enableasynctensorparallel", "tpCommOverlap"},
        {"asynctensorparallel", "tpCommOverlap"},
        {"asynctp", "tpCommOverlap"},
        {"compileenable", "torchCompile"},
        {"torchcompile", "torchCompile"},
        // Megatron-LM --tp-comm-overlap; NeMo 2 / Megatron-Bridge recipe fields.
        {"tpcommoverlap", "tpCommOverlap"},
        {"sequenceparallelism", "sequenceParallel"},
    };
    for (const auto& info : KnownParameters()) (*m)[Squash(info.name)] = info.name;
    return m;
  }();
  return *aliases;
}

// Drops quotes, backticks, emphasis and trailing sentence punctuation around a value.
std::string CleanValue(std::string_view raw) {
  std::string v = Trim(raw);
  auto strip = [](char c) {
    return c == '`' || c == '"' || c == '\'' || c == '*' || c == '.' || c == ',' || c == ';';
  };
  while (!v.empty() && strip(v.back())) v.pop_back();
  size_t b = 0;
  while (b < v.size() && strip(v[b]) && v[b] != '.') ++b;
  return Trim(v.substr(b));
}

}  // namespace

std::string StripReasoning(std::string_view reply) {
  // One pass (erasing block by block was quadratic in the number of blocks).
  std::string text;
  text.reserve(reply.size());
  for (size_t pos = 0;;) {
    const size_t open = reply.find("<think>", pos);
    text.append(reply.substr(pos, open == std::string_view::npos ? reply.npos : open - pos));
    if (open == std::string_view::npos) break;
    const size_t close = reply.find("</think>", open);
    if (close == std::string_view::npos) break;  // unterminated: drop the rest
    pos = close + 8;
  }
  // A reply that starts mid-thought (the server stripped the opening tag) ends it with </think>.
  if (size_t close = text.find("</think>"); close != std::string::npos) text.erase(0, close + 8);
  std::string out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (Trim(line).rfind("```", 0) != 0) out += line + "\n";
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return Trim(out);
}

std::optional<std::string> CanonicalParameterName(std::string_view raw) {
  std::string key = Squash(raw);
  if (key.empty()) return std::nullopt;
  auto it = Aliases().find(key);
  if (it != Aliases().end()) return it->second;
  // A dotted config path: "parallelism.tensor_parallel_degree", "compile.enable" (the whole
  // path without dots first, then its last part).
  if (key.find('.') == std::string::npos) return std::nullopt;
  std::string joined;
  for (char c : key) {
    if (c != '.') joined += c;
  }
  if (it = Aliases().find(joined); it != Aliases().end()) return it->second;
  if (it = Aliases().find(key.substr(key.rfind('.') + 1)); it != Aliases().end()) {
    return it->second;
  }
  return std::nullopt;
}

Result<ParamValue> ParseModelValue(const std::string& param, std::string_view raw) {
  const ParamInfo* info = FindParameter(param);
  if (info == nullptr) return Status::Invalid("unknown parameter \"" + param + "\"");
  std::string v = CleanValue(raw);
  std::string lower = v;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (info->type == ParamType::kBool) {
    if (lower == "on" || lower == "enabled") v = "true";
    if (lower == "off" || lower == "disabled") v = "false";
    if (lower == "true" || lower == "false") v = lower;
  } else if (info->type == ParamType::kEnum) {
    if (param == "recompute" &&
        (lower == "off" || lower == "no" || lower == "null" || lower == "false" || lower == "0")) {
      v = "none";
    } else {
      v = lower;
    }
  }
  return ParseParamText(*info, v, param);
}

}  // namespace paratune::llm
