// The model presets of contract section 2. Shapes come from the models' published configs
// (Hugging Face config.json or the papers); each entry names its source.
#include <algorithm>
#include <cctype>

#include "agents/model/catalog.h"

namespace paratune {

namespace {

ModelShape Dense(std::string name, int64_t layers, int64_t hidden, int64_t ffn, int64_t heads,
                 int64_t groups, int64_t vocab, bool tied, std::string source) {
  ModelShape m;
  m.name = std::move(name);
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.ffn_hidden_size = ffn;
  m.num_attention_heads = heads;
  m.num_query_groups = groups;
  m.vocab_size = vocab;
  m.tied_embeddings = tied;
  m.source = std::move(source);
  return m;
}

ModelShape Gpt(std::string name, int64_t layers, int64_t hidden, int64_t heads,
               std::string source) {
  ModelShape m = Dense(std::move(name), layers, hidden, 4 * hidden, heads, heads, 51200, true,
                       std::move(source));
  m.swiglu = false;
  m.dropout = true;
  return m;
}

std::vector<ModelShape> BuildPresets() {
  std::vector<ModelShape> p;
  p.push_back(Dense("llama2-7b", 32, 4096, 11008, 32, 32, 32000, false,
                    "meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023"));
  p.push_back(Dense("llama3-8b", 32, 4096, 14336, 32, 8, 128256, false,
                    "meta-llama/Meta-Llama-3-8B config.json"));
  p.push_back(Dense("llama3-70b", 80, 8192, 28672, 64, 8, 128256, false,
                    "meta-llama/Meta-Llama-3-70B config.json"));
  p.push_back(
      Dense("qwen2.5-0.5b", 24, 896, 4864, 14, 2, 151936, true, "Qwen/Qwen2.5-0.5B config.json"));
  p.push_back(
      Dense("qwen2.5-7b", 28, 3584, 18944, 28, 4, 152064, false, "Qwen/Qwen2.5-7B config.json"));
  p.push_back(Gpt("gpt3-7b", 32, 4096, 32,
                  "Brown et al. 2020 Table 2.1 (GPT-3 6.7B), Megatron padded vocab 51,200"));
  p.push_back(Gpt("gpt3-175b", 96, 12288, 96,
                  "Brown et al. 2020 Table 2.1 (GPT-3 175B), Megatron padded vocab 51,200"));
  ModelShape mixtral = Dense("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, false,
                             "mistralai/Mixtral-8x7B-v0.1 config.json");
  mixtral.num_experts = 8;
  mixtral.moe_top_k = 2;
  mixtral.moe_ffn_hidden_size = 14336;
  p.push_back(mixtral);
  // A small MoE in Qwen3-MoE's block structure (Qwen/Qwen3-30B-A3B config.json: head_dim 128,
  // 4 KV groups, top-8 routing, narrow experts), scaled down to ~0.6B active / ~2.6B total
  // parameters so single-node tuning of expert parallelism is cheap. Not a released checkpoint.
  ModelShape qmoe = Dense("qwen3-moe-a0.6b", 24, 1024, 3072, 16, 4, 151936, true,
                          "Qwen3-MoE block structure (Qwen/Qwen3-30B-A3B config.json), scaled "
                          "down by paratune; not a released checkpoint");
  qmoe.head_dim = 128;
  qmoe.num_experts = 64;
  qmoe.moe_top_k = 8;
  qmoe.moe_ffn_hidden_size = 512;
  p.push_back(qmoe);
  // DeepSeek-V3: MLA attention (q_lora 1536, kv_lora 512, qk 128+64 rope, v 128) is folded into
  // an explicit per-layer attention parameter count; first 3 layers dense (ffn 18432).
  ModelShape ds = Dense("deepseek-v3", 61, 7168, 18432, 128, 128, 129280, false,
                        "deepseek-ai/DeepSeek-V3 config.json; DeepSeek-V3 technical report "
                        "(671B total, 37B active)");
  ds.head_dim = 192;
  ds.v_head_dim = 128;
  ds.num_experts = 256;
  ds.moe_top_k = 8;
  ds.moe_ffn_hidden_size = 2048;
  ds.moe_shared_ffn_hidden_size = 2048;
  ds.num_dense_layers = 3;
  ds.attention_params_override = 7168LL * 1536 + 1536LL * 128 * 192 + 7168LL * 576 +
                                 512LL * 128 * 256 + 128LL * 128 * 7168 + 2 * 7168 + 1536 + 512;
  p.push_back(ds);
  return p;
}

}  // namespace

const std::vector<ModelShape>& ModelPresets() {
  static const std::vector<ModelShape> kAll = BuildPresets();
  return kAll;
}

const ModelShape* FindModelPreset(std::string_view name) {
  for (const auto& m : ModelPresets()) {
    if (m.name.size() == name.size() &&
        std::equal(m.name.begin(), m.name.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return &m;
    }
  }
  return nullptr;
}

}  // namespace paratune
