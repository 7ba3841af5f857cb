// Every launch error the performance model (and so the simulated cluster) emits for a broken
// configuration is diagnosed as InvalidParallelism and blames one of the keys the model blames.
#include <gtest/gtest.h>

#include "agents/core/campaign.h"
#include "agents/knowledge/diagnostician.h"
#include "agents/model/parallel_plan.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"

namespace paratune {
namespace {

Config Cfg(std::initializer_list<std::pair<const char*, int64_t>> ints) {
  Config c;
  for (const auto& [k, v] : ints) c[k] = ParamValue::Int(v);
  return c;
}

void ExpectDiagnosed(const Diagnostician& d, const Workload& w, const Config& c) {
  auto violations = FindViolations(w, PlanFromConfig(w, c));
  ASSERT_FALSE(violations.empty()) << ConfigKey(c);
  for (const auto& v : violations) {
    DiagnosisInput in;
    in.log = "[rank0]: Traceback (most recent call last):\n[rank0]: " + v.framework_error + "\n";
    in.config = &c;
    in.workload = &w;
    FailureDiagnosis f = d.Diagnose(in);
    EXPECT_EQ(f.category, "InvalidParallelism") << v.framework_error;
    ASSERT_FALSE(f.parameters.empty()) << v.framework_error;
    EXPECT_NE(std::find(v.keys.begin(), v.keys.end(), f.parameters[0]), v.keys.end())
        << v.framework_error << " -> " << f.summary;
    EXPECT_FALSE(f.retryable);
  }
}

TEST(ModelErrorsTest, GpuLaunchErrorsAreAttributed) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  auto d = Diagnostician::Create(kb->get());
  auto spec = LoadCampaignFile(PARATUNE_SOURCE_DIR "/manifests/samples/llama3-8b-h100x8.yaml");
  ASSERT_TRUE(spec.ok());
  auto w = ResolveWorkload(*spec);
  ASSERT_TRUE(w.ok());
  for (const Config& c :
       {Cfg({{"tp", 3}}), Cfg({{"pp", 3}}), Cfg({{"tp", 16}}), Cfg({{"vpp", 2}}),
        Cfg({{"pp", 2}, {"vpp", 3}}), Cfg({{"cp", 3}}), Cfg({{"ep", 2}}), Cfg({{"mbs", 3}})}) {
    ExpectDiagnosed(**d, *w, c);
  }
  Config overlap = Cfg({{"tp", 1}});
  overlap["overlapParamGather"] = ParamValue::Bool(true);
  overlap["distributedOptimizer"] = ParamValue::Bool(false);
  ExpectDiagnosed(**d, *w, overlap);
}

TEST(ModelErrorsTest, TpuLaunchErrorsAreAttributed) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  auto d = Diagnostician::Create(kb->get());
  auto spec = LoadCampaignFile(PARATUNE_SOURCE_DIR "/tests/knowledge/testdata/tpu-v5e-4x4.yaml");
  ASSERT_TRUE(spec.ok());
  auto w = ResolveWorkload(*spec);
  ASSERT_TRUE(w.ok());
  ExpectDiagnosed(**d, *w, Cfg({{"iciData", 4}, {"iciFsdp", 8}}));
  ExpectDiagnosed(**d, *w, Cfg({{"iciData", 1}, {"iciFsdp", 1}, {"iciTensor", 16}}));
}

}  // namespace
}  // namespace paratune
