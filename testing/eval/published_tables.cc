#include "testing/eval/published_tables.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "agents/model/perf_model.h"

namespace paratune {

namespace {

// A row's field as T, or `fallback` when absent.
template <typename T>
T Get(const YAML::Node& n, const char* key, T fallback) {
  const YAML::Node v = n[key];
  if (!v || v.IsNull()) return fallback;
  return v.as<T>();
}

Status Missing(const std::string& where, const char* field) {
  return Status::Invalid(where + "." + field + ": required");
}

// The model shape of a row's `arch` (the models' public values). DeepSeek-V3's MLA attention
// comes from the catalog preset, which folds it into a per-layer parameter count.
Result<ModelShape> ShapeOf(const YAML::Node& arch, const std::string& where) {
  if (!arch || !arch.IsMap()) return Missing(where, "arch");
  ModelShape m;
  if (Get<std::string>(arch, "attn", "") == "MLA") {
    const ModelShape* ds = FindModelPreset("deepseek-v3");
    if (ds == nullptr)
      return Status::Invalid(where + ".arch.attn: MLA needs the deepseek-v3 preset");
    m = *ds;
  }
  m.num_layers = Get<int64_t>(arch, "L", m.num_layers);
  m.hidden_size = Get<int64_t>(arch, "h", m.hidden_size);
  m.num_attention_heads = Get<int64_t>(arch, "heads", m.num_attention_heads);
  m.num_query_groups =
      Get<int64_t>(arch, "kv", m.num_query_groups > 0 ? m.num_query_groups : m.num_attention_heads);
  m.vocab_size = Get<int64_t>(arch, "vocab", m.vocab_size);
  m.head_dim = Get<int64_t>(arch, "head_dim", m.head_dim);
  m.num_experts = Get<int64_t>(arch, "moe_experts", m.num_experts);
  m.moe_top_k = Get<int64_t>(arch, "moe_topk", m.moe_top_k);
  m.moe_ffn_hidden_size = Get<int64_t>(arch, "moe_ffn", m.moe_ffn_hidden_size);
  m.num_dense_layers = Get<int64_t>(arch, "dense_layers", m.num_dense_layers);
  const int64_t shared = Get<int64_t>(arch, "moe_shared", 0);
  if (shared > 0) m.moe_shared_ffn_hidden_size = shared * m.moe_ffn_hidden_size;
  m.ffn_hidden_size = Get<int64_t>(arch, "ffn", Get<int64_t>(arch, "dense_ffn", m.ffn_hidden_size));
  if (m.ffn_hidden_size == 0) m.ffn_hidden_size = m.moe_ffn_hidden_size;
  const std::string act = Get<std::string>(arch, "act", "swiglu");
  m.swiglu = act == "swiglu";  // gelu and squared_relu: two matrices
  m.tied_embeddings = Get<bool>(arch, "tied", false);
  if (m.num_layers <= 0 || m.hidden_size <= 0 || m.num_attention_heads <= 0 || m.vocab_size <= 0 ||
      m.ffn_hidden_size <= 0) {
    return Status::Invalid(where + ".arch: needs L, h, heads, vocab and ffn (or moe_ffn)");
  }
  return m;
}

// The accelerator a row's `hw.accelerator` names, in catalog terms.
std::string CatalogAccelerator(const std::string& name) {
  if (name == "H100-HBM2e-96GB") return "nvidia-h100-96gb-500w";
  if (name == "A100") return "nvidia-a100-80gb";  // torchtune's README: an 80 GB A100
  if (name == "H100-SXM5-80GB") return "nvidia-h100-80gb";
  return name;
}

void SetInt(Config* c, const char* k, int64_t v) { (*c)[k] = ParamValue::Int(v); }
void SetBool(Config* c, const char* k, bool v) { (*c)[k] = ParamValue::Bool(v); }

// The framework, configuration and settings of one row (see docs/model.md "Published tables"
// for what each source leaves unstated and the default taken).
Status FillRow(const std::string& source, const YAML::Node& n, const std::string& where,
               PublishedRow* r) {
  const bool nemo = source.rfind("nemo_perf", 0) == 0 || source.rfind("nemo_long", 0) == 0;
  const bool fsdp2 = source.rfind("nemo_automodel", 0) == 0 || source.rfind("torchtitan", 0) == 0;
  Workload& w = r->workload;
  w.training.framework = fsdp2 ? "torchtitan" : "megatron-lm";
  const std::string precision = Get<std::string>(n, "precision", "bf16");
  w.training.precision = precision == "fp8" ? "fp8" : "bf16";
  w.training.seq_length = Get<int64_t>(n, "seq", Get<int64_t>(n, "seq_default_config", 0));
  if (w.training.seq_length <= 0) return Missing(where, "seq");
  const int64_t tp = Get<int64_t>(n, "tp", 1), pp = Get<int64_t>(n, "pp", 1),
                cp = Get<int64_t>(n, "cp", 1), ep = Get<int64_t>(n, "ep", 1);
  const int64_t mbs = Get<int64_t>(n, "mbs", Get<int64_t>(n, "local_batch", 1));
  const int64_t dp = std::max<int64_t>(1, w.devices / std::max<int64_t>(1, tp * pp * cp));
  w.training.global_batch_size = Get<int64_t>(n, "gbs", dp * mbs);
  Config& c = r->config;
  SetInt(&c, "tp", tp);
  SetInt(&c, "pp", pp);
  SetInt(&c, "cp", cp);
  SetInt(&c, "ep", ep);
  SetInt(&c, "mbs", mbs);
  SetInt(&c, "vpp", Get<int64_t>(n, "vp", 1));
  const std::string recompute = Get<std::string>(n, "recompute", "");
  r->recompute_stated = !recompute.empty();
  if (recompute.rfind("selective", 0) == 0) c["recompute"] = ParamValue::Enum("selective");
  if (recompute == "full") c["recompute"] = ParamValue::Enum("full");
  if (nemo) {
    // NeMo's performance recipes: distributed optimizer with overlapped grad reduce and param
    // gather, sequence parallel with tp, and TP communication overlap (tp_comm_overlap) with tp.
    SetBool(&c, "distributedOptimizer", true);
    SetBool(&c, "overlapGradReduce", true);
    SetBool(&c, "overlapParamGather", true);
    if (tp > 1) SetBool(&c, "tpCommOverlap", true);
    // Their containers' Transformer Engine predates v1.8 (NeMo 24.03.01; NeMo's Dockerfile.ci at
    // the 24.07 table's commit pins TE 7d576ed2, v1.8~19), whose DotProductAttention picks
    // FlashAttention-2 before cuDNN's fused attention: `attention: flash2`.
    w.training.attention = "flash2";
  }
  if (Get<bool>(n, "compile", false)) SetBool(&c, "torchCompile", true);
  if (source.rfind("nemo_automodel", 0) == 0) {
    // The benchmark configurations the table links (examples/llm_benchmark/ at the table's
    // commit): every pre-training recipe sets `activation_checkpointing: true` (full
    // recomputation per block). The MoE recipes (deepseek_v3_te_deepep, qwen3_moe_30b_te_deepep)
    // run `backend: {attn: te, linear: te, rms_norm: te, rope_fusion: true}`, DeepEP / Hybrid-EP
    // dispatch and `fake_balanced_gate: true` (the page: "Fake balanced gate is enabled to
    // simulate ideal expert routing"); the Llama3 70B recipe runs SDPA with `enable_compile: True`.
    c["recompute"] = ParamValue::Enum("full");
    r->recompute_stated = true;
    // The table's LBS is the batch of one step per GPU (torchtitan's local batch, paratune's
    // mbs) and MBS the pipeline micro-batch: with pp > 1 each of the GA local batches runs as
    // one pipeline schedule of LBS / MBS micro-batches (the page's glossary).
    const int64_t lbs = Get<int64_t>(n, "lbs", mbs);
    SetInt(&c, "mbs", lbs);
    if (pp > 1) SetInt(&c, "ppMicrobatchSize", mbs);
    const std::string kernels = Get<std::string>(n, "kernels", "");
    if (kernels.find("DeepEP") != std::string::npos) {
      w.training.transformer_engine = true;
      w.training.moe_dispatcher = "deepep";
      w.training.moe_routing = "fake-balanced";
    } else {
      SetBool(&c, "torchCompile", true);
    }
  }
  r->tokens_per_second_per_device = Get<double>(n, "tok_s_gpu", 0);
  r->model_tflops_per_device = Get<double>(n, "tflops_gpu", 0);
  r->metric =
      r->tokens_per_second_per_device > 0 ? FitMetric::kTokensPerSecond : FitMetric::kModelTflops;
  r->measured = r->tokens_per_second_per_device > 0 ? r->tokens_per_second_per_device
                                                    : r->model_tflops_per_device;
  r->step_seconds = Get<double>(n, "step_s", 0);
  r->memory_gib = Get<double>(n, "mem_gib", 0);
  if (r->memory_gib > 0) r->memory_kind = fsdp2 ? "reserved" : "active";
  if (source.rfind("torchtune", 0) == 0) {
    r->not_modeled =
        "torchtune single-device recipe: pure-bf16 AdamW states, packed datasets, optimizer in "
        "backward, activation offloading and 8-bit AdamW have no terms in the model";
  }
  std::ostringstream label;
  label << Get<std::string>(n, "model", "?") << " tp" << tp << " pp" << pp << " cp" << cp;
  if (ep > 1) label << " ep" << ep;
  label << " mbs" << mbs << " s" << w.training.seq_length << " " << precision << " " << w.devices
        << "gpu";
  if (Get<bool>(n, "compile", false)) label << " compile";
  r->label = label.str();
  return Status::Ok();
}

Result<PublishedRow> ParseRow(const std::string& source, const YAML::Node& n,
                              const std::string& where) {
  PublishedRow r;
  r.source = source;
  auto shape = ShapeOf(n["arch"], where);
  if (!shape.ok()) return shape.status();
  r.workload.model = std::move(shape).value();
  const YAML::Node hw = n["hw"];
  if (!hw || !hw["accelerator"]) return Missing(where, "hw.accelerator");
  r.workload.hardware.accelerator = CatalogAccelerator(hw["accelerator"].as<std::string>());
  r.workload.accel = FindAccelerator(r.workload.hardware.accelerator);
  if (r.workload.accel == nullptr) {
    return Status::Invalid(
        where + ".hw.accelerator: not in the catalog: " + r.workload.hardware.accelerator);
  }
  r.workload.devices = Get<int64_t>(n, "gpus", 0);
  if (r.workload.devices <= 0) return Missing(where, "gpus");
  r.workload.hardware.devices_per_node = std::min<int64_t>(8, r.workload.devices);
  r.workload.hardware.nodes = std::max<int64_t>(1, r.workload.devices / 8);
  PARATUNE_RETURN_IF_ERROR(FillRow(source, n, where, &r));
  return r;
}

}  // namespace

Result<std::vector<PublishedRow>> LoadPublishedTables(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return Status::Invalid(path + ": " + e.what());
  }
  if (!root.IsMap()) return Status::Invalid(path + ": expected a map of sources");
  std::vector<PublishedRow> out;
  for (const auto& kv : root) {
    const std::string source = kv.first.as<std::string>();
    if (!kv.second.IsSequence()) return Status::Invalid(path + ": " + source + ": expected a list");
    for (size_t i = 0; i < kv.second.size(); ++i) {
      const std::string where = source + "[" + std::to_string(i) + "]";
      try {
        auto row = ParseRow(source, kv.second[i], where);
        if (!row.ok()) return row.status();
        out.push_back(std::move(row).value());
      } catch (const YAML::Exception& e) {
        return Status::Invalid(where + ": " + e.what());
      }
    }
  }
  return out;
}

