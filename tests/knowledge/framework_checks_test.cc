// The training frameworks' own divisibility and mesh checks (the messages their source raises,
// filled with sample values) are diagnosed as InvalidParallelism, not retryable, naming the
// parameter a user would change first. These are the messages users paste into issues; the
// public corpus measures the same signatures on real logs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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
