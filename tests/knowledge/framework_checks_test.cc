// The training frameworks' own divisibility and mesh checks (the messages their source raises,
// filled with sample values) are diagnosed as InvalidParallelism, not retryable, naming the
// parameter a user would change first. These are the messages users paste into issues; the
// public corpus measures the same signatures on real logs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "agents/core/framework_rules.h"
#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"

namespace paratune {
namespace {

struct Check {
  const char* source;   // repository and file that raise the message
  const char* message;  // the message with sample values
  const char* first;    // the parameter that must rank first
};

const std::vector<Check>& Checks() {
  static const std::vector<Check> kChecks = {
      {"Megatron-LM arguments.py",
       "AssertionError: world size (12) is not divisible by total_model_size "
       "(total_model_size=8)",
       "tp"},
      {"Megatron-LM arguments.py (2023)",
       "AssertionError: world size is not divisible by tensor parallel size (4) times pipeline "
       "parallel size (3)",
       "tp"},
      {"Megatron-Core parallel_state.py",
       "RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel "
       "size (16)",
       "tp"},
      {"Megatron-Core transformer_config.py",
       "ValueError: num_query_groups (2) must be a multiple or divisor of "
       "tensor_model_parallel_size (8).",
       "tp"},
      {"Megatron-LM arguments.py",
       "AssertionError: number of layers of the model must be divisible pipeline model parallel "
       "size",
       "pp"},
      {"Megatron-LM arguments.py",
       "AssertionError: number of layers per pipeline stage must be divisible number of layers "
       "per virtual pipeline stage",
       "vpp"},
      {"Megatron-LM arguments.py",
       "AssertionError: seq-length should be a multiple of 2 * context-parallel-size if "
       "context-parallel-size > 1.",
       "cp"},
      {"Megatron-LM arguments.py",
       "AssertionError: eval_global_batch_size (96) must be divisible by eval_micro_batch_size "
       "(4) * data_parallel_size (8) * gtp_weight_remat_size (1)",
       "mbs"},
      {"Megatron-Core mappings.py",
       "AssertionError: First dimension of the tensor should be divisible by tensor parallel size",
       "tp"},
      {"MaxText max_utils.py",
       "AssertionError: Found unspecified values (-1) for more than one ICI      parallelism "
       "axis. At most one axis can be unspecified.",
       "iciData"},
      {"JAX mesh_utils.py",
       "ValueError: Number of slices 2 must equal the product of dcn_mesh_shape [1, 1, 4, 1]",
       "dcnData"},
      {"MaxText configs/types.py",
       "AssertionError: The number of microbatches (6) must be divisible by the number of stages "
       "(4)",
       "perDeviceBatchSize"},
      {"MaxText configs/types.py",
       "ValueError: The embedding dimension 4096 is not divisible by tensor parallelism setting 3.",
       "iciTensor"},
      {"MaxText configs/types.py",
       "ValueError: The expert dimension 8 is not divisible by expert parallelism setting 3.",
       "iciExpert"},
      {"torchtitan parallel_dims.py",
       "AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(4) * cp(1) * tp(4) * "
       "pp(1) != WORLD_SIZE(8)",
       "tp"},
      {"torchtitan decoder.py", "ValueError: tensor_parallel_degree (3) must divide n_heads (32).",
       "tp"},
      {"torchtitan parallel_dims.py",
       "ValueError: expert_parallel_degree (3) must divide dp_shard * cp * tp (8)", "ep"},
      {"torchtitan pipeline_parallel.py",
       "ValueError: Number of virtual stages (6) must be divisible by pipeline parallel size (4).",
       "pp"},
      {"DeepSpeed engine.py",
       "ValueError: Train batch size must be divisible by micro-batch data parallelism", "mbs"},
      {"DeepSpeed moe/layer.py",
       "AssertionError: Number of experts (8) should be divisible by expert parallel size (3)",
       "ep"},
      {"DeepSpeed pipe/module.py",
       "RuntimeError: num_stages (3) must divide distributed world size (8)", "pp"},
      {"DeepSpeed sequence/layer.py",
       "AssertionError: Number of heads (32) must be divisible by the sequence parallel size (3)!",
       "cp"},
      {"PyTorch device_mesh.py",
       "RuntimeError: Mesh should not be bigger than default world size 4, but found 8 ranks!",
       "tp"},
      {"accelerate parallelism_config.py",
       "ValueError: ParallelismConfig total_size (16) does not match num_processes (8). Please "
       "adjust dp_replicate_size/ dp_shard_size/tp_size/cp_size/sp_size.",
       "tp"},
      {"ColossalAI hybrid_parallel_plugin.py",
       "AssertionError: world size 8 is not divisible by tp_size 3 * pp_size 1", "tp"},
  };
  return kChecks;
}

TEST(FrameworkChecksTest, EachFrameworkCheckIsInvalidParallelismNamingTheParameter) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok()) << kb.status().ToString();
  auto d = Diagnostician::Create(kb->get());
  ASSERT_TRUE(d.ok());
  for (const Check& c : Checks()) {
    DiagnosisInput in;
    in.log = std::string("Traceback (most recent call last):\n  File \"train.py\", line 9\n") +
             c.message + "\n";
    FailureDiagnosis got = (*d)->Diagnose(in);
    EXPECT_EQ(got.category, "InvalidParallelism") << c.source << ": " << c.message;
    EXPECT_FALSE(got.retryable) << c.source;
    ASSERT_FALSE(got.parameters.empty()) << c.source << ": " << c.message;
    EXPECT_EQ(got.parameters[0], c.first) << c.source << ": " << c.message;
  }
}