Estimate EstimatePublishedRow(const PublishedRow& row, const IntervalTable& intervals, Config* used,
                              const ModelConstants& k) {
  Config c = row.config;
  Estimate e;
  for (const char* recompute : {"none", "selective", "full"}) {
    if (!row.recompute_stated) c["recompute"] = ParamValue::Enum(recompute);
    e = EstimatePlan(row.workload, PlanFromConfig(row.workload, c), {}, k);
    ApplyInterval(intervals, row.workload, &e);
    if (row.recompute_stated || e.verdict != "does-not-fit") break;
  }
  if (used != nullptr) *used = c;
  return e;
}

double PredictedFigure(const PublishedRow& row, const Estimate& e) {
  switch (row.metric) {
    case FitMetric::kTokensPerSecond:
      return e.tokens_per_second_per_device;
    case FitMetric::kModelTflops:
      return e.model_tflops_per_device;
    case FitMetric::kHardwareTflops:
      return e.hardware_tflops_per_device;
    case FitMetric::kMfuPercent:
      return 100.0 * e.mfu;
    case FitMetric::kStepSeconds:
      return e.step_time_seconds;
  }
  return 0;
}

double ThroughputError(const PublishedRow& row, const Estimate& e) {
  const double p = PredictedFigure(row, e);
  if (!row.ran || row.measured <= 0 || p <= 0) return 0;
  return p / row.measured - 1.0;
}

