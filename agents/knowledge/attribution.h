// Parameter attribution for the Diagnostician: which config keys most likely caused a failure a
// signature matched, and the values to quote in the summary. Pure functions; thread-safe.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_ATTRIBUTION_H_
#define PARATUNE_AGENTS_KNOWLEDGE_ATTRIBUTION_H_

#include <map>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/knowledge/knowledge_base.h"

namespace paratune {

struct Attribution {
  // Config keys (contract section 3) most likely responsible, most likely first.
  std::vector<std::string> parameters;
  // Names and values for the summary, e.g. {{"tp","4"},{"numAttentionHeads","14"}}.
  std::vector<std::pair<std::string, std::string>> quoted;
  // True when the numbers confirm the attribution (e.g. 14 % 4 != 0 with tp = 4 in the config).
  bool confirmed = false;
};

// `lines` is the whole log split in lines and `at` the index of the matching line (the lines
// before it give a traceback's context). `config` may be null. `model` holds model fields
// known from the workload ("numAttentionHeads" -> 14); may be empty.
Attribution Attribute(const FailureSignature& sig, const std::vector<std::string>& lines, size_t at,
                      const Config* config, const std::map<std::string, int64_t>& model);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_ATTRIBUTION_H_
