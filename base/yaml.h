// YAML as Kubernetes reads it, as JSON: plain scalars typed (booleans, null, integers, finite
// decimals), quoted ones always strings, several documents an array. Bounded against hostile
// input (nesting, alias expansion, the documents on which yaml-cpp 0.7's own loader never ends),
// so it is safe on any text a user controls: campaigns, kubeconfigs, knowledge files.
#ifndef PARATUNE_BASE_YAML_H_
#define PARATUNE_BASE_YAML_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace paratune {

// Converts YAML text to JSON the way Kubernetes does (plain scalars typed, quoted stay strings).
// Several documents give a JSON array of them. kInvalidArgument "yaml: line L, column C: ...".
Result<nlohmann::json> YamlToJson(const std::string& text);

}  // namespace paratune

#endif  // PARATUNE_BASE_YAML_H_
