#include "agents/model/catalog.h"

#include <algorithm>
#include <cctype>

namespace paratune {

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const std::vector<std::string> k2dSlices = {"1x1", "2x2", "2x4",  "4x4",
                                            "4x8", "8x8", "8x16", "16x16"};
const std::vector<std::string> k3dSlices = {"2x2x1",  "2x2x2",   "2x2x4",   "2x4x4",
                                            "4x4x4",  "4x4x8",   "4x8x8",   "8x8x8",
                                            "8x8x16", "8x16x16", "16x16x16"};

std::vector<Accelerator> BuildAccelerators() {
  std::vector<Accelerator> a;
  // GPUs: hbm_gib is what torch.cuda reports as total capacity; NVLink is bidirectional per
  // GPU; scale-out is the per-GPU NIC (A100 HDR 200 Gb/s, H100/H200/B200 NDR/XDR 400 Gb/s).
  a.push_back(
      {"nvidia-a100-80gb",
       false,
       312,
       0,
       79.15,
       2039,
       600,
       25,
       8,
       {},
       {"nvidia-a100-sxm4-80gb", "a100-80gb", "a100"},
       "nvidia-a100-80gb",
       "NVIDIA A100 datasheet (SXM4 80GB): 312 TFLOP/s bf16 dense, 2,039 GB/s, NVLink 600 GB/s"});
  // Volta has no bf16 tensor cores: bf16_tflops holds the fp16 tensor peak, and the launch
  // checks refuse bf16 on it (constraints.cc). Scale-out: DGX-1's 4 x 100 Gb/s for 8 GPUs.
  // hbm_gib: torch's total_memory (nvidia-smi 32510 / 16160 MiB).
  a.push_back({"nvidia-v100-32gb",
               false,
               125,
               0,
               31.75,
               900,
               300,
               6.25,
               8,
               {},
               {"nvidia-tesla-v100-sxm2-32gb", "v100-32gb"},
               "",
               "NVIDIA V100 datasheet (SXM2 32GB): 125 TFLOP/s fp16 tensor, 900 GB/s, NVLink "
               "300 GB/s; no bf16"});
  a.push_back({"nvidia-v100-16gb",
               false,
               125,
               0,
               15.78,
               900,
               300,
               6.25,
               8,
               {},
               {"nvidia-tesla-v100-sxm2-16gb", "v100-16gb", "v100"},
               "nvidia-tesla-v100",
               "NVIDIA V100 datasheet (SXM2 16GB): 125 TFLOP/s fp16 tensor, 900 GB/s, NVLink "
               "300 GB/s; no bf16"});
  a.push_back(
      {"nvidia-h100-80gb",
       false,
       989,
       1979,
       79.11,
       3350,
       900,
       50,
       8,
       {},
       {"nvidia-h100-mega-80gb", "nvidia-h100-sxm5-80gb", "h100-80gb", "h100"},
       "nvidia-h100-80gb",
       "NVIDIA H100 SXM datasheet: 989 TFLOP/s bf16 dense, 1,979 fp8, 3.35 TB/s, NVLink 900 GB/s"});
  // Meta's Grand Teton H100 (torchtitan's benchmarks/llama3_h100_202412_torchtitan.md, "Hardware"):
  // 96 GB HBM2e at 2.4 TB/s, run at its default 500 W power limit; "the actual peak TFLOPs number
  // is between SXM and NVL" (989 and 835 dense bf16): their geometric mean. Usable capacity
  // scaled from the 80 GB part's (79.11 of 80 GiB).
  a.push_back({"nvidia-h100-96gb-500w",
               false,
               909,
               1817,
               94.93,
               2400,
               900,
               50,
               8,
               {},
               {"h100-hbm2e-96gb", "h100-96gb"},
               "",
               "torchtitan llama3_h100_202412 benchmark hardware: H100 96GB HBM2e, 2.4 TB/s, "
               "500 W limit, peak between H100 SXM (989) and NVL (835) TFLOP/s bf16"});
  a.push_back(
      {"nvidia-h200",
       false,
       989,
       1979,
       139.8,
       4800,
       900,
       50,
       8,
       {},
       {"nvidia-h200-141gb", "h200"},
       "nvidia-h200-141gb",
       "NVIDIA H200 datasheet: 989 TFLOP/s bf16 dense, 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s"});
  a.push_back({"nvidia-b200",
               false,
               2250,
               4500,
               178.4,
               8000,
               1800,
               50,
               8,
               {},
               {"nvidia-b200-180gb", "b200"},
               "nvidia-b200",
               "NVIDIA DGX B200 datasheet: ~2.25 PFLOP/s bf16 dense per GPU, ~180 GB, 8 TB/s, "
               "NVLink5 1.8 TB/s"});
  // TPUs: hbm_gib is XLA's hbm limit; ICI is bidirectional per chip; DCN ~ 200 Gb/s per host
  // shared by its 4 chips.
  a.push_back(
      {"tpu-v4",
       true,
       275,
       0,
       31.25,
       1200,
       270,
       6.25,
       4,
       k3dSlices,
       {"tpu-v4-podslice", "v4"},
       "tpu-v4-podslice",
       "Google Cloud TPU v4 docs: 275 TFLOP/s bf16, 32 GiB HBM2, 1,200 GB/s, 3D torus ICI"});
  a.push_back(
      {"tpu-v5e",
       true,
       197,
       0,
       15.75,
       819,
       400,
       6.25,
       4,
       k2dSlices,
       {"tpu-v5-lite-podslice", "tpu-v5-lite-device", "v5e", "v5litepod"},
       "tpu-v5-lite-podslice",
       "Google Cloud TPU v5e docs: 197 TFLOP/s bf16, 16 GB HBM2, 819 GB/s, ICI 400 GB/s bidi"});
  a.push_back({"tpu-v5p",
               true,
               459,
               0,
               95.74,
               2765,
               1200,
               6.25,
               4,
               k3dSlices,
               {"tpu-v5p-slice", "v5p"},
               "tpu-v5p-slice",
               "Google Cloud TPU v5p docs: 459 TFLOP/s bf16, 95 GiB HBM2e, 2,765 GB/s, ICI 1,200 "
               "GB/s bidi"});
  a.push_back(
      {"tpu-v6e",
       true,
       918,
       0,
       31.25,
       1638,
       800,
       6.25,
       4,
       k2dSlices,
       {"tpu-v6e-slice", "v6e", "trillium"},
       "tpu-v6e-slice",
       "Google Cloud TPU v6e docs: 918 TFLOP/s bf16, 32 GB HBM, 1,638 GB/s, ICI 800 GB/s bidi"});
  for (auto& acc : a) {
    if (acc.name == "nvidia-h100-80gb" || acc.name == "nvidia-h200" ||
        acc.name == "nvidia-h100-96gb-500w") {
      acc.kernel_efficiency = 0.85;
    }
    if (acc.name == "nvidia-b200") acc.kernel_efficiency = 0.80;
  }
  return a;
}

}  // namespace

