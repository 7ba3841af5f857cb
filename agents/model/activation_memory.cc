#include "agents/model/activation_memory.h"

namespace paratune {

namespace {

// Bytes of the attention score tensors (softmax output, and with dropout its mask and output):
// 2 a s s_kv b (+ 3 a s s_kv b with dropout), sharded by t. Flash attention keeps only the
// fp32 log-sum-exp per row.
double ScoreBytes(const ModelShape& m, const LayerActivationInput& in) {
  const double a = static_cast<double>(m.num_attention_heads);
  if (in.flash_attention) return 4.0 * a * in.s * in.b / static_cast<double>(in.t);
  return (m.dropout ? 5.0 : 2.0) * a * in.s * in.s_kv * in.b / static_cast<double>(in.t);
}

// MLP activations per token: GeLU keeps fc1's output and fc2's input (2 x 2f bytes); SwiGLU
// keeps both fc1 outputs and fc2's input (3 x 2f).
double MlpBytesPerToken(const ModelShape& m, double f) { return (m.swiglu ? 6.0 : 4.0) * f; }

}  // namespace

double LayerActivationBytes(const ModelShape& m, const LayerActivationInput& in) {
  return LayerActivationBytesSelective(m, in) + ScoreBytes(m, in);
}

double LayerActivationBytesSelective(const ModelShape& m, const LayerActivationInput& in) {
  const double sb = in.s * in.b;
  const double h = static_cast<double>(m.hidden_size);
  const double t = static_cast<double>(in.t);
  // Replicated across tp unless sequence parallel: both norm inputs (4), the QKV and MLP GEMM
  // inputs (2 + 2), and with dropout the two 1-byte dropout masks (1 + 1).
  const double replicated = sb * h * (8.0 + (m.dropout ? 2.0 : 0.0));
  // Sharded by tp: Q, K, V, the output projection's input, and the MLP.
  const double q = static_cast<double>(m.num_attention_heads * m.HeadDim());
  const double k = static_cast<double>(m.num_query_groups * m.HeadDim());
  const double v = static_cast<double>(m.num_query_groups * m.VHeadDim());
  const double o = static_cast<double>(m.num_attention_heads * m.VHeadDim());
  double sharded = 2.0 * sb * (q + k + v + o);
  if (in.moe_layer) {
    const double topk = static_cast<double>(m.moe_top_k);
    // Routed copies of the tokens (dispatch buffer) plus each expert's MLP activations.
    sharded +=
        sb * topk * (2.0 * h + MlpBytesPerToken(m, static_cast<double>(m.moe_ffn_hidden_size)));
    sharded += sb * MlpBytesPerToken(m, static_cast<double>(m.moe_shared_ffn_hidden_size));
  } else {
    sharded += sb * MlpBytesPerToken(m, static_cast<double>(m.ffn_hidden_size));
  }
  return (in.sequence_parallel ? replicated / t : replicated) + sharded / t;
}

double LayerActivationBytesFull(const ModelShape& m, const LayerActivationInput& in) {
  const double input = 2.0 * in.s * in.b * static_cast<double>(m.hidden_size);
  return in.sequence_parallel ? input / static_cast<double>(in.t) : input;
}

double KorthikantiBytesPerLayer(double s, double b, double h, double a, double t, bool sp,
                                Recompute r) {
  const double sbh = s * b * h;
  switch (r) {
    case Recompute::kFull:
      return 2.0 * sbh;
    case Recompute::kSelective:
      return sp ? 34.0 * sbh / t : sbh * (10.0 + 24.0 / t);
    case Recompute::kNone:
      break;
  }
  if (t == 1) return sbh * (34.0 + 5.0 * a * s / h);
  return sp ? sbh * (34.0 / t + 5.0 * a * s / (h * t))
            : sbh * (10.0 + 24.0 / t + 5.0 * a * s / (h * t));
}

}  // namespace paratune
