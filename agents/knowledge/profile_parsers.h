// Parsers for real profiler exports into a ProfileSummary (see profile.h for the formats).
// Each fills the top operations (merged by name, most time first, at most 20), the
// communication fraction (all collectives, not only the top ones) and, where the format carries
// them, the step time and the device duty cycle. Pure functions, thread-safe.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_PROFILE_PARSERS_H_
#define PARATUNE_AGENTS_KNOWLEDGE_PROFILE_PARSERS_H_

#include <string>

#include "agents/knowledge/profile.h"
#include "base/status.h"

namespace paratune {

Result<ProfileSummary> ParsePytorchTable(const std::string& text);
Result<ProfileSummary> ParseChromeTrace(const std::string& text);
Result<ProfileSummary> ParseNsysKernelCsv(const std::string& text);
Result<ProfileSummary> ParseXlaOpProfile(const std::string& text);

// "500.000ms" -> 0.5, "12.3us" -> 1.23e-5, "1.2s", "800ns"; false when malformed.
bool ParseDurationText(const std::string& text, double* seconds);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_PROFILE_PARSERS_H_
