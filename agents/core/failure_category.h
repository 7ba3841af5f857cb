// Failure categories of contract section 5: the one table of their wire names. A diagnosis
// (FailureDiagnosis, agents/core/results.h) carries its category as that name; code that acts
// on a category compares the enum, never a string literal.
#ifndef PARATUNE_AGENTS_CORE_FAILURE_CATEGORY_H_
#define PARATUNE_AGENTS_CORE_FAILURE_CATEGORY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace paratune {

enum class FailureCategory {
  kCudaOOM,
  kHostOOM,
  kInvalidParallelism,
  kTpuResourceExhausted,
  kCompileError,
  kCollectiveTimeout,
  kNodeFault,
  kUnschedulable,
  kImagePull,
  kTimeout,
  kUnknown
};

// Every category, in the contract's order.
inline constexpr FailureCategory kAllFailureCategories[] = {FailureCategory::kCudaOOM,
                                                            FailureCategory::kHostOOM,
                                                            FailureCategory::kInvalidParallelism,
                                                            FailureCategory::kTpuResourceExhausted,
                                                            FailureCategory::kCompileError,
                                                            FailureCategory::kCollectiveTimeout,
                                                            FailureCategory::kNodeFault,
                                                            FailureCategory::kUnschedulable,
                                                            FailureCategory::kImagePull,
                                                            FailureCategory::kTimeout,
                                                            FailureCategory::kUnknown};

// The wire name ("CudaOOM", ..., "Unknown").
const char* ToString(FailureCategory c);
// The category of a wire name; nullopt for any other string (case matters).
std::optional<FailureCategory> ParseFailureCategory(std::string_view name);
// Every wire name, in the contract's order (the schema enum of a diagnosis).
std::vector<std::string> FailureCategoryNames();
// The category of a wire name, kUnknown for "" or any other string.
FailureCategory FailureCategoryOf(std::string_view name);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_CORE_FAILURE_CATEGORY_H_
