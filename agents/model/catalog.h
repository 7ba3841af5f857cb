// The hardware and model catalogs the performance model reasons over. Every entry carries the
// public source its figures come from. Both catalogs are immutable, built once on first use and
// safe to read from any thread.
#ifndef PARATUNE_AGENTS_MODEL_CATALOG_H_
#define PARATUNE_AGENTS_MODEL_CATALOG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paratune {

// One accelerator (per device: one GPU, or one TPU chip).
struct Accelerator {
  std::string name;  // catalog name, e.g. "nvidia-h100-80gb", "tpu-v5e"
  bool tpu = false;
  double bf16_tflops = 0;  // dense peak
  double fp8_tflops = 0;   // dense peak; 0 = fp8 not supported
  double hbm_gib = 0;      // usable capacity as the framework reports it (torch / XLA), GiB
  double hbm_gbps = 0;     // HBM bandwidth, GB/s
  // Scale-up link per device, bidirectional GB/s (NVLink, or TPU ICI); collectives see about
  // half of it per direction.
  double scale_up_gbps = 0;
  // Scale-out per device, unidirectional GB/s (InfiniBand/RoCE NIC share, or TPU DCN share).
  double scale_out_gbps = 0;
  int devices_per_node_default = 8;
  std::vector<std::string> tpu_topologies;  // valid slice shapes (TPU only)
  std::vector<std::string> aliases;         // GKE node-label values that name this device
  std::string gke_label;                    // cloud.google.com/gke-(tpu-)accelerator value
  std::string source;
  // Fraction of the A100-calibrated kernel efficiency this device's large GEMMs reach: H100-class
  // parts sustain a smaller share of their (much higher) peak in cuBLAS/TE GEMMs (NVIDIA's
  // published GEMM sweeps: ~0.75 of peak vs ~0.88 on A100). TPUs: see ModelConstants.
  double kernel_efficiency = 1.0;

  // Dense peak for a training precision ("bf16", "fp16", "fp8"); fp8 falls back to bf16 when
  // unsupported.
  double PeakTflops(std::string_view precision) const;
};

// nullptr if unknown. Accepts catalog names and aliases (GKE labels such as
// "tpu-v5-lite-podslice", "nvidia-tesla-a100"), case-insensitively.
const Accelerator* FindAccelerator(std::string_view name);
const std::vector<Accelerator>& Accelerators();

// A transformer's shape. MoE layers replace the MLP with num_experts experts of
// moe_ffn_hidden_size each (top-k routed), plus optional shared experts.
struct ModelShape {
  std::string name;
  int64_t num_layers = 0, hidden_size = 0, ffn_hidden_size = 0, num_attention_heads = 0,
          num_query_groups = 0, vocab_size = 0, num_experts = 0, moe_top_k = 0,
          moe_ffn_hidden_size = 0;
  bool swiglu = true;            // gated MLP (3 matrices) vs GeLU MLP (2 matrices)
  bool tied_embeddings = false;  // output layer shares the input embedding
  bool dropout = false;          // GPT-2/3 style dropout (stores masks); Llama-style models: none
  int64_t head_dim = 0;          // 0: hidden_size / num_attention_heads
  int64_t v_head_dim = 0;        // 0: head_dim
  int64_t moe_shared_ffn_hidden_size = 0;  // total width of shared experts (0: none)
  int64_t num_dense_layers = 0;            // MoE models: leading layers with a dense MLP
  int64_t attention_params_override = 0;   // per layer; MLA and other non-standard attention
  std::string source;

  int64_t HeadDim() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }
  int64_t VHeadDim() const { return v_head_dim > 0 ? v_head_dim : HeadDim(); }
  bool IsMoe() const { return num_experts > 0; }
  int64_t MoeLayers() const { return IsMoe() ? num_layers - num_dense_layers : 0; }
  // Per layer parameter counts (weights of the matrices; norms included in AttentionParams).
  double AttentionParams() const;
  double DenseMlpParams() const;      // one dense MLP of ffn_hidden_size
  double ExpertParams() const;        // one routed expert
  double SharedExpertParams() const;  // all shared experts of one layer
  double RouterParams() const;
  double EmbeddingParams() const;  // one vocab x hidden matrix
  double TotalParams() const;
  double ActiveParams() const;  // parameters touched per token
  // Forward matmul FLOPs per token (2 x active matmul weights, attention scores excluded).
  double ForwardMatmulFlopsPerToken() const;
};

const ModelShape* FindModelPreset(std::string_view name);
const std::vector<ModelShape>& ModelPresets();

}  // namespace paratune

#endif  // PARATUNE_AGENTS_MODEL_CATALOG_H_