std::vector<Residual> ResidualsOf(const PublishedRow& row, const Estimate& e) {
  std::vector<Residual> out;
  if (!row.not_modeled.empty()) return out;
  const std::string profile = IntervalProfile(row.workload);
  const double p = PredictedFigure(row, e);
  if (row.ran && row.measured > 0 && p > 0) {
    // log(measured step / predicted step): throughput figures are inverse to step time.
    const double r = std::log(p / row.measured);
    out.push_back({profile, false, row.metric == FitMetric::kStepSeconds ? -r : r});
  }
  if (row.ran && row.memory_gib > 0 && e.peak_memory_gib > 0) {
    out.push_back({profile, true, std::log(row.memory_gib / e.peak_memory_gib)});
  }
  return out;
}

double FitTorchtitanKernelFactor(const std::vector<PublishedRow>& rows,
                                 const std::string& without_source) {
  std::vector<const PublishedRow*> fit;
  for (const auto& r : rows) {
    if (r.source == without_source || !r.not_modeled.empty() || !r.ran || r.measured <= 0 ||
        IntervalProfile(r.workload) != "torchtitan") {
      continue;
    }
    fit.push_back(&r);
  }
  if (fit.empty()) return 1.0;
  // The mean step-time residual log(measured / predicted) rises with the factor (faster
  // kernels, shorter predicted steps): bisect on it.
  auto mean_residual = [&](double factor) {
    ModelConstants k = ModelConstants::Defaults();
    k.torchtitan_kernel_factor = factor;
    double sum = 0;
    int n = 0;
    for (const PublishedRow* r : fit) {
      for (const Residual& x :
           ResidualsOf(*r, EstimatePublishedRow(*r, IntervalTable{}, nullptr, k))) {
        if (x.memory) continue;
        sum += x.log_ratio;
        ++n;
      }
    }
    return n ? sum / n : 0.0;
  };
  double lo = 0.3, hi = 2.0;
  for (int i = 0; i < 40; ++i) {
    const double mid = 0.5 * (lo + hi);
    (mean_residual(mid) > 0 ? hi : lo) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace paratune
