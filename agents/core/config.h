// The parameter vocabulary of contract section 3 and the configuration a trial runs with.
// A Config maps parameter names (camelCase, as in the contract) to typed values; it is ordered,
// so its canonical key and JSON are deterministic. Plain values: copy freely, no thread-safety
// concerns beyond those of std::map.
#ifndef PARATUNE_AGENTS_CORE_CONFIG_H_
#define PARATUNE_AGENTS_CORE_CONFIG_H_

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace paratune {

enum class ParamType { kInt, kBool, kEnum };

class ParamValue {
 public:
  ParamValue() = default;
  static ParamValue Int(int64_t v);
  static ParamValue Bool(bool v);
  static ParamValue Enum(std::string v);

  ParamType type() const { return type_; }
  int64_t AsInt() const { return int_; }  // 0/1 for bools, 0 for enums.
  bool AsBool() const { return int_ != 0; }
  const std::string& AsString() const { return str_; }  // Enums only.
  // "2", "true", "selective".
  std::string ToString() const;
  nlohmann::json ToJson() const;

  bool operator==(const ParamValue& o) const {
    return type_ == o.type_ && int_ == o.int_ && str_ == o.str_;
  }
  bool operator<(const ParamValue& o) const;

 private:
  ParamType type_ = ParamType::kInt;
  int64_t int_ = 0;
  std::string str_;
};

// What a parameter is: its type, the allowed words for enums, whether it applies to GPUs
// (Megatron-LM style) or TPUs (MaxText mesh), and a one-line meaning for help and prompts.
struct ParamInfo {
  std::string name;
  ParamType type = ParamType::kInt;
  std::vector<std::string> enum_values;  // kEnum only.
  bool tpu = false;
  std::string meaning;
};

// The known parameters, in contract order.
const std::vector<ParamInfo>& KnownParameters();
// nullptr when `name` is not a known parameter.
const ParamInfo* FindParameter(std::string_view name);
// Upper snake case for the PARATUNE_<KEY> environment variables: "sequenceParallel" ->
// "SEQUENCE_PARALLEL", "iciFsdp" -> "ICI_FSDP".
std::string ParameterEnvName(std::string_view name);

// Parses a value for parameter `info` from JSON (number, bool or string) or from text
// ("2", "true", "selective"). `field` names the place for the error message.
Result<ParamValue> ParseParamValue(const ParamInfo& info, const nlohmann::json& v,
                                   const std::string& field);
Result<ParamValue> ParseParamText(const ParamInfo& info, std::string_view text,
                                  const std::string& field);

using Config = std::map<std::string, ParamValue>;

// Canonical, order-stable text of a config: "mbs=2,pp=1,recompute=full,tp=1". Used as identity
// for duplicate detection.
std::string ConfigKey(const Config& config);
nlohmann::json ConfigToJson(const Config& config);
// Keys must be known parameters; `field` prefixes errors ("spec.config.tp: ...").
Result<Config> ConfigFromJson(const nlohmann::json& j, const std::string& field);

// Reads an int parameter, or `fallback` when absent.
int64_t GetInt(const Config& c, std::string_view key, int64_t fallback);
bool GetBool(const Config& c, std::string_view key, bool fallback);
std::string GetEnum(const Config& c, std::string_view key, std::string_view fallback);

// The keys whose values differ between a and b (present in one only counts as different).
std::vector<std::string> ChangedKeys(const Config& a, const Config& b);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_CORE_CONFIG_H_
