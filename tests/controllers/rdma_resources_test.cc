#include "controllers/rdma_resources.h"

#include <gtest/gtest.h>

namespace paratune::controllers {
namespace {

using nlohmann::json;

json TemplateRequesting(const std::string& resource) {
  json limits = {{"nvidia.com/gpu", 8}};
  if (!resource.empty()) limits[resource] = 1;
  return {{"spec",
           {{"template",
             {{"spec",
               {{"containers",
                 json::array({{{"name", "train"}, {"resources", {{"limits", limits}}}}})}}}}}}}};
}

TEST(RdmaResourcesTest, UndeclaredChecksNothing) {
  EXPECT_TRUE(CheckRdmaRequests(TemplateRequesting("rdma/ib"), "").ok());
}

TEST(RdmaResourcesTest, TheDeclaredResourceIsAdmitted) {
  EXPECT_TRUE(CheckRdmaRequests(TemplateRequesting("rdma/ib"), "rdma/ib").ok());
  EXPECT_TRUE(CheckRdmaRequests(TemplateRequesting(""), "none").ok());
}

TEST(RdmaResourcesTest, AnotherOrAbsentResourceIsRefusedNamingTheField) {
  Status s = CheckRdmaRequests(TemplateRequesting("rdma/roce"), "rdma/ib");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("spec.trialTemplate.spec.template.spec.containers[0].resources."
                              "limits.rdma/roce:",
                              0),
            0u)
      << s.message();
  EXPECT_NE(s.message().find("rdma/ib"), std::string::npos);
  s = CheckRdmaRequests(TemplateRequesting("rdma/ib"), "none");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has no RDMA devices"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace paratune::controllers
