// Activation memory per transformer layer, after Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models" (Table 2), generalized to GQA, SwiGLU, any FFN
// width, flash attention and context parallelism. For a GPT layer (MHA, GeLU, ffn = 4h, dropout,
// unfused attention) the generalization reduces exactly to the paper's formulas.
#ifndef PARATUNE_AGENTS_MODEL_ACTIVATION_MEMORY_H_
#define PARATUNE_AGENTS_MODEL_ACTIVATION_MEMORY_H_

#include <cstdint>

#include "agents/model/catalog.h"
#include "agents/model/parallel_plan.h"

namespace paratune {

struct LayerActivationInput {
  double s = 0;     // sequence length on this device (seqLength / cp)
  double s_kv = 0;  // keys attended to (seqLength)
  double b = 0;     // micro-batch size
  int64_t t = 1;    // tensor-parallel size
  bool sequence_parallel = false;
  bool flash_attention = true;
  bool moe_layer = false;
};

// Bytes a layer keeps for backward with no recomputation (16-bit activations, 1-byte masks).
double LayerActivationBytes(const ModelShape& m, const LayerActivationInput& in);
// The same under selective recomputation (the attention score tensors are recomputed).
double LayerActivationBytesSelective(const ModelShape& m, const LayerActivationInput& in);
// Under full recomputation: only the layer input (2 s b h, sharded by t with sequence parallel).
double LayerActivationBytesFull(const ModelShape& m, const LayerActivationInput& in);

// The paper's closed forms for a GPT layer, bytes (Table 2). `a` heads, `h` hidden.
double KorthikantiBytesPerLayer(double s, double b, double h, double a, double t, bool sp,
                                Recompute r);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_MODEL_ACTIVATION_MEMORY_H_
