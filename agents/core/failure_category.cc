#include "agents/core/failure_category.h"

namespace paratune {

const char* ToString(FailureCategory c) {
  switch (c) {
    case FailureCategory::kCudaOOM:
      return "CudaOOM";
    case FailureCategory::kHostOOM:
      return "HostOOM";
    case FailureCategory::kInvalidParallelism:
      return "InvalidParallelism";
    case FailureCategory::kTpuResourceExhausted:
      return "TpuResourceExhausted";
    case FailureCategory::kCompileError:
      return "CompileError";
    case FailureCategory::kCollectiveTimeout:
      return "CollectiveTimeout";
    case FailureCategory::kNodeFault:
      return "NodeFault";
    case FailureCategory::kUnschedulable:
      return "Unschedulable";
    case FailureCategory::kImagePull:
      return "ImagePull";
    case FailureCategory::kTimeout:
      return "Timeout";
    case FailureCategory::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

std::optional<FailureCategory> ParseFailureCategory(std::string_view name) {
  for (FailureCategory c : kAllFailureCategories) {
    if (name == ToString(c)) return c;
  }
  return std::nullopt;
}

std::vector<std::string> FailureCategoryNames() {
  std::vector<std::string> out;
  for (FailureCategory c : kAllFailureCategories) out.push_back(ToString(c));
  return out;
}

FailureCategory FailureCategoryOf(std::string_view name) {
  return ParseFailureCategory(name).value_or(FailureCategory::kUnknown);
}

}  // namespace paratune
