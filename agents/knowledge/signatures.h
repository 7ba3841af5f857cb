// Parsing of failure-signature data files (YAML or JSON) into FailureSignature values.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_SIGNATURES_H_
#define PARATUNE_AGENTS_KNOWLEDGE_SIGNATURES_H_

#include <string>
#include <vector>

#include "agents/knowledge/knowledge_base.h"
#include "base/status.h"

namespace paratune {

// Parses `{signatures: [...]}` or a bare list. Each entry: key, category, tier
// (root|secondary|symptom), contains and/or regex (lists), error, cause, remedy, parameters,
// attribution (none|memory|tpu-memory|divisibility|mesh), captures ({name: group}), retryable,
// confidence. Errors name `source` and the field. All-or-nothing.
// `allow_regex` false: an entry with `regex` is an error naming `regex` (untrusted knowledge).
Result<std::vector<FailureSignature>> ParseSignatures(const std::string& source,
                                                      const std::string& text,
                                                      bool allow_regex = true);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_SIGNATURES_H_
