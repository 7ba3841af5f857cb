#include "agents/knowledge/workload_fields.h"

#include "agents/model/workload.h"

namespace paratune {

std::map<std::string, int64_t> WorkloadFields(const Workload* w) {
  std::map<std::string, int64_t> out;
  if (w == nullptr) return out;
  const ModelShape& m = w->model;
  auto put = [&](const char* k, int64_t v) {
    if (v > 0) out[k] = v;
  };
  put("numLayers", m.num_layers);
  put("hiddenSize", m.hidden_size);
  put("ffnHiddenSize", m.ffn_hidden_size);
  put("numAttentionHeads", m.num_attention_heads);
  put("numQueryGroups", m.num_query_groups);
  put("vocabSize", m.vocab_size);
  put("numExperts", m.num_experts);
  put("seqLength", w->training.seq_length);
  put("globalBatchSize", w->training.global_batch_size);
  put("devices", w->devices);
  return out;
}

}  // namespace paratune
