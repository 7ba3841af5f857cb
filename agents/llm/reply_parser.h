// Parsers for what the models answer in each role. They accept the structured (JSON) form the
// prompts ask for and the free-text forms of the published systems, with canonical
// (contract section 3) or Megatron-/MaxText-style names (MICRO_BATCH_SIZE, TP,
// TENSOR_MODEL_PARALLEL_SIZE, AC, RECOMPUTE_GRANULARITY, ICI_FSDP_PARALLELISM, ...). Chain of
// thought inside <think> tags and markdown fences are stripped first. Anything else is
// rejected with a reason (kInvalidArgument) that ends up in the message pool.
//
// The parsers check the vocabulary only: whether a value lies in the campaign's search space,
// is a duplicate or a known failure is decided by the engine and the Validator. Pure
// functions; thread-safe.
#ifndef PARATUNE_AGENTS_LLM_REPLY_PARSER_H_
#define PARATUNE_AGENTS_LLM_REPLY_PARSER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "base/status.h"

namespace paratune::llm {

// Reply lines longer than this are prose to every parser (and a JSON diagnosis summary longer
// than this is refused): std::regex would recurse once per character of such a line.
inline constexpr size_t kMaxReplyLineBytes = 2048;

// Removes <think>...</think> blocks (an unterminated <think> drops the rest) and markdown
// code-fence lines; trims.
std::string StripReasoning(std::string_view reply);

// The canonical parameter name for a canonical, camelCase, snake-case or Megatron/MaxText
// name ("MICRO_BATCH_SIZE" -> "mbs", "AC" -> "recompute", "--sequence-parallel" ->
// "sequenceParallel"); nullopt when unknown.
std::optional<std::string> CanonicalParameterName(std::string_view raw);

// Parses a value the way a model writes it ("4", "`selective`", "True", "off" for recompute).
Result<ParamValue> ParseModelValue(const std::string& param, std::string_view raw);

// Analyst: ranked "Change {PARAMETER} from {CURRENT} to {PROPOSED}." lines (numbered or
// bulleted, optionally followed by a reason), or JSON {"changes": [{"parameter", "from", "to",
// "reason"}]}. Order is rank.
struct SuggestedChange {
  std::string parameter;  // canonical
  std::string from;       // as written (informational)
  ParamValue to;
  std::string reason;
};
Result<std::vector<SuggestedChange>> ParseAnalystReply(std::string_view reply);

// Strategist: a full configuration as "PARAMETER: value" (or "PARAMETER=value") lines, or a
// JSON object {"config": {...}} / {...}. Prose lines are ignored; a line naming an unknown
// parameter, or no parameter at all, rejects the reply.
Result<Config> ParseStrategistReply(std::string_view reply);

// Diagnostician: a summary line ending in "(Confidence: N)", optionally "Category: X",
// "Parameters: a, b", "Retryable: yes|no" lines; or JSON with those fields. The summary must
// carry a confidence; the category must be one of contract section 5's.
Result<FailureDiagnosis> ParseDiagnosticianReply(std::string_view reply);

// Proposer: up to three candidates, each a "Candidate N" heading followed by "PARAMETER: value"
// lines and "Rationale:" / "Expected impact:" / "Confidence:" lines; or JSON {"candidates":
// [{"config", "rationale", "expectedImpact", "confidence"}]}. Candidates that fail to parse are
// dropped with their reason in `rejected`; no valid candidate at all is an error.
struct ProposedCandidate {
  Config config;
  std::string rationale;
  std::string expected_impact;
  double confidence = 0.5;  // 0..1
};
struct ProposerReply {
  std::vector<ProposedCandidate> candidates;
  std::vector<std::string> rejected;
};
Result<ProposerReply> ParseProposerReply(std::string_view reply);

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_REPLY_PARSER_H_
