#include "testing/eval/published.h"

#include <cmath>

namespace paratune {

namespace {

Workload Make(const ModelShape& m, const char* accel, int64_t devices, int64_t per_node,
              int64_t seq, int64_t gbs, const char* precision, const char* framework) {
  Workload w;
  w.model = m;
  w.training.framework = framework;
  w.training.seq_length = seq;
  w.training.global_batch_size = gbs;
  w.training.precision = precision;
  w.hardware.accelerator = accel;
  w.hardware.devices_per_node = per_node;
  w.hardware.nodes = devices / per_node;
  w.accel = FindAccelerator(accel);
  w.devices = devices;
  return w;
}

ModelShape Shape(const char* name, int64_t layers, int64_t hidden, int64_t ffn, int64_t heads,
                 int64_t vocab) {
  ModelShape m;
  m.name = name;
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.ffn_hidden_size = ffn;
  m.num_attention_heads = heads;
  m.num_query_groups = heads;
  m.vocab_size = vocab;
  return m;
}

}  // namespace

PublishedTable Sc21Table1() {
  struct Row {
    const char* label;
    int64_t heads, h, layers, tp, pp, gpus, batch;
    double tflops;
  };
  static const Row kRows[] = {
      {"1.7B", 24, 2304, 24, 1, 1, 32, 512, 137},
      {"3.6B", 32, 3072, 30, 2, 1, 64, 512, 138},
      {"7.5B", 32, 4096, 36, 4, 1, 128, 512, 142},
      {"18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135},
      {"39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138},
      {"76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140},
      {"145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148},
      {"310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155},
      {"529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163},
      {"1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163},
  };
  PublishedTable t{"Megatron-LM SC'21 Table 1 (TFLOP/s/GPU, A100)",
                   "Narayanan et al., SC'21, Table 1 (weak scaling)",
                   {}};
  for (const auto& r : kRows) {
    ModelShape m = Shape(r.label, r.layers, r.h, 4 * r.h, r.heads, 51200);
    m.swiglu = false;
    m.tied_embeddings = true;
    m.dropout = true;
    Workload w = Make(m, "nvidia-a100-80gb", r.gpus, 8, 2048, r.batch, "fp16", "megatron-lm");
    w.training.attention = "unfused";
    Config c{{"tp", ParamValue::Int(r.tp)},
             {"pp", ParamValue::Int(r.pp)},
             {"mbs", ParamValue::Int(1)},
             {"recompute", ParamValue::Enum("full")},
             {"sequenceParallel", ParamValue::Bool(false)}};
    std::string label = std::string(r.label) + " tp" + std::to_string(r.tp) + " pp" +
                        std::to_string(r.pp) + " " + std::to_string(r.gpus) + " GPUs";
    t.cases.push_back({label, w, c, r.tflops, PublishedMetric::kHardwareTflopsPerDevice});
  }
  return t;
}

PublishedTable MaxTextMfuTable() {
  struct Row {
    const char* label;
    const char* accel;
    int64_t chips, emb, heads, mlp, layers, pdbs;
    const char* remat;
    int64_t fsdp, tensor;
    double mfu;
  };
  // global_parameter_scale s: emb 2048, heads 16, mlp 7168, layers 16 (base.yml) scaled per
  // pyconfig.get_individual_scales; head_dim 128, vocab 32000, SwiGLU, seq 2048.
  static const Row kRows[] = {
      {"16B v5e-256", "tpu-v5e", 256, 4096, 64, 28672, 32, 6, "full", 256, 1, 61.1},
      {"32B v5e-256", "tpu-v5e", 256, 8192, 64, 28672, 32, 4, "full", 256, 1, 66.9},
      {"64B v5e-256", "tpu-v5e", 256, 8192, 64, 28672, 64, 2, "full", 256, 1, 59.9},
      {"128B v5e-256", "tpu-v5e", 256, 8192, 128, 57344, 64, 1, "minimal_offloaded", 16, 16, 56.1},
      {"32B v5p-128", "tpu-v5p", 64, 8192, 64, 28672, 32, 7, "minimal", 16, 4, 69.0},
      {"64B v5p-128", "tpu-v5p", 64, 8192, 64, 28672, 64, 3, "minimal", 16, 4, 70.3},
      {"128B v5p-256", "tpu-v5p", 128, 8192, 128, 57344, 64, 1, "minimal", 16, 8, 68.7},
      {"256B v5p-1024", "tpu-v5p", 512, 16384, 128, 57344, 64, 1, "minimal", 64, 8, 68.8},
  };
  PublishedTable t{"MaxText README MFU (%)",
                   "MaxText README performance table; configs MaxText/configs/v5e, v5p",
                   {}};
  for (const auto& r : kRows) {
    ModelShape m = Shape(r.label, r.layers, r.emb, r.mlp, r.heads, 32000);
    m.head_dim = 128;
    Workload w = Make(m, r.accel, r.chips, 4, 2048, r.pdbs * r.chips, "bf16", "maxtext");
    Config c{{"iciFsdp", ParamValue::Int(r.fsdp)},
             {"iciTensor", ParamValue::Int(r.tensor)},
             {"perDeviceBatchSize", ParamValue::Int(r.pdbs)},
             {"remat", ParamValue::Enum(r.remat)}};
    t.cases.push_back({r.label, w, c, r.mfu, PublishedMetric::kMfuPercent});
  }
  return t;
}

TableError EvaluateTable(const PublishedTable& t, const ModelConstants& k) {
  TableError err;
  for (const auto& c : t.cases) {
    const Estimate e = EstimatePlan(c.workload, PlanFromConfig(c.workload, c.config), {}, k);
    const double p =
        c.metric == PublishedMetric::kMfuPercent ? 100.0 * e.mfu : e.hardware_tflops_per_device;
    err.predicted.push_back(p);
    const double pct = std::fabs(p - c.published) / c.published * 100.0;
    err.mean_abs_pct += pct / static_cast<double>(t.cases.size());
    err.max_abs_pct = std::max(err.max_abs_pct, pct);
  }
  return err;
}

}  // namespace paratune
