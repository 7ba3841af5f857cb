#include "agents/knowledge/moves.h"

#include <algorithm>
#include <functional>
#include <set>

namespace paratune {

namespace {

constexpr const char* kIciAxes[] = {"iciData", "iciFsdp", "iciTensor", "iciSequence", "iciExpert"};

// One change of one key with its rule-of-thumb effect.
struct Step {
  std::string key;
  ParamValue to;
  double saved = 0;        // fraction of step time saved
  double state_ratio = 1;  // parameter + optimizer bytes per device, new / old
  double act_ratio = 1;    // activation bytes per device, new / old
  std::string reason, cost, query;
  bool targets = false;
};

int64_t I(const Config& c, const char* k, int64_t d = 1) { return GetInt(c, k, d); }

double Bubble(const Config& c, const MoveContext& ctx) {
  int64_t pp = I(c, "pp"), tp = I(c, "tp"), cp = I(c, "cp"), mbs = I(c, "mbs"), vpp = I(c, "vpp");
  if (pp <= 1) return 0;
  int64_t dp = std::max<int64_t>(1, ctx.devices / std::max<int64_t>(1, tp * pp * cp));
  double m = std::max(1.0, static_cast<double>(ctx.spec->training.global_batch_size) /
                               static_cast<double>(mbs * dp));
  return (pp - 1.0) / (vpp * m + pp - 1.0);
}

std::vector<ParamValue> Neighbours(const std::string& key, const ParamValue& cur,
                                   const CampaignSpec& spec) {
  const ParamInfo* info = FindParameter(key);
  std::vector<ParamValue> vals;
  if (const SearchParameter* sp = spec.FindSearchParameter(key)) {
    vals = sp->values;
  } else if (info->type == ParamType::kBool) {
    vals = {ParamValue::Bool(false), ParamValue::Bool(true)};
  } else if (info->type == ParamType::kEnum) {
    for (const auto& e : info->enum_values) vals.push_back(ParamValue::Enum(e));
  } else {
    vals = {cur, ParamValue::Int(cur.AsInt() * 2)};
    if (cur.AsInt() % 2 == 0 && cur.AsInt() >= 2) vals.push_back(ParamValue::Int(cur.AsInt() / 2));
  }
  auto rank = [&](const ParamValue& v) -> double {
    if (info->type != ParamType::kEnum) return static_cast<double>(v.AsInt());
    auto it = std::find(info->enum_values.begin(), info->enum_values.end(), v.AsString());
    return static_cast<double>(it - info->enum_values.begin());
  };
  std::sort(vals.begin(), vals.end(),
            [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  std::vector<ParamValue> out;
  for (size_t i = 0; i < vals.size(); ++i) {
    if (!(vals[i] == cur)) continue;
    if (i > 0) out.push_back(vals[i - 1]);
    if (i + 1 < vals.size()) out.push_back(vals[i + 1]);
  }
  if (out.empty() && !vals.empty()) out.push_back(vals.front());  // current outside the space
  return out;
}

double RecomputeActs(const std::string& r) {
  return r == "none" ? 1.0 : (r == "selective" ? 0.85 : 0.15);
}

// Rule-of-thumb effect of one GPU change (docs/parallelism.md, docs/recomputation.md).
void GpuEffect(const Config& c, const MoveContext& ctx, Step* s) {
  const ProfileAnalysis& a = *ctx.analysis;
  const double comm = a.communication_fraction;
  const bool up = s->to.type() != ParamType::kEnum && s->to.AsInt() > I(c, s->key.c_str(), 0);
  const int64_t from = I(c, s->key.c_str(), 1), to = s->to.AsInt();
  if (s->key == "tp") {
    double share = I(c, "tp") > 1 ? 0.7 : 0.0;
    s->saved = up ? -(0.3 * comm + 0.04) - (to > ctx.devices_per_node ? 0.3 : 0)
                  : 0.5 * comm * share + 0.02;
    s->state_ratio = static_cast<double>(from) / to;
    s->act_ratio = static_cast<double>(from) / to;
    s->reason = up ? "tp " + std::to_string(to) + " shards weights and activations further"
                   : "tp " + std::to_string(to) +
                         " halves the tensor-parallel all-reduces and widens the GEMMs";
    s->cost = up ? "more tensor-parallel collectives per layer"
                 : "more weight and activation memory per GPU";
    s->query = "tensor parallelism raise lower NVLink all-reduce";
    s->targets =
        (!up && a.bottleneck == "communication") || (up && a.bottleneck == "memory-capacity");
  } else if (s->key == "pp") {
    Config n = c;
    n[s->key] = s->to;
    double b0 = a.idle_fraction > 0 ? a.idle_fraction : Bubble(c, ctx), b1 = Bubble(n, ctx);
    if (a.idle_fraction > 0 && Bubble(c, ctx) > 0) b1 *= a.idle_fraction / Bubble(c, ctx);
    s->saved = b0 - b1 - (up ? 0.01 : 0);
    s->state_ratio = static_cast<double>(from) / to;
    s->reason = up ? "pp " + std::to_string(to) + " splits the layers over more stages"
                   : "pp " + std::to_string(to) + " shrinks the pipeline bubble";
    s->cost = up ? "a larger pipeline bubble" : "more layers, weights and optimizer state per GPU";
    s->query = "pipeline parallelism bubble micro-batches stages";
    s->targets = (!up && a.bottleneck == "pipeline") || (up && a.bottleneck == "memory-capacity");
  } else if (s->key == "vpp") {
    s->saved = Bubble(c, ctx) * (up ? 0.5 : -1.0) - (up ? 0.01 : 0);
    s->act_ratio = up ? 1.05 : 0.95;
    s->reason = "vpp " + std::to_string(to) +
                (up ? " interleaves stages and divides the bubble" : " sends fewer p2p messages");
    s->cost = up ? "vpp times more pipeline p2p messages, slightly more activation memory"
                 : "a larger bubble";
    s->query = "virtual pipeline interleaved schedule bubble";
    s->targets = up && a.bottleneck == "pipeline";
  } else if (s->key == "mbs" || s->key == "perDeviceBatchSize") {
    Config n = c;
    n[s->key] = s->to;
    double gemm = up ? 0.05 : -0.05;
    if (ctx.tpu) gemm += (up ? 0.3 : -0.3) * comm;
    s->saved = gemm + (ctx.tpu ? 0 : Bubble(c, ctx) - Bubble(n, ctx));
    s->act_ratio = static_cast<double>(to) / from;
    s->reason =
        s->key + " " + std::to_string(to) +
        (up ? " widens the GEMMs and amortizes per-step communication" : " cuts activation memory");
    s->cost = up ? "activation memory grows linearly" +
                       std::string(ctx.tpu ? "" : " and fewer micro-batches enlarge the bubble")
                 : "narrower GEMMs";
    s->query = ctx.tpu ? "per device batch size fsdp all-gather amortize"
                       : "micro-batch size activation memory GEMM efficiency";
    s->targets = (up && (a.bottleneck == "compute" || a.bottleneck == "hbm" ||
                         (ctx.tpu && a.bottleneck == "communication"))) ||
                 (!up && a.bottleneck == "memory-capacity");
  }
}

void OtherEffect(const Config& c, const MoveContext& ctx, Step* s) {
  const ProfileAnalysis& a = *ctx.analysis;
  const double comm = a.communication_fraction;
  const double dp_share = I(c, "tp") == 1 ? 0.8 : 0.3;
  if (s->key == "recompute" || s->key == "remat") {
    const ParamInfo* info = FindParameter(s->key);
    auto idx = [&](const std::string& v) {
      return std::find(info->enum_values.begin(), info->enum_values.end(), v) -
             info->enum_values.begin();
    };
    std::string from = GetEnum(c, s->key, s->key == "remat" ? "full" : "none");
    bool lighter =
        s->key == "remat" ? idx(s->to.AsString()) < idx(from) : idx(s->to.AsString()) < idx(from);
    if (s->key == "recompute") {
      s->act_ratio = RecomputeActs(s->to.AsString()) / RecomputeActs(from);
      bool big = (from == "full") != (s->to.AsString() == "full");
      s->saved = (lighter ? 1 : -1) * (big ? 0.22 : 0.03);
    } else {
      s->act_ratio = lighter ? 1.4 : 0.7;
      s->saved = lighter ? 0.10 : -0.10;
    }
    s->reason = s->key + " " + s->to.AsString() +
                (lighter ? " removes recomputed forward FLOPs" : " stores fewer activations");
    s->cost =
        lighter ? "more activation memory" : "recomputation FLOPs (lower MFU per hardware FLOP)";
    s->query = "activation recomputation selective full remat memory";
    s->targets = (lighter && (a.bottleneck == "compute" || a.bottleneck == "hbm")) ||
                 (!lighter && a.bottleneck == "memory-capacity");
  } else if (s->key == "distributedOptimizer") {
    bool on = s->to.AsBool();
    int64_t dp = std::max<int64_t>(
        1, ctx.devices / std::max<int64_t>(1, I(c, "tp") * I(c, "pp") * I(c, "cp")));
    double r = (6.0 + 12.0 / dp) / 18.0;
    s->state_ratio = on ? r : 1 / r;
    s->saved = on ? -0.01 : 0.01;
    s->reason = on ? "the distributed optimizer shards optimizer state over dp"
                   : "no optimizer-state gather";
    s->cost = on ? "a reduce-scatter + all-gather instead of one all-reduce"
                 : "much more optimizer memory";
    s->query = "distributed optimizer ZeRO shard optimizer state";
    s->targets = on && a.bottleneck == "memory-capacity";
  } else if (s->key == "sequenceParallel") {
    bool on = s->to.AsBool();
    s->act_ratio = on ? 0.8 : 1.25;
    s->saved = on ? 0.01 : -0.01;
    s->reason =
        on ? "sequence parallelism shards layer-norm/dropout activations at no extra traffic"
           : "fewer kernels";
    s->cost = on ? "none beyond tp > 1" : "more activation memory";
    s->query = "sequence parallelism tensor parallel activation memory";
    s->targets = on && a.bottleneck == "memory-capacity";
  } else if (s->key == "overlapGradReduce" || s->key == "overlapParamGather") {
    bool on = s->to.AsBool();
    double g = (s->key == "overlapGradReduce" ? 0.5 : 0.2) * comm * dp_share;
    s->saved = on ? g : -g;
    s->reason =
        on ? s->key + " hides data-parallel communication behind compute" : "simpler schedule";
    s->cost = on ? "a little extra bucket memory" : "exposed data-parallel communication";
    s->query = "data parallelism gradients all-reduced overlap backward overlapGradReduce";
    s->targets = on && a.bottleneck == "communication";
  } else if (s->key == "cp" || s->key == "ep") {
    bool up = s->to.AsInt() > I(c, s->key.c_str());
    double share = s->key == "ep" ? a.all_to_all_fraction : comm;
    s->saved = up ? -(0.2 * share + 0.02) : 0.4 * share;
    s->act_ratio = s->key == "cp" ? static_cast<double>(I(c, "cp")) / s->to.AsInt() : 1;
    s->state_ratio = s->key == "ep" ? (up ? 0.8 : 1.25) : 1;
    s->reason = s->key + " " + s->to.ToString() + (up ? " shards more" : " cuts its collectives");
    s->cost = up ? "more collectives" : "more memory per device";
    s->query =
        s->key == "ep" ? "expert parallelism all-to-all MoE" : "context parallelism long sequence";
    s->targets = !up && a.bottleneck == "communication";
  }
}

bool ValidGpu(const Config& c, const MoveContext& ctx) {
  int64_t tp = I(c, "tp"), pp = I(c, "pp"), cp = I(c, "cp"), ep = I(c, "ep");
  if (tp < 1 || pp < 1 || cp < 1 || ep < 1 || I(c, "mbs") < 1) return false;
  if (ctx.devices % (tp * pp * cp) != 0 || tp > ctx.devices_per_node) return false;
  int64_t dp = ctx.devices / (tp * pp * cp);
  if (ep > dp * tp || (I(c, "vpp") > 1 && pp < 2)) return false;
  if (GetBool(c, "sequenceParallel", false) && tp == 1 && c.count("sequenceParallel") &&
      ctx.spec->FindSearchParameter("sequenceParallel") != nullptr) {
    return false;
  }
  int64_t gbs = ctx.spec->training.global_batch_size;
  return gbs <= 0 || gbs % (I(c, "mbs") * dp) == 0;
}

// Keys whose value differs between `a` and `b`, including keys present in only one of them.
bool ChangesOnlySearchedKeys(const Config& from, const Config& to, const CampaignSpec& spec) {
  if (spec.search_space.empty()) return true;
  for (const auto& [k, v] : to) {
    auto it = from.find(k);
    if (it != from.end() && it->second == v) continue;
    const SearchParameter* sp = spec.FindSearchParameter(k);
    if (sp == nullptr) return false;  // an axis the campaign does not search
    if (std::find(sp->values.begin(), sp->values.end(), v) == sp->values.end()) return false;
  }
  for (const auto& [k, v] : from) {
    if (!to.count(k) && spec.FindSearchParameter(k) == nullptr) return false;
  }
  return true;
}

// TPU global batch = perDeviceBatchSize x chips (MaxText); it must not change. After a topology
// change the old configuration cannot run at all: the campaign's globalBatchSize over the new
// chips, or the old per-chip batch when the search space cannot reach that.
bool KeepsTpuGlobalBatch(const Config& c, const MoveContext& ctx) {
  const int64_t pdbs = I(c, "perDeviceBatchSize");
  const int64_t cur = ctx.current != nullptr ? I(*ctx.current, "perDeviceBatchSize") : pdbs;
  if (ctx.analysis->mesh_mismatch) {
    const int64_t gbs = ctx.spec->training.global_batch_size;
    return pdbs == cur || (gbs > 0 && pdbs * ctx.devices == gbs);
  }
  return pdbs == cur;
}

bool Valid(const Config& c, const MoveContext& ctx) {
  for (const auto& [k, v] : c) {
    const SearchParameter* sp = ctx.spec->FindSearchParameter(k);
    if (sp != nullptr && std::find(sp->values.begin(), sp->values.end(), v) == sp->values.end()) {
      return false;
    }
  }
  if (ctx.current != nullptr && !ChangesOnlySearchedKeys(*ctx.current, c, *ctx.spec)) {
    return false;
  }
  if (ctx.tpu) {
    return MeshProduct(c) == ctx.devices && I(c, "perDeviceBatchSize") >= 1 &&
           KeepsTpuGlobalBatch(c, ctx);
  }
  return ValidGpu(c, ctx);
}

// Memory shares of the current peak: parameter/optimizer state vs activations.
double StateShare(const Config& c, bool tpu) {
  if (tpu) return 0.5;
  return GetBool(c, "distributedOptimizer", false) ? 0.4 : 0.55;
}

MoveCandidate Apply(const Config& origin, const Config& base, const MoveCandidate& seed,
                    const std::vector<Step>& steps, const MoveContext& ctx) {
  MoveCandidate cand = seed;
  double state = 1, acts = 1, sigma = StateShare(base, ctx.tpu);
  double kept = 1 - cand.saved_fraction;
  for (const Step& s : steps) {
    cand.config[s.key] = s.to;
    if (!s.reason.empty()) {
      cand.reasons.push_back(s.reason);
      cand.costs.push_back(s.cost);
      cand.queries.push_back(s.query);
    }
    kept *= 1 - s.saved;
    state *= s.state_ratio;
    acts *= s.act_ratio;
    cand.targets_bottleneck = cand.targets_bottleneck || s.targets;
  }
  // What changed against the base, once per key, in key order.
  cand.changes.clear();
  for (const auto& key : ChangedKeys(origin, cand.config)) {
    cand.changes.push_back(key + " " + (origin.count(key) ? origin.at(key).ToString() : "unset") +
                           " -> " + cand.config.at(key).ToString());
  }
  std::sort(cand.costs.begin(), cand.costs.end());
  cand.costs.erase(std::unique(cand.costs.begin(), cand.costs.end()), cand.costs.end());
  cand.saved_fraction = 1 - kept;
  cand.memory_factor *= sigma * state + (1 - sigma) * acts;
  return cand;
}

Step NewStep(const std::string& key, const ParamValue& to) {
  Step s;
  s.key = key;
  s.to = to;
  return s;
}

Step MakeStep(const Config& c, const std::string& key, const ParamValue& to,
              const MoveContext& ctx) {
  Step s = NewStep(key, to);
  GpuEffect(c, ctx, &s);
  if (s.reason.empty()) OtherEffect(c, ctx, &s);
  if (s.reason.empty()) s.reason = key + " " + to.ToString();
  return s;
}

// TPU: divide axis `a` by f and multiply axis `b` by f (the mesh product stays the chips).
// Per-layer axes (tensor, sequence) put collectives on every layer's critical path; fsdp
// all-gathers weights and reduce-scatters gradients (overlappable, grows with the fsdp degree);
// data only all-reduces gradients once per step.
std::vector<Step> TransferSteps(const Config& c, const char* a, const char* b, int64_t f,
                                const MoveContext& ctx) {
  const double comm = ctx.analysis->communication_fraction;
  auto layer = [](const std::string& k) { return k == "iciTensor" || k == "iciSequence"; };
  auto state_shard = [](const Config& x) {
    return I(x, "iciFsdp") * I(x, "iciTensor") * I(x, "iciExpert");
  };
  auto act_shard = [](const Config& x) { return I(x, "iciTensor") * I(x, "iciSequence"); };
  Config n = c;
  n[a] = ParamValue::Int(I(c, a) / f);
  n[b] = ParamValue::Int(I(c, b) * f);
  const std::string from(a), to(b);
  Step s1 = NewStep(a, n[a]), s2 = NewStep(b, n[b]);
  s1.saved = layer(from) ? 0.35 * comm : (from == "iciFsdp" ? 0.15 * comm : 0);
  s2.saved = layer(to) ? -(0.35 * comm + 0.03) : (to == "iciFsdp" ? -0.15 * comm - 0.01 : 0.01);
  s1.state_ratio = static_cast<double>(state_shard(c)) / state_shard(n);
  s1.act_ratio = static_cast<double>(act_shard(c)) / act_shard(n);
  std::string what = "moving a factor " + std::to_string(f) + " from " + from + " to " + to;
  if (layer(from) && !layer(to)) {
    s1.reason = what + " removes per-layer collectives from the critical path";
  } else if (layer(to)) {
    s1.reason = what + " shards activations per layer, paying per-layer collectives";
  } else if (to == "iciFsdp") {
    s1.reason = what + " shards parameters and optimizer state further";
  } else {
    s1.reason = what + " trades sharding for fewer weight all-gathers";
  }
  s1.cost = layer(to) ? "per-layer collectives on the critical path"
                      : (to == "iciFsdp" ? "more all-gather traffic" : "more memory per chip");
  s1.query = "TPU mesh sharding iciFsdp iciTensor iciSequence axis";
  const std::string& bn = ctx.analysis->bottleneck;
  s1.targets = (bn == "communication" && !layer(to) && (layer(from) || from == "iciFsdp")) ||
               ((bn == "memory-capacity" || bn == "hbm") && s1.state_ratio * s1.act_ratio < 1);
  return {s1, s2};
}

// TPU mesh moves: a factor 2 or a whole axis from one ici axis to another (the product stays
// the chip count), everything folded into fsdp, each alone or with a batch / remat change.
void AddMeshMoves(const Config& b, const std::vector<Step>& singles, const MoveContext& ctx,
                  std::vector<std::vector<Step>>* moves) {
  std::vector<std::vector<Step>> mesh;
  for (const char* a : kIciAxes) {
    for (const char* x : kIciAxes) {
      if (std::string(a) == x || (!b.count(x) && std::string(x) != "iciFsdp")) continue;
      for (int64_t f : {int64_t{2}, I(b, a)}) {
        if (f < 2 || I(b, a) % f != 0 || (f == 2 && I(b, a) == 2 && f != I(b, a))) continue;
        mesh.push_back(TransferSteps(b, a, x, f, ctx));
        if (f == I(b, a) && f == 2) break;
      }
    }
  }
  std::vector<Step> all_fsdp;
  Config cur = b;
  for (const char* a : kIciAxes) {
    if (std::string(a) == "iciFsdp" || I(cur, a) < 2) continue;
    for (Step& s : TransferSteps(cur, a, "iciFsdp", I(cur, a), ctx)) {
      cur[s.key] = s.to;
      all_fsdp.push_back(s);
    }
  }
  if (all_fsdp.size() > 2) mesh.push_back(all_fsdp);
  for (const auto& m : mesh) {
    moves->push_back(m);
    for (const Step& s : singles) {
      if (s.key == "perDeviceBatchSize" || s.key == "remat") {
        auto more = m;
        more.push_back(s);
        moves->push_back(more);
      }
    }
  }
}

std::vector<std::string> MoveKeys(const Config& current, const MoveContext& ctx) {
  std::set<std::string> keys;
  for (const auto& [k, v] : current) keys.insert(k);
  for (const auto& sp : ctx.spec->search_space) keys.insert(sp.name);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    const ParamInfo* info = FindParameter(k);
    bool axis = std::find(std::begin(kIciAxes), std::end(kIciAxes), k) != std::end(kIciAxes);
    if (info != nullptr && info->tpu == ctx.tpu && !axis && k != "recomputeLayers" &&
        k.find("PipelineStageLayers") == std::string::npos && k != "dcnData") {
      out.push_back(k);
    }
  }
  return out;
}

// Mesh re-factorings for the current chip count when the topology changed.
std::vector<MoveCandidate> RepairedBases(const Config& current, const MoveContext& ctx) {
  std::vector<MoveCandidate> out;
  const int64_t prod = MeshProduct(current);
  for (const char* axis : kIciAxes) {
    int64_t v = I(current, axis);
    if (v * ctx.devices % prod != 0 || v * ctx.devices / prod < 1) continue;
    MoveCandidate c;
    c.config = current;
    int64_t nv = v * ctx.devices / prod;
    c.config[axis] = ParamValue::Int(nv);
    c.changes.push_back(std::string(axis) + " " + std::to_string(v) + " -> " + std::to_string(nv));
    c.reasons.push_back("re-factors the mesh for the " + std::to_string(ctx.devices) +
                        " chips of the new topology");
    c.costs.push_back("");
    c.queries.push_back("TPU mesh topology changed re-factor chips");
    c.targets_bottleneck = true;
    double state = std::string(axis) == "iciFsdp" || std::string(axis) == "iciTensor"
                       ? static_cast<double>(v) / nv
                       : 1.0;
    c.memory_factor = 0.5 * state + 0.5;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<MoveCandidate> GenerateCandidates(const Config& current, const MoveContext& ctx) {
  std::vector<MoveCandidate> bases;
  if (ctx.tpu && ctx.analysis->mesh_mismatch) {
    bases = RepairedBases(current, ctx);
  } else {
    MoveCandidate self;
    self.config = current;
    bases.push_back(self);
  }
  std::vector<MoveCandidate> out;
  std::set<std::string> seen = {ConfigKey(current)};
  auto emit = [&](const MoveCandidate& c) {
    if (Valid(c.config, ctx) && seen.insert(ConfigKey(c.config)).second) out.push_back(c);
  };
  for (const MoveCandidate& base : bases) {
    const Config& b = base.config;
    if (!base.changes.empty()) emit(base);
    std::vector<Step> singles;
    for (const auto& key : MoveKeys(b, ctx)) {
      ParamValue cur = b.count(key) ? b.at(key) : ParamValue();
      if (!b.count(key)) continue;
      for (const auto& to : Neighbours(key, cur, *ctx.spec))
        singles.push_back(MakeStep(b, key, to, ctx));
    }
    std::vector<std::vector<Step>> moves;
    for (size_t i = 0; i < singles.size(); ++i) {
      moves.push_back({singles[i]});
      for (size_t j = i + 1; j < singles.size(); ++j) {
        if (singles[i].key != singles[j].key) moves.push_back({singles[i], singles[j]});
      }
    }
    if (ctx.tpu) AddMeshMoves(b, singles, ctx, &moves);
    for (const auto& m : moves) emit(Apply(current, b, base, m, ctx));
  }
  return out;
}

}  // namespace paratune
