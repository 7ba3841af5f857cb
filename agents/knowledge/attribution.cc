#include "agents/knowledge/attribution.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

#include "base/strings.h"

namespace paratune {

namespace {

bool IsConfigKey(const std::string& name) { return FindParameter(name) != nullptr; }

// Keywords of a traceback that say which quantity failed a divisibility check:
// {keyword, config key, model field}.
struct ContextKeyword {
  const char* keyword;
  const char* key;
  const char* field;
};
constexpr ContextKeyword kContext[] = {
    {"query_groups", "tp", "numQueryGroups"},
    {"num_key_value_heads", "tp", "numQueryGroups"},
    {"attention_heads", "tp", "numAttentionHeads"},
    {"attention heads", "tp", "numAttentionHeads"},
    {"num_heads", "tp", "numAttentionHeads"},
    {"num_moe_experts", "ep", "numExperts"},
    {"num_experts", "ep", "numExperts"},
    {"num_layers", "pp", "numLayers"},
    {"number of layers", "pp", "numLayers"},
    {"ffn_hidden_size", "tp", "ffnHiddenSize"},
    {"global_batch_size", "mbs", "globalBatchSize"},
    {"global batch size", "mbs", "globalBatchSize"},
    {"vocab", "tp", "vocabSize"},
    {"seq_length", "cp", "seqLength"},
};

// The names a traceback's context implicates, looking at the matching line and up to 10 lines
// before it (the frames that called the failing check).
std::vector<std::string> ContextNames(const std::vector<std::string>& lines, size_t at) {
  size_t first = at >= 10 ? at - 10 : 0;
  for (size_t i = at + 1; i-- > first;) {
    std::string lower = Lower(lines[i]);
    for (const auto& c : kContext) {
      if (lower.find(c.keyword) != std::string::npos) return {c.key, c.field};
    }
  }
  return {};
}

std::map<std::string, std::string> Captures(const FailureSignature& sig, const std::string& line) {
  std::map<std::string, std::string> out;
  if (sig.captures.empty()) return out;
  for (const auto& re : sig.compiled) {
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    for (const auto& [name, group] : sig.captures) {
      if (group < static_cast<int>(m.size()) && m[group].matched) out[name] = m[group].str();
    }
    break;
  }
  return out;
}

std::string ValueOf(const std::string& name, const Config* config,
                    const std::map<std::string, int64_t>& model,
                    const std::map<std::string, std::string>& caps) {
  // Config keys: what the trial was given. Model fields: what the log says ran, then the
  // campaign's model description.
  if (config != nullptr) {
    auto it = config->find(name);
    if (it != config->end()) return it->second.ToString();
  }
  if (auto it = caps.find(name); it != caps.end() && !it->second.empty()) return it->second;
  if (auto it = model.find(name); it != model.end()) return std::to_string(it->second);
  return "";
}

// Config keys whose integer value equals `n` (the divisor of a failed check), largest axis first.
std::vector<std::string> KeysWithValue(const Config* config, const std::string& n) {
  std::vector<std::string> out;
  if (config == nullptr || n.empty()) return out;
  for (const auto& [k, v] : *config) {
    if (v.type() == ParamType::kInt && v.ToString() == n && v.AsInt() > 1) out.push_back(k);
  }
  return out;
}

Attribution Divisibility(const FailureSignature& sig, const std::vector<std::string>& lines,
                         size_t at, const Config* config,
                         const std::map<std::string, int64_t>& model) {
  Attribution a;
  auto caps = Captures(sig, lines[at]);
  std::vector<std::string> names = sig.parameters;
  if (names.empty()) names = ContextNames(lines, at);
  if (names.empty())
    names = KeysWithValue(config, caps.count("denominator") ? caps["denominator"] : "");
  // "14 is not divisible by 4": numerator is the model field, denominator the config key.
  for (const auto& n : names) {
    if (caps.count(n)) continue;
    if (IsConfigKey(n) && caps.count("denominator")) caps[n] = caps["denominator"];
    if (!IsConfigKey(n) && caps.count("numerator")) caps[n] = caps["numerator"];
  }
  for (const auto& n : names) {
    std::string v = ValueOf(n, config, model, caps);
    a.quoted.emplace_back(n, v);
    if (IsConfigKey(n)) a.parameters.push_back(n);
    if (IsConfigKey(n) && config != nullptr && caps.count(n) && config->count(n) &&
        config->at(n).ToString() == caps[n]) {
      a.confirmed = true;
    }
  }
  // Without a config, numbers in the message that name the failing quantities confirm it.
  bool numbers =
      std::any_of(caps.begin(), caps.end(), [](const auto& kv) { return !kv.second.empty(); });
  if (numbers && !names.empty() && config == nullptr) a.confirmed = true;
  return a;
}

Attribution Mesh(const FailureSignature& sig, const Config* config) {
  Attribution a;
  std::vector<std::pair<int64_t, std::string>> axes;
  if (config != nullptr) {
    for (const auto& [k, v] : *config) {
      bool mesh_key = k.rfind("ici", 0) == 0 || k.rfind("dcn", 0) == 0;
      if (mesh_key && v.type() == ParamType::kInt && v.AsInt() != 1)
        axes.emplace_back(v.AsInt(), k);
    }
  }
  std::stable_sort(axes.begin(), axes.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (const auto& [v, k] : axes) {
    a.parameters.push_back(k);
    a.quoted.emplace_back(k, std::to_string(v));
  }
  a.confirmed = !axes.empty();
  if (axes.empty()) {
    for (const auto& p : sig.parameters) {
      if (IsConfigKey(p)) a.parameters.push_back(p);
    }
    a.quoted.emplace_back("the ici*/dcn* mesh axes", "");
  }
  return a;
}

// Relief a key's change would bring to an out-of-memory failure, given its current value; 0 when
// the key cannot help (mbs already 1, recompute already full).
double MemoryRelief(const std::string& key, const ParamValue& v, const Config& c) {
  if (key == "mbs" || key == "perDeviceBatchSize") {
    return v.AsInt() > 1 ? 2.5 + 0.5 * std::log2(static_cast<double>(v.AsInt())) : 0;
  }
  if (key == "recompute") {
    return v.AsString() == "none" ? 2.9 : (v.AsString() == "selective" ? 1.6 : 0);
  }
  if (key == "remat") {
    std::string s = v.AsString();
    return s == "full" ? 0 : (s == "none" || s == "minimal" ? 2.9 : 1.6);
  }
  if (key == "tp") return v.AsInt() < 8 ? 1.4 : 0;
  if (key == "pp") return 1.2;
  if (key == "distributedOptimizer") return v.AsBool() ? 0 : 1.5;
  if (key == "sequenceParallel") return !v.AsBool() && GetInt(c, "tp", 1) > 1 ? 1.3 : 0;
  if (key == "cp") return 0.8;
  if (key == "vpp") return v.AsInt() > 1 ? 0.5 : 0;
  if (key == "iciFsdp") return GetInt(c, "iciData", 1) > 1 ? 1.5 : 0;
  if (key == "iciTensor") return 1.0;
  return 0;
}

Attribution Memory(const FailureSignature& sig, const Config* config) {
  Attribution a;
  if (config == nullptr || config->empty()) {
    for (const auto& p : sig.parameters) {
      if (IsConfigKey(p)) a.parameters.push_back(p);
    }
    for (size_t i = 0; i < a.parameters.size() && i < 2; ++i)
      a.quoted.emplace_back(a.parameters[i], "");
    return a;
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [k, v] : *config) {
    double r = MemoryRelief(k, v, *config);
    if (r > 0) ranked.emplace_back(r, k);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (const auto& [r, k] : ranked) a.parameters.push_back(k);
  for (size_t i = 0; i < ranked.size() && i < 2; ++i) {
    a.quoted.emplace_back(ranked[i].second, config->at(ranked[i].second).ToString());
  }
  a.confirmed = !ranked.empty();
  return a;
}

}  // namespace

Attribution Attribute(const FailureSignature& sig, const std::vector<std::string>& lines, size_t at,
                      const Config* config, const std::map<std::string, int64_t>& model) {
  if (sig.attribution == "memory" || sig.attribution == "tpu-memory") return Memory(sig, config);
  if (sig.attribution == "divisibility") return Divisibility(sig, lines, at, config, model);
  if (sig.attribution == "mesh") return Mesh(sig, config);
  Attribution a;
  for (const auto& p : sig.parameters) {
    if (IsConfigKey(p)) a.parameters.push_back(p);
  }
  return a;
}

}  // namespace paratune
