// The model against published measurements. Tolerances: a per-row bound that a first-order
// analytic model can defend (no per-row fitting: one set of constants for all rows), and a
// tighter bound on the table's mean error. The errors reached are printed by
// bench/model_estimate_bench.cc and recorded in docs/model.md.
#include <gtest/gtest.h>

#include "agents/model/activation_memory.h"
#include "agents/model/model_internal.h"
#include "testing/eval/published.h"

namespace paratune {
namespace {

// Narayanan et al., SC'21, Table 1: predicted TFLOP/s/GPU (hardware FLOPs, their Eq. 3) for
// every row, with their configuration (full recompute, fp16, s 2048, V 51,200).
TEST(CalibrationTest, MegatronSc21Table1) {
  const PublishedTable t = Sc21Table1();
  ASSERT_EQ(t.cases.size(), 10u);
  const TableError err = EvaluateTable(t, ModelConstants::Defaults());
  for (size_t i = 0; i < t.cases.size(); ++i) {
    EXPECT_NEAR(err.predicted[i], t.cases[i].published, 0.10 * t.cases[i].published)
        << t.cases[i].label;
  }
  EXPECT_LT(err.mean_abs_pct, 5.0);
}

// The model's FLOP count equals SC'21 Eq. 3 (with recompute): 96 B s l h^2 (1 + s/(6h) +
// V/(16 l h)) per step, and the no-recompute model FLOPs of Korthikanti et al.
// 72 B s l h^2 (1 + s/(6h) + V/(12 h l)).
TEST(CalibrationTest, FlopCountsMatchTheClosedForms) {
  const PublishedTable t = Sc21Table1();
  for (const auto& c : t.cases) {
    const ModelShape& m = c.workload.model;
    const double s = 2048, l = static_cast<double>(m.num_layers),
                 h = static_cast<double>(m.hidden_size), V = 51200;
    const double per_token_model = internal::ModelFlopsPerToken(m, s);
    EXPECT_NEAR(per_token_model, 72 * l * h * h * (1 + s / (6 * h) + V / (12 * h * l)),
                1e-9 * per_token_model);
    Estimate e = EstimateConfig(c.workload, c.config);
    const double B = static_cast<double>(c.workload.training.global_batch_size);
    const double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    const double hw = e.hardware_tflops_per_device * 1e12 * e.step_time_seconds *
                      static_cast<double>(c.workload.devices);
    EXPECT_NEAR(hw, eq3, 1e-6 * eq3) << c.label;
  }
}

// Korthikanti et al. 2022, Table 2: activation bytes per layer. For a GPT layer the general
// formula (GQA/SwiGLU/flash aware) reduces exactly to the paper's closed forms.
TEST(CalibrationTest, KorthikantiActivationFormulasExact) {
  ModelShape gpt;
  gpt.num_layers = 48;
  gpt.hidden_size = 6144;
  gpt.ffn_hidden_size = 4 * 6144;
  gpt.num_attention_heads = 64;
  gpt.num_query_groups = 64;
  gpt.vocab_size = 51200;
  gpt.swiglu = false;
  gpt.dropout = true;
  const double s = 2048, b = 1, h = 6144, a = 64;
  for (int64_t t : {1, 2, 4, 8}) {
    for (bool sp : {false, true}) {
      if (t == 1 && sp) continue;
      LayerActivationInput in{s, s, b, t, sp, /*flash_attention=*/false, false};
      const double td = static_cast<double>(t);
      EXPECT_DOUBLE_EQ(LayerActivationBytes(gpt, in),
                       KorthikantiBytesPerLayer(s, b, h, a, td, sp, Recompute::kNone));
      EXPECT_DOUBLE_EQ(LayerActivationBytesSelective(gpt, in),
                       KorthikantiBytesPerLayer(s, b, h, a, td, sp, Recompute::kSelective));
      if (!sp) {
        EXPECT_DOUBLE_EQ(LayerActivationBytesFull(gpt, in), 2 * s * b * h);
      }
    }
  }
  // The closed forms themselves (Table 2 rows).
  const double sbh = s * b * h;
  EXPECT_DOUBLE_EQ(KorthikantiBytesPerLayer(s, b, h, a, 1, false, Recompute::kNone),
                   sbh * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(KorthikantiBytesPerLayer(s, b, h, a, 8, false, Recompute::kNone),
                   sbh * (10 + 24.0 / 8 + 5 * a * s / (h * 8)));
  EXPECT_DOUBLE_EQ(KorthikantiBytesPerLayer(s, b, h, a, 8, true, Recompute::kSelective),
                   34 * sbh / 8);
}

// Korthikanti et al. Fig. 1: the 22B model (h 6144, 48 layers, 64 heads, tp 8) holds about
// 45.6 GiB of parameters + gradients + optimizer state per GPU; under 1F1B the first stage keeps
// the activations of all layers regardless of pp.
TEST(CalibrationTest, KorthikantiStateMemoryAndPipelineInFlight) {
  const auto* a100 = FindAccelerator("nvidia-a100-80gb");
  Workload w;
  w.model.name = "22B";
  w.model.num_layers = 48;
  w.model.hidden_size = 6144;
  w.model.ffn_hidden_size = 4 * 6144;
  w.model.num_attention_heads = 64;
  w.model.num_query_groups = 64;
  w.model.vocab_size = 51200;
  w.model.swiglu = false;
  w.model.tied_embeddings = true;
  w.model.dropout = true;
  w.training.seq_length = 2048;
  w.training.global_batch_size = 64;
  w.accel = a100;
  w.devices = 8;
  w.training.attention = "unfused";
  Config c{{"tp", ParamValue::Int(8)},
           {"recompute", ParamValue::Enum("selective")},
           {"sequenceParallel", ParamValue::Bool(true)}};
  Estimate e = EstimateConfig(w, c);
  const double state = e.memory.parameters_gib + e.memory.gradients_gib + e.memory.optimizer_gib;
  EXPECT_NEAR(state, 45.6, 0.03 * 45.6);
  // Activations: pp 1 keeps one micro-batch of 48 layers; pp 4 (first stage: 12 layers x 4
  // micro-batches in flight) keeps the same; interleaving adds (p-1)/(p v).
  w.devices = 32;
  auto act = [&](int64_t pp, int64_t vpp) {
    Config cc = c;
    cc["pp"] = ParamValue::Int(pp);
    cc["vpp"] = ParamValue::Int(vpp);
    cc["recompute"] = ParamValue::Enum("none");
    return EstimateConfig(w, cc).memory.activations_gib;
  };
  const double per_layer = KorthikantiBytesPerLayer(2048, 1, 6144, 64, 8, true, Recompute::kNone);
  const double layers_all = 48 * per_layer / (1024.0 * 1024 * 1024);
  const double gib_per_layer = per_layer / (1024.0 * 1024 * 1024);
  // + one layer's working set (the layer being back-propagated); no logits on the first stage.
  EXPECT_NEAR(act(4, 1), layers_all + gib_per_layer, 1e-6);
  EXPECT_NEAR(act(2, 1), layers_all + gib_per_layer, 1e-6);
  EXPECT_NEAR(act(4, 3), layers_all * (1 + 3.0 / (4 * 3)) + gib_per_layer, 1e-6);
}

// MaxText README MFU table, with the configs of MaxText/configs/v5e and v5p.
TEST(CalibrationTest, MaxTextMfuTable) {
  const PublishedTable t = MaxTextMfuTable();
  const TableError err = EvaluateTable(t, ModelConstants::Defaults());
  for (size_t i = 0; i < t.cases.size(); ++i) {
    EXPECT_NEAR(err.predicted[i], t.cases[i].published, 0.12 * t.cases[i].published)
        << t.cases[i].label;
  }
  EXPECT_LT(err.mean_abs_pct, 6.0);
}

}  // namespace
}  // namespace paratune
