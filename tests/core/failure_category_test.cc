#include "agents/core/failure_category.h"

#include <gtest/gtest.h>

#include "agents/core/results.h"

namespace paratune {
namespace {

TEST(FailureCategoryTest, EveryNameParsesBackAndADiagnosisReadsItsCategory) {
  for (FailureCategory c : kAllFailureCategories) {
    EXPECT_EQ(ParseFailureCategory(ToString(c)), c);
  }
  EXPECT_EQ(FailureCategoryNames().size(), std::size(kAllFailureCategories));
  EXPECT_STREQ(ToString(FailureCategory::kCudaOOM), "CudaOOM");
  EXPECT_FALSE(ParseFailureCategory("cudaoom").has_value());
  EXPECT_EQ(FailureCategoryOf(""), FailureCategory::kUnknown);
  FailureDiagnosis d;
  EXPECT_TRUE(d.Is(FailureCategory::kUnknown));  // no category yet
  d.category = "HostOOM";
  EXPECT_TRUE(d.Is(FailureCategory::kHostOOM));
  EXPECT_TRUE(d.RanOutOfMemory());
  EXPECT_FALSE(d.RanOutOfDeviceMemory());
  d.category = "TpuResourceExhausted";
  EXPECT_TRUE(d.RanOutOfDeviceMemory());
}

}  // namespace
}  // namespace paratune
