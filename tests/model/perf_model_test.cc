#include "agents/model/perf_model.h"

#include <gtest/gtest.h>

namespace paratune {
namespace {

Workload Llama8bOnH100(int64_t nodes = 1) {
  Workload w;
  w.model = *FindModelPreset("llama3-8b");
  w.training.seq_length = 8192;
  w.training.global_batch_size = 512;
  w.hardware.accelerator = "nvidia-h100-80gb";
  w.hardware.nodes = nodes;
  w.hardware.devices_per_node = 8;
  w.accel = FindAccelerator("nvidia-h100-80gb");
  w.devices = 8 * nodes;
  return w;
}

Config C(std::initializer_list<std::pair<const char*, ParamValue>> kv) {
  Config c;
  for (const auto& [k, v] : kv) c[k] = v;
  return c;
}

using PV = ParamValue;

TEST(PerfModelTest, EffectiveConfigFillsMegatronDefaults) {
  Workload w = Llama8bOnH100();
  Config c = EffectiveConfig(w, C({{"tp", PV::Int(2)}}));
  EXPECT_EQ(c.at("pp").AsInt(), 1);
  EXPECT_EQ(c.at("mbs").AsInt(), 1);
  EXPECT_EQ(c.at("recompute").AsString(), "none");
  EXPECT_TRUE(c.at("sequenceParallel").AsBool());  // on by default when tp > 1
  EXPECT_FALSE(c.at("distributedOptimizer").AsBool());
  EXPECT_EQ(c.count("iciFsdp"), 0u);
  EXPECT_FALSE(EffectiveConfig(w, C({{"tp", PV::Int(1)}})).at("sequenceParallel").AsBool());
}

TEST(PerfModelTest, EffectiveConfigFillsMaxTextDefaults) {
  Workload w = Llama8bOnH100();
  w.accel = FindAccelerator("tpu-v5e");
  w.devices = 16;
  w.training.framework = "maxtext";
  w.training.global_batch_size = 64;
  Config c = EffectiveConfig(w, C({{"iciTensor", PV::Int(2)}}));
  EXPECT_EQ(c.at("iciFsdp").AsInt(), 8);  // the "-1" fill: all remaining chips
  EXPECT_EQ(c.at("perDeviceBatchSize").AsInt(), 4);
  EXPECT_EQ(c.at("remat").AsString(), "full");
  EXPECT_EQ(c.count("tp"), 0u);
}

TEST(PerfModelTest, ConstraintsNameTheKeys) {
  Workload w = Llama8bOnH100();
  auto v = CheckConstraints(w, C({{"tp", PV::Int(3)}}));
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v[0].find("tp"), std::string::npos);
  bool heads = false;
  for (const auto& s : v) heads = heads || s == "numAttentionHeads 32 is not divisible by tp 3";
  EXPECT_TRUE(heads);
  EXPECT_TRUE(CheckConstraints(w, C({{"tp", PV::Int(8)}, {"pp", PV::Int(1)}})).empty());
  // Query groups: llama3-8b has 8, so tp 16 breaks them (and devices).
  EXPECT_FALSE(CheckConstraints(Llama8bOnH100(2), C({{"tp", PV::Int(16)}})).empty());
  auto batch = CheckConstraints(w, C({{"mbs", PV::Int(3)}}));
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_NE(batch[0].find("globalBatchSize 512"), std::string::npos);
  EXPECT_FALSE(CheckConstraints(w, C({{"ep", PV::Int(2)}})).empty());  // dense model
  EXPECT_FALSE(CheckConstraints(w, C({{"overlapParamGather", PV::Bool(true)}})).empty());
  EXPECT_FALSE(CheckConstraints(w, C({{"pp", PV::Int(3)}})).empty());
  // A broken configuration is still estimated, but never fits; a zero size is not estimated.
  Estimate broken = EstimateConfig(w, C({{"tp", PV::Int(3)}}));
  EXPECT_FALSE(broken.fits);
  EXPECT_FALSE(broken.violations.empty());
  EXPECT_GT(broken.step_time_seconds, 0);
  Estimate zero = EstimateConfig(w, C({{"tp", PV::Int(0)}}));
  EXPECT_FALSE(zero.fits);
  EXPECT_EQ(zero.violations.at(0), "tp 0 must be at least 1");
  EXPECT_EQ(zero.step_time_seconds, 0);
}

TEST(PerfModelTest, MemoryOrdersAsTheTheorySays) {
  Workload w = Llama8bOnH100();
  auto peak = [&](Config c) { return EstimateConfig(w, c).peak_memory_gib; };
  // Recompute: none > selective > full.
  const double none = peak(C({{"tp", PV::Int(2)}, {"recompute", PV::Enum("none")}}));
  const double sel = peak(C({{"tp", PV::Int(2)}, {"recompute", PV::Enum("selective")}}));
  const double full = peak(C({{"tp", PV::Int(2)}, {"recompute", PV::Enum("full")}}));
  EXPECT_GT(none, sel);
  EXPECT_GT(sel, full);
  // The distributed optimizer shards 12 of 18 bytes per parameter over dp.
  const double std_opt = peak(C({{"tp", PV::Int(2)}}));
  const double dist_opt = peak(C({{"tp", PV::Int(2)}, {"distributedOptimizer", PV::Bool(true)}}));
  const double params_per_gpu = w.model.TotalParams() / 2;
  EXPECT_NEAR((std_opt - dist_opt) * 1024 * 1024 * 1024, params_per_gpu * 12 * 3 / 4,
              0.01 * params_per_gpu);
  // Llama 3 8B with tp 1, no distributed optimizer: 18 bytes x 8B params does not fit 80 GB.
  Estimate e = EstimateConfig(w, C({{"tp", PV::Int(1)}}));
  EXPECT_FALSE(e.fits);
  EXPECT_EQ(e.bottleneck, "memory-capacity");
  EXPECT_NEAR(e.memory.parameters_gib + e.memory.gradients_gib + e.memory.optimizer_gib,
              18 * w.model.TotalParams() / (1024.0 * 1024 * 1024), 0.01);
}

TEST(PerfModelTest, TimeReactsToParallelism) {
  Workload w = Llama8bOnH100();
  Estimate tp2 = EstimateConfig(w, C({{"tp", PV::Int(2)},
                                      {"recompute", PV::Enum("selective")},
                                      {"distributedOptimizer", PV::Bool(true)}}));
  ASSERT_TRUE(tp2.fits) << tp2.peak_memory_gib;
  EXPECT_GT(tp2.mfu, 0.30);
  EXPECT_LT(tp2.mfu, 0.70);
  EXPECT_GT(tp2.time.tensor_parallel, 0);
  EXPECT_EQ(tp2.time.pipeline_bubble, 0);
  // Full recompute costs about a third more compute than none.
  Estimate full = EstimateConfig(w, C({{"tp", PV::Int(2)},
                                       {"recompute", PV::Enum("full")},
                                       {"distributedOptimizer", PV::Bool(true)}}));
  EXPECT_GT(full.step_time_seconds, 1.15 * tp2.step_time_seconds);
  EXPECT_GT(full.hfu, full.mfu * 1.25);
  // Pipeline: bubble (pp-1)/m of a step, smaller with interleaving.
  Config pp4 = C({{"pp", PV::Int(4)}, {"mbs", PV::Int(1)}});
  Estimate e4 = EstimateConfig(w, pp4);
  pp4["vpp"] = PV::Int(2);
  Estimate e4v = EstimateConfig(w, pp4);
  EXPECT_GT(e4.time.pipeline_bubble, 0);
  EXPECT_NEAR(e4v.time.pipeline_bubble / e4.time.pipeline_bubble, 0.5, 0.05);
  // Tensor parallelism across nodes (over InfiniBand) is much slower than within one.
  Workload two = Llama8bOnH100(2);
  Estimate in_node = EstimateConfig(two, C({{"tp", PV::Int(8)}}));
  two.hardware.devices_per_node = 4;
  Estimate across = EstimateConfig(two, C({{"tp", PV::Int(8)}}));
  EXPECT_GT(across.time.tensor_parallel, 5 * in_node.time.tensor_parallel);
}

TEST(PerfModelTest, AGradientGroupAcrossNodesUsesTheNicsOfItsMembers) {
  // 8 nodes of 8: at tp 1 the gradient group has 8 members in each node and its rings leave
  // through 8 NICs (NCCL's multi-NIC rings); at tp 8 each group has one member per node and one
  // NIC. Each device's gradient shrinks by 8 with tp 8, so the two all-reduces take about as
  // long: only the ring factors (63/64 against 7/8) differ. One NIC per device would make tp 1's
  // 8 times slower than that.
  Workload w = Llama8bOnH100(8);
  Estimate tp1 = EstimateConfig(w, C({{"tp", PV::Int(1)}}));
  Estimate tp8 = EstimateConfig(w, C({{"tp", PV::Int(8)}}));
  ASSERT_GT(tp8.time.data_parallel, 0);
  EXPECT_NEAR(tp1.time.data_parallel / tp8.time.data_parallel, (63.0 / 64) / (7.0 / 8), 0.05);
  // Inside one node the same group runs over NVLink, faster still.
  Workload one = Llama8bOnH100(1);
  Estimate in_node = EstimateConfig(one, C({{"tp", PV::Int(1)}}));
  EXPECT_LT(in_node.time.data_parallel / (7.0 / 8), tp1.time.data_parallel / (63.0 / 64));
}

TEST(PerfModelTest, OverlapHidesDataParallelTime) {
  Workload w = Llama8bOnH100(4);
  Config base = C({{"tp", PV::Int(4)}, {"distributedOptimizer", PV::Bool(true)}});
  Estimate plain = EstimateConfig(w, base);
  base["overlapGradReduce"] = PV::Bool(true);
  base["overlapParamGather"] = PV::Bool(true);
  Estimate overlapped = EstimateConfig(w, base);
  EXPECT_GT(plain.time.data_parallel, 0);
  EXPECT_LT(overlapped.time.data_parallel, 0.5 * plain.time.data_parallel);
  EXPECT_LT(overlapped.step_time_seconds, plain.step_time_seconds);
}

TEST(PerfModelTest, MoeExpertsShardUnderEp) {
  Workload w = Llama8bOnH100();
  w.model = *FindModelPreset("mixtral-8x7b");
  w.training.seq_length = 4096;
  w.training.global_batch_size = 256;
  Estimate ep1 = EstimateConfig(w, C({{"tp", PV::Int(2)}, {"pp", PV::Int(4)}}));
  Estimate ep2 = EstimateConfig(w, C({{"tp", PV::Int(2)}, {"pp", PV::Int(2)}, {"ep", PV::Int(2)}}));
  EXPECT_TRUE(ep1.violations.empty());
  EXPECT_TRUE(ep2.violations.empty());
  EXPECT_GT(ep2.time.expert_parallel, 0);
  EXPECT_EQ(ep1.time.expert_parallel, 0);
  auto bad = CheckConstraints(w, C({{"ep", PV::Int(3)}}));
  ASSERT_FALSE(bad.empty());
}

TEST(PerfModelTest, TpuMeshAndRemat) {
  Workload w = Llama8bOnH100();
  w.model = *FindModelPreset("llama2-7b");
  w.accel = FindAccelerator("tpu-v5e");
  w.devices = 16;
  w.training.framework = "maxtext";
  w.training.seq_length = 2048;
  w.training.global_batch_size = 32;
  auto v = CheckConstraints(w, C({{"iciFsdp", PV::Int(4)}, {"iciTensor", PV::Int(2)}}));
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v[0].find("16 chips"), std::string::npos);
  Estimate full = EstimateConfig(w, C({{"remat", PV::Enum("full")}}));
  Estimate minimal = EstimateConfig(w, C({{"remat", PV::Enum("minimal")}}));
  EXPECT_TRUE(full.violations.empty());
  EXPECT_GT(minimal.memory.activations_gib, full.memory.activations_gib);
  EXPECT_GT(full.hfu, full.mfu * 1.25);
  EXPECT_LT(full.peak_memory_gib, 15.75);  // 7B over 16 v5e chips with full remat fits
  // Bigger per-device batch with minimal remat overflows 16 GB HBM.
  Estimate big =
      EstimateConfig(w, C({{"remat", PV::Enum("minimal")}, {"perDeviceBatchSize", PV::Int(8)}}));
  EXPECT_FALSE(big.fits);
}

TEST(PerfModelTest, CalibrationMultipliersMoveTheEstimate) {
  Workload w = Llama8bOnH100();
  Config c = C({{"tp", PV::Int(4)}});
  Estimate base = EstimateConfig(w, c);
  Calibration slow;
  slow.compute_efficiency = 0.8;
  slow.memory_overhead_gib = 3;
  Estimate cal = EstimateConfig(w, c, slow);
  EXPECT_GT(cal.step_time_seconds, base.step_time_seconds * 1.15);
  EXPECT_NEAR(cal.peak_memory_gib - base.peak_memory_gib, 3.0, 1e-9);
}

}  // namespace
}  // namespace paratune
