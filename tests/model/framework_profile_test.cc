// Framework profiles (docs/model.md "Framework profiles"): the frameworks lay out memory and
// run kernels differently, and the model says so; custom is the documented default.
#include <gtest/gtest.h>

#include <string>

#include "agents/model/parallel_plan.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "tests/model/test_workloads.h"

namespace paratune {
namespace {

const Config kConfig{{"tp", ParamValue::Int(1)}, {"mbs", ParamValue::Int(1)}};

TEST(FrameworkProfileTest, CustomIsTheMegatronDefault) {
  const Estimate m = EstimateConfig(testing::ProfileWorkload("megatron-lm"), kConfig);
  const Estimate c = EstimateConfig(testing::ProfileWorkload("custom"), kConfig);
  EXPECT_DOUBLE_EQ(m.peak_memory_gib, c.peak_memory_gib);
  EXPECT_DOUBLE_EQ(m.step_time_seconds, c.step_time_seconds);
}

TEST(FrameworkProfileTest, FrameworksDifferWhereTheyReallyDo) {
  const Workload mw = testing::ProfileWorkload("megatron-lm");
  const double params = mw.model.TotalParams();
  const Estimate m = EstimateConfig(mw, kConfig);
  const Estimate t = EstimateConfig(testing::ProfileWorkload("torchtitan"), kConfig);
  const Estimate h = EstimateConfig(testing::ProfileWorkload("transformers"), kConfig);
  auto state_bytes = [&](const Estimate& e) {
    return (e.memory.parameters_gib + e.memory.gradients_gib + e.memory.optimizer_gib) *
           (1u << 30) / params;
  };
  // Megatron-LM: bf16 weights, fp32 main grads, fp32 master + Adam = 18 bytes per parameter.
  EXPECT_NEAR(state_bytes(m), 18.0, 0.01);
  // torchtitan FSDP2 over 8 GPUs: 16 bytes sharded 8 ways, plus unsharded bf16 blocks.
  EXPECT_GT(state_bytes(t), 2.0);
  EXPECT_LT(state_bytes(t), 4.0);
  // transformers: fp32 weights, grads, Adam (16) plus autocast's bf16 copies (2 per matmul
  // weight: all but the input embedding).
  EXPECT_GT(state_bytes(h), 17.0);
  EXPECT_LT(state_bytes(h), 18.0);
  // Eager, unfused kernels and a host-bound launch floor: slower than Megatron-LM.
  EXPECT_GT(h.step_time_seconds, 1.2 * m.step_time_seconds);
  // The fp32-upcast loss keeps more logits bytes than Megatron's bf16 logits + fp32 softmax.
  EXPECT_GT(t.memory.activations_gib, m.memory.activations_gib);
  // FSDP2 moves 8 bytes per parameter per step (two bf16 all-gathers, an fp32 reduce-scatter)
  // where DDP all-reduces 4-byte grads; and it shards the optimizer step.
  EXPECT_NE(t.time.data_parallel, m.time.data_parallel);
  EXPECT_LT(t.time.optimizer, m.time.optimizer);
}

// torchtitan HSDP: dpReplicate r keeps a whole copy of the sharded states in each replica
// (fully_shard over dp_shard x cp only), so the 16 sharded bytes per parameter grow r-fold;
// the unsharded block buffers and the activations do not change.
TEST(FrameworkProfileTest, TorchtitanReplicasHoldTheirOwnShards) {
  const Workload w = testing::ProfileWorkload("torchtitan");  // 8 GPUs
  Config fsdp = kConfig;
  Config hsdp = kConfig;
  hsdp["dpReplicate"] = ParamValue::Int(2);
  hsdp["dpShard"] = ParamValue::Int(4);
  const Estimate a = EstimateConfig(w, fsdp);
  const Estimate b = EstimateConfig(w, hsdp);
  const double sharded_gib = 16.0 * w.model.TotalParams() / 8 / (1u << 30);
  const double states = [](const Estimate& e) {
    return e.memory.parameters_gib + e.memory.gradients_gib + e.memory.optimizer_gib;
  }(b) - [](const Estimate& e) {
    return e.memory.parameters_gib + e.memory.gradients_gib + e.memory.optimizer_gib;
  }(a);
  EXPECT_NEAR(states, sharded_gib, 0.01 * sharded_gib);
  EXPECT_DOUBLE_EQ(a.memory.activations_gib, b.memory.activations_gib);
}

// torchtitan with pp > 1: the local batch (mbs) runs as mbs / ppMicrobatchSize pipeline
// micro-batches, one schedule (fill and drain, FSDP gather and reduce) per gradient-accumulation
// step (build_pipeline_schedule; train_step). Megatron-LM: mbs is the micro-batch, one schedule.
TEST(FrameworkProfileTest, TorchtitanPipelineRunsOneScheduleOfMicrobatchesPerLocalBatch) {
  const Workload t = testing::ProfileWorkload("torchtitan");  // 8 GPUs, gbs 32
  const Config c{{"pp", ParamValue::Int(2)},
                 {"mbs", ParamValue::Int(8)},
                 {"ppMicrobatchSize", ParamValue::Int(2)}};
  const ParallelPlan p = PlanFromConfig(t, c);
  EXPECT_EQ(p.dp, 4);
  EXPECT_EQ(p.micro_batch, 2);
  EXPECT_EQ(p.pipeline_schedules, 1);  // 32 / (4 x 8)
  EXPECT_EQ(p.num_microbatches, 4);
  EXPECT_EQ(p.MicrobatchesPerSchedule(), 4);
  const ParallelPlan m = PlanFromConfig(testing::ProfileWorkload("megatron-lm"), c);
  EXPECT_EQ(m.micro_batch, 8);
  EXPECT_EQ(m.pipeline_schedules, 1);
  EXPECT_EQ(m.num_microbatches, 1);

  // The same eight one-sequence micro-batches per step, as one schedule (local batch 8) or as
  // four (local batch 2): the same compute and activations, four fills and drains.
  const Config one{{"pp", ParamValue::Int(2)}, {"mbs", ParamValue::Int(8)}};
  const Config four{{"pp", ParamValue::Int(2)}, {"mbs", ParamValue::Int(2)}};
  EXPECT_EQ(PlanFromConfig(t, four).pipeline_schedules, 4);
  const Estimate a = EstimateConfig(t, one);
  const Estimate b = EstimateConfig(t, four);
  EXPECT_NEAR(b.time.compute, a.time.compute, 1e-9 * a.time.compute);
  EXPECT_NEAR(b.time.pipeline_bubble / a.time.pipeline_bubble, 4.0, 1e-9);
  EXPECT_DOUBLE_EQ(a.memory.activations_gib, b.memory.activations_gib);
  // Local batch 8 held as one 8-sequence micro-batch would take several times the activations.
  Config whole = one;
  whole["ppMicrobatchSize"] = ParamValue::Int(8);
  EXPECT_GT(EstimateConfig(t, whole).memory.activations_gib, 3.0 * a.memory.activations_gib);
}

// torchtitan FSDP under a pipeline keeps the stage gathered for the whole schedule
// (reshard_after_forward off with pp, no reshard or gradient sync until the schedule's last
// backward): bf16 weights and fp32 accumulated gradients of every stage parameter on top of the
// 16 sharded bytes, where without a pipeline only a block or two are gathered at a time.
TEST(FrameworkProfileTest, TorchtitanPipelineKeepsTheStageGatheredForTheSchedule) {
  const Workload t = testing::ProfileWorkload("torchtitan");                // 8 layers, 8 GPUs
  const Config c{{"pp", ParamValue::Int(2)}, {"mbs", ParamValue::Int(8)}};  // dp 4
  const Estimate e = EstimateConfig(t, c);
  const ModelShape& m = t.model;
  const double stage = 4 * (m.AttentionParams() + m.DenseMlpParams()) + m.EmbeddingParams();
  const double gib = 1024.0 * 1024.0 * 1024.0;
  EXPECT_NEAR(e.memory.gradients_gib, (4.0 / 4 + 4.0) * stage / gib, 0.001 * stage / gib);
  EXPECT_NEAR(e.memory.parameters_gib, (4.0 / 4 + 2.0) * stage / gib, 0.001 * stage / gib);
  // Without the pipeline: the sharded grads only.
  const Estimate flat = EstimateConfig(t, {{"mbs", ParamValue::Int(4)}});
  EXPECT_NEAR(flat.memory.gradients_gib, 4.0 / 8 * m.TotalParams() / gib,
              0.001 * m.TotalParams() / gib);
}

TEST(FrameworkProfileTest, TransformersCapacityLeavesRoomForTheAllocator) {
  const Estimate h = EstimateConfig(testing::ProfileWorkload("transformers"), kConfig);
  const Estimate m = EstimateConfig(testing::ProfileWorkload("megatron-lm"), kConfig);
  EXPECT_DOUBLE_EQ(m.capacity_gib, 79.11);
  // CUDA context + one fp32 logits block of 4096 x 128256 (1.96 GiB).
  EXPECT_NEAR(h.capacity_gib, 79.11 - 0.5 - 1.957, 0.01);
}

TEST(FrameworkProfileTest, WorkloadFieldsReachTheShape) {
  const Workload w = testing::ProfileWorkload(
      "megatron-lm", "bf16", ", activation: gelu, tiedEmbeddings: true, headDim: 64");
  EXPECT_FALSE(w.model.swiglu);
  EXPECT_TRUE(w.model.tied_embeddings);
  EXPECT_EQ(w.model.HeadDim(), 64);
  const Workload llama = testing::ProfileWorkload("megatron-lm");
  EXPECT_TRUE(llama.model.swiglu);
  EXPECT_EQ(llama.model.HeadDim(), 128);
  EXPECT_LT(w.model.TotalParams(), llama.model.TotalParams());
}

}  // namespace
}  // namespace paratune