// The version rules the operator enforces before launch (agents/core/framework_rules.h) carry
// the message the framework prints when a user's own run breaks them: each is diagnosed as
// InvalidParallelism naming the rule's keys, so a refused run of the user's own is explained
// as the pre-flight would have.
TEST(FrameworkChecksTest, EveryVersionRuleMessageIsDiagnosedWithTheRulesKeys) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok()) << kb.status().ToString();
  auto d = Diagnostician::Create(kb->get());
  ASSERT_TRUE(d.ok());
  auto version = [](const char* text) {
    auto v = ParseFrameworkVersion(text, "test");
    EXPECT_TRUE(v.ok()) << text;
    return v.ok() ? *v : FrameworkVersion{};
  };
  struct Case {
    const char* version;
    RuleInputs in;
  };
  std::vector<Case> cases;
  auto megatron = [] {
    RuleInputs in;
    in.framework = "megatron-lm";
    in.devices = 16;
    in.num_layers = 32;
    in.global_batch_size = 64;
    return in;
  };
  for (const char* v : {"0.8.0", "0.14.0"}) {
    RuleInputs a = megatron();
    a.overlap_param_gather = true;  // without the distributed optimizer
    cases.push_back({v, a});
    RuleInputs b = megatron();
    b.overlap_param_gather = b.distributed_optimizer = true;  // without overlap_grad_reduce
    cases.push_back({v, b});
    RuleInputs c = megatron();
    c.ep = 2;
    c.tp = 2;  // without sequence parallelism (refused before 0.15)
    cases.push_back({v, c});
    RuleInputs e = megatron();
    e.pp = 4;
    e.vpp = 2;
    e.num_microbatches = 6;  // not a multiple of pp
    cases.push_back({v, e});
    RuleInputs f = e;
    f.num_microbatches = 2;  // fewer than pp
    cases.push_back({v, f});
  }
  RuleInputs uneven = megatron();
  uneven.first_stage_layers_set = true;
  cases.push_back({"0.8.0", uneven});
  RuleInputs titan;
  titan.framework = "torchtitan";
  titan.devices = 8;
  titan.global_batch_size = 16;
  titan.tp = 3;  // 8 GPUs do not factor
  cases.push_back({"0.2.2", titan});
  RuleInputs batch = titan;
  batch.tp = 1;
  batch.global_batch_size = 12;
  batch.mbs = 1;  // 12 is not a multiple of 8 data-parallel ranks
  cases.push_back({"0.2.2", batch});
  RuleInputs experts = titan;
  experts.tp = 1;
  experts.dp_shard = 2;
  experts.dp_replicate = 4;
  experts.ep = 4;  // does not divide dp_shard x cp x tp = 2
  cases.push_back({"0.2.2", experts});

  int checked = 0;
  for (const Case& c : cases) {
    for (const RuleViolation& r : CheckFrameworkRules(version(c.version), c.in)) {
      ++checked;
      DiagnosisInput in;
      in.log = "Traceback (most recent call last):\n  File \"train.py\", line 9\n" +
               r.framework_error + "\n";
      FailureDiagnosis got = (*d)->Diagnose(in);
      EXPECT_EQ(got.category, "InvalidParallelism") << r.rule << ": " << r.framework_error;
      EXPECT_FALSE(got.retryable) << r.rule;
      ASSERT_FALSE(got.parameters.empty()) << r.rule << ": " << r.framework_error;
      // The first parameter named is one of the keys the rule names.
      EXPECT_NE(std::find(r.keys.begin(), r.keys.end(), got.parameters[0]), r.keys.end())
          << r.rule << " (" << c.version << "): diagnosed first " << got.parameters[0] << " for "
          << r.framework_error;
    }
  }
  EXPECT_GE(checked, 12);
}

TEST(FrameworkChecksTest, EverySignatureWrittenFromFrameworkSourceNamesIt) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok()) << kb.status().ToString();
  int n = 0;
  for (const auto& sig : (*kb)->signatures()) {
    if (sig.source.find("frameworks.yaml") == std::string::npos) continue;
    ++n;
    EXPECT_FALSE(sig.reference.empty()) << sig.key;
  }
  EXPECT_GE(n, 20);
}

}  // namespace
}  // namespace paratune
