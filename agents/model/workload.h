// A Workload is what the performance model and the simulated cluster need to know about a
// campaign: the resolved model shape (preset + overrides), the training settings, the hardware
// and its catalog entry. Plain value; `accel` points into the static catalog (never dangles).
#ifndef PARATUNE_AGENTS_MODEL_WORKLOAD_H_
#define PARATUNE_AGENTS_MODEL_WORKLOAD_H_

#include <cstdint>
#include <nlohmann/json.hpp>

#include "agents/core/campaign.h"
#include "agents/model/catalog.h"
#include "base/status.h"

namespace paratune {

struct Workload {
  ModelShape model;
  TrainingSpec training;
  HardwareSpec hardware;
  const Accelerator* accel = nullptr;
  int64_t devices = 0;  // GPUs, or TPU chips
  // The kernel choices of spec.training (agents/core/campaign.h TrainingSpec), read from
  // `training` so a campaign file and the model's own calibration path say the same thing
  // (contract section 10). docs/model.md "Effects for other stacks" cites each.
  //
  // Flash/fused attention (Megatron-LM with Transformer Engine, MaxText splash/flash, PyTorch
  // SDPA) keeps no s x s score tensors; `unfused` models the kernels of the Korthikanti et al.
  // and SC'21 measurements.
  bool FlashAttention() const { return training.attention != "unfused"; }
  // Transformer Engine's attention, RMSNorm and fused RoPE inside a PyTorch FSDP2 (torchtitan
  // profile) stack, as NeMo AutoModel's `backend: te`: cuDNN attention instead of SDPA's
  // FlashAttention-2 and fused elementwise kernels instead of eager op-by-op traffic.
  bool TransformerEngineKernels() const { return training.transformer_engine; }
  // MoE dispatch/combine through DeepEP's normal kernels (deepseek-ai/DeepEP, docs/legacy.md;
  // NVIDIA's Hybrid-EP keeps the layout): a token is sent once per destination rank (once per
  // node over RDMA, then forwarded over NVLink), not once per routed expert, at about the link's
  // rate (43-58 GB/s RDMA on 50 GB/s NICs, 153 GB/s on 160 GB/s NVLink).
  bool DeepEp() const { return training.moe_dispatcher == "deepep"; }
  // NeMo AutoModel's FakeBalancedGate (nemo_automodel/components/moe/layers.py: token t takes
  // experts t*k .. t*k+k-1 mod E): a token's experts sit on as few ranks as the layout allows.
  // Otherwise a trained router's top-k experts spread at random on average.
  bool ContiguousMoeRouting() const { return training.moe_routing == "fake-balanced"; }

  bool IsTpu() const { return accel != nullptr && accel->tpu; }
  int64_t DevicesPerNode() const;
};

// Resolves the campaign's model (preset + explicit overrides) and hardware. Errors are
// kInvalidArgument naming the field: spec.model.preset (unknown preset), spec.model.<field>
// (inconsistent shape), spec.hardware.accelerator (unknown), spec.hardware.tpuTopology (not a
// valid slice of that TPU), spec.hardware.* (no devices).
Result<Workload> ResolveWorkload(const CampaignSpec& spec);

// The PARATUNE_WORKLOAD JSON ({"model", "training", "hardware"}, see WorkloadJson in
// agents/core/campaign.h), resolved the same way. Errors name the field as in a campaign.
Result<Workload> WorkloadFromJson(const nlohmann::json& j);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_MODEL_WORKLOAD_H_
