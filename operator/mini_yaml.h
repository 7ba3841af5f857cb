// A small YAML reader for kubeconfig files (the runtime does not link yaml-cpp): block mappings
// and sequences (including sequences at their key's indentation, as kubectl writes them), plain,
// single- and double-quoted scalars, comments, empty flow collections, and JSON documents.
// Anchors, multi-document streams and block scalars are not supported (an error says so).
#ifndef PARATUNE_OPERATOR_MINI_YAML_H_
#define PARATUNE_OPERATOR_MINI_YAML_H_

#include <string>

#include "operator/kube_client.h"

namespace paratune::kube {

// The document as JSON. Errors name the line.
Result<Json> ParseMiniYaml(const std::string& text);

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_MINI_YAML_H_