double Accelerator::PeakTflops(std::string_view precision) const {
  if (precision == "fp8" && fp8_tflops > 0) return fp8_tflops;
  return bf16_tflops;
}

const std::vector<Accelerator>& Accelerators() {
  static const std::vector<Accelerator> kAll = BuildAccelerators();
  return kAll;
}

const Accelerator* FindAccelerator(std::string_view name) {
  for (const auto& a : Accelerators()) {
    if (EqualsIgnoreCase(a.name, name) || EqualsIgnoreCase(a.gke_label, name)) return &a;
    for (const auto& alias : a.aliases) {
      if (EqualsIgnoreCase(alias, name)) return &a;
    }
  }
  return nullptr;
}

double ModelShape::AttentionParams() const {
  if (attention_params_override > 0) return static_cast<double>(attention_params_override);
  const double h = static_cast<double>(hidden_size);
  const double q = static_cast<double>(num_attention_heads * HeadDim());
  const double kv = static_cast<double>(num_query_groups * (HeadDim() + VHeadDim()));
  const double out = static_cast<double>(num_attention_heads * VHeadDim());
  return h * (q + kv) + out * h + 2 * h;  // QKV, output projection, two norms
}

double ModelShape::DenseMlpParams() const {
  return (swiglu ? 3.0 : 2.0) * static_cast<double>(hidden_size) *
         static_cast<double>(ffn_hidden_size);
}

double ModelShape::ExpertParams() const {
  return (swiglu ? 3.0 : 2.0) * static_cast<double>(hidden_size) *
         static_cast<double>(moe_ffn_hidden_size);
}

double ModelShape::SharedExpertParams() const {
  return (swiglu ? 3.0 : 2.0) * static_cast<double>(hidden_size) *
         static_cast<double>(moe_shared_ffn_hidden_size);
}

double ModelShape::RouterParams() const {
  return static_cast<double>(hidden_size) * static_cast<double>(num_experts);
}

double ModelShape::EmbeddingParams() const {
  return static_cast<double>(vocab_size) * static_cast<double>(hidden_size);
}

double ModelShape::TotalParams() const {
  const double dense_layers = static_cast<double>(num_layers - MoeLayers());
  const double moe_layers = static_cast<double>(MoeLayers());
  double p = static_cast<double>(num_layers) * AttentionParams() + dense_layers * DenseMlpParams();
  p += moe_layers *
       (static_cast<double>(num_experts) * ExpertParams() + SharedExpertParams() + RouterParams());
  return p + EmbeddingParams() * (tied_embeddings ? 1 : 2);
}

double ModelShape::ActiveParams() const {
  const double dense_layers = static_cast<double>(num_layers - MoeLayers());
  const double moe_layers = static_cast<double>(MoeLayers());
  double p = static_cast<double>(num_layers) * AttentionParams() + dense_layers * DenseMlpParams();
  p += moe_layers *
       (static_cast<double>(moe_top_k) * ExpertParams() + SharedExpertParams() + RouterParams());
  return p + EmbeddingParams() * (tied_embeddings ? 1 : 2);
}

double ModelShape::ForwardMatmulFlopsPerToken() const {
  // Active parameters minus the input embedding (a lookup) and the norms; the output layer is a
  // GEMM even when tied.
  const double norms = 2.0 * static_cast<double>(hidden_size * num_layers);
  return 2.0 * (ActiveParams() - norms - (tied_embeddings ? 0 : EmbeddingParams()));
}

}  // namespace paratune
