#include "agents/engines/llm_engine.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "agents/engines/builtin_engine.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/llm/openai_client.h"
#include "agents/llm/redact.h"
#include "base/strings.h"

namespace paratune {
namespace {

// Better-than in the campaign's direction.
bool Better(const CampaignSpec& spec, double a, double b) {
  return spec.objective.Maximize() ? a > b : a < b;
}

// The configuration the model is asked to improve: the best trial, else the baseline.
Config Reference(const EngineContext& ctx) {
  if (const TrialRecord* best = ctx.BestTrial()) return best->config;
  if (ctx.spec->baseline) return *ctx.spec->baseline;
  return {};
}

std::string PoolSummary(const EngineContext& ctx) {
  std::ostringstream out;
  const ObjectiveMetric metric = ctx.spec->objective.metric;
  for (const auto& t : ctx.pool->trials()) {
    out << "iteration " << t.iteration << ": " << ConfigKey(t.config) << " -> "
        << TrialPhaseName(t.phase);
    if (t.metrics) {
      out << ", " << ObjectiveMetricName(metric) << " " << Fixed(t.metrics->Objective(metric), 4)
          << ", peak memory " << Fixed(t.metrics->peak_memory_gib, 1) << " GiB";
    }
    if (t.failure) out << ", " << t.failure->category << ": " << t.failure->summary;
    out << "\n";
  }
  return out.str();
}

}  // namespace

llm::ChatClientOptions LlmEngineConfig::ChatOptions() const {
  llm::ChatClientOptions co;
  co.endpoint = endpoint;
  co.model = model;
  co.api_key = api_key;
  co.timeout = timeout;
  co.max_retries = max_retries;
  return co;
}

Result<LlmEngineConfig> LlmEngineConfigFor(const CampaignSpec& spec, const LlmCliOverrides& cli,
                                           const std::string& api_key, const char* env_api_key) {
  LlmEngineConfig c;
  c.endpoint = cli.endpoint.empty() ? spec.agents.llm_endpoint : cli.endpoint;
  c.model = cli.model.empty() ? spec.agents.llm_model : cli.model;
  if (c.endpoint.empty()) {
    return Status::Invalid(
        "spec.agents.llm.endpoint: required by the llm and hybrid engines (or --llm-endpoint)");
  }
  if (c.model.empty()) {
    return Status::Invalid(
        "spec.agents.llm.model: required by the llm and hybrid engines (or --llm-model)");
  }
  c.api_key = !api_key.empty() ? api_key : (env_api_key != nullptr ? env_api_key : "");
  if (cli.timeout.count() > 0) c.timeout = cli.timeout;
  // Analyst + strategist per iteration, with room for retries of the campaign's trials.
  c.budget.max_calls = std::max<int64_t>(20, 4 * spec.budget.max_trials + 10);
  return c;
}

LlmEngine::LlmEngine(LlmEngineMode mode, LlmEngineDeps deps)
    : mode_(mode),
      client_(std::make_unique<llm::BudgetedChatClient>(std::move(deps.client), deps.budget)),
      agents_(client_.get()),
      pool_(deps.pool),
      knowledge_(std::move(deps.knowledge)),
      secrets_(std::move(deps.secrets)),
      veto_margin_(deps.veto_margin),
      seed_(deps.seed) {}

llm::PromptContext LlmEngine::MakePromptContext(const EngineContext& ctx) const {
  llm::PromptContext p;
  p.spec = ctx.spec;
  p.current = Reference(ctx);
  p.secrets = secrets_;
  const ObjectiveMetric metric = ctx.spec->objective.metric;
  if (const TrialRecord* best = ctx.BestTrial()) {
    p.current_result = std::string(ObjectiveMetricName(metric)) + " " +
                       Fixed(best->metrics->Objective(metric), 4) + " (best so far)";
  }
  p.pool_summary = PoolSummary(ctx);
  const auto& rejected = ctx.pool->rejected();
  for (size_t i = rejected.size() > 8 ? rejected.size() - 8 : 0; i < rejected.size(); ++i) {
    p.rejected.push_back(ConfigKey(rejected[i].config) + ": " + rejected[i].reason);
  }
  std::ostringstream est;
  if (ctx.analysis != nullptr) {
    est << "health: " << ctx.analysis->health_state << ", bottleneck: " << ctx.analysis->bottleneck
        << ". " << ctx.analysis->summary << "\n";
  }
  for (const auto& r : RankCandidates(ctx, 5, 0.0)) {
    est << ConfigKey(ctx.space->points()[r.index].config) << ": predicted "
        << ObjectiveMetricName(metric) << " " << Fixed(r.prediction.objective, 4) << ", peak "
        << Fixed(r.prediction.peak_memory_gib, 1) << " GiB\n";
  }
  p.estimates = est.str();
  if (knowledge_ != nullptr) {
    std::string query =
        ctx.analysis != nullptr ? ctx.analysis->bottleneck + " " + ctx.analysis->health_state : "";
    query += " parallelism tuning " + ctx.spec->model.preset;
    for (const auto& hit : knowledge_->Search(query, 4)) {
      p.knowledge.push_back(hit.title + " [" + hit.id + "]: " + hit.snippet);
    }
  }
  return p;
}

void LlmEngine::Record(const EngineContext& ctx, const llm::RoleExchange& ex, bool fallback,
                       const std::string& note) {
  LlmExchange e;
  e.iteration = ctx.iteration;
  e.role = ex.role;
  for (const auto& m : ex.prompt) e.prompt += "[" + m.role + "]\n" + m.content + "\n";
  e.prompt = llm::Redact(e.prompt, secrets_);
  e.reply = llm::Redact(ex.reply, secrets_);  // a model may echo what it should not
  e.parse_result = ex.parse_result;
  if (!note.empty()) e.parse_result += "; " + note;
  if (fallback) e.parse_result += "; built-in engine took the iteration";
  e.parse_result = llm::Redact(e.parse_result, secrets_);
  e.latency_seconds = static_cast<double>(ex.latency_ms) / 1000.0;
  e.prompt_tokens = ex.prompt_tokens;
  e.completion_tokens = ex.completion_tokens;
  e.fallback = fallback;
  exchanges_.push_back(e);
  if (pool_ != nullptr) pool_->AddLlmExchange(std::move(e));
}

std::string LlmEngine::GuardrailVerdict(const EngineContext& ctx, Config& c,
                                        const std::vector<std::string>& seen) const {
  for (const auto& [k, v] : c) {
    if (ctx.spec->FindSearchParameter(k) == nullptr) {
      return "parameter " + k + " is not in the search space";
    }
  }
  for (const auto& [k, v] : Reference(ctx)) c.emplace(k, v);  // unchanged keys may be omitted
  for (const auto& p : ctx.spec->search_space) {
    if (c.count(p.name) == 0) return "parameter " + p.name + " has no value";
  }
  if (Status s = ctx.spec->CheckInSearchSpace(c, "proposal"); !s.ok()) return s.message();
  const std::string key = ConfigKey(c);
  if (ctx.pool->WasTried(c)) return "duplicate of a configuration already tried";
  if (std::find(seen.begin(), seen.end(), key) != seen.end()) return "duplicate in this reply";
  const ValidationVerdict v = ctx.Validate(c);
  return v.ok ? "" : v.reason;
}

Result<EngineProposal> LlmEngine::Fallback(const EngineContext& ctx, const std::string& why) {
  ++fallbacks_;
  BuiltinEngine builtin(seed_);
  auto out = builtin.Propose(ctx);
  if (!out.ok()) return out;
  for (auto& c : out->candidates) {
    c.proposal.rationale =
        "built-in fallback (" + name() + ": " + why + "): " + c.proposal.rationale;
  }
  return out;
}

// One round of the model's candidates through the guardrails.
struct LlmEngine::Round {
  std::vector<EngineCandidate> accepted;
  std::vector<std::string> rejected;  // "cfg: reason"
};

void LlmEngine::DiagnoseNewFailures(const EngineContext& ctx) {
  if (pool_ == nullptr) return;
  for (auto& t : pool_->trials()) {
    if (t.phase != TrialPhase::kFailed || !t.failure || !diagnosed_.insert(t.name).second) continue;
    const std::string& evidence =
        t.failure->evidence.empty() ? t.failure->summary : t.failure->evidence;
    if (evidence.empty()) continue;  // nothing for the model to read
    llm::PromptContext p;
    p.spec = ctx.spec;
    p.secrets = secrets_;
    p.failed_config = t.config;
    p.failure_log = evidence;
    auto out = agents_.Diagnose(p);
    std::string note;
    const FailureDiagnosis& builtin = *t.failure;
    if (out.value &&
        (builtin.Is(FailureCategory::kUnknown) || out.value->confidence > builtin.confidence)) {
      FailureDiagnosis d = *out.value;
      d.evidence = builtin.evidence;
      d.retryable = builtin.retryable;  // the retry decision was taken when the trial ended
      d.summary += " [LLM diagnostician; built-in said " + builtin.category + "]";
      note = "adopted over the built-in diagnosis (" + builtin.category + ", confidence " +
             std::to_string(builtin.confidence) + ")";
      t.failure = std::move(d);
    } else if (out.value) {
      note = "kept the built-in diagnosis (" + builtin.category + ", confidence " +
             std::to_string(builtin.confidence) + ")";
    }
    Record(ctx, out.exchange, false, note);
    if (!out.exchange.error.empty()) return;  // the endpoint is failing: do not insist
  }
}

Result<EngineProposal> LlmEngine::Propose(const EngineContext& ctx) {
  DiagnoseNewFailures(ctx);
  llm::PromptContext pctx = MakePromptContext(ctx);
  auto analysis = agents_.Analyze(pctx);
  const StatusCode code = analysis.status.code();
  if (code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded ||
      code == StatusCode::kResourceExhausted || code == StatusCode::kUnauthenticated ||
      code == StatusCode::kPermissionDenied) {
    Record(ctx, analysis.exchange, /*fallback=*/true, "");
    return Fallback(ctx, analysis.status.message());
  }
  Record(ctx, analysis.exchange, false, "");
  if (analysis.value) pctx.analysis = llm::LlmAgents::DescribeChanges(*analysis.value);

  // The strategist gives one configuration; the proposer three when several trials are wanted.
  std::vector<llm::ProposedCandidate> proposed;
  llm::RoleExchange exchange;
  Status status;
  if (ctx.want > 1) {
    auto out = agents_.Propose(pctx);
    exchange = out.exchange;
    status = out.status;
    if (out.value) proposed = out.value->candidates;
  } else {
    auto out = agents_.Strategize(pctx);
    exchange = out.exchange;
    status = out.status;
    std::string why =
        pctx.analysis.empty() ? "LLM strategist configuration" : Join(pctx.analysis, " ");
    if (out.value) proposed.push_back({*out.value, why, "", 0.6});
  }
  if (proposed.empty()) {
    Record(ctx, exchange, /*fallback=*/true, "");
    return Fallback(ctx, status.message());
  }

  Round round;
  std::vector<std::string> seen;
  const auto builtin_best = RankCandidates(ctx, 1, 0.0);
  // The built-in engine's one memory-borderline attempt (validated later with its own rule): the
  // hybrid accepts the same configuration from the model under the same rule, not a stricter one.
  std::vector<std::string> builtin_borderline;
  if (mode_ == LlmEngineMode::kHybrid) {
    if (auto own = BuiltinEngine(seed_).Propose(ctx); own.ok()) {
      for (const auto& c : own->candidates) {
        if (c.memory_borderline) builtin_borderline.push_back(ConfigKey(c.config));
      }
    }
  }
  for (const auto& cand : proposed) {
    Config c = cand.config;
    std::string reason = GuardrailVerdict(ctx, c, seen);
    bool borderline = false;
    if (reason.rfind("predicted peak memory", 0) == 0 &&
        std::find(builtin_borderline.begin(), builtin_borderline.end(), ConfigKey(c)) !=
            builtin_borderline.end()) {
      reason.clear();
      borderline = true;
    }
    const PointPrediction pred = ctx.Score(c);
    if (reason.empty() && mode_ == LlmEngineMode::kHybrid && !builtin_best.empty()) {
      const double best = builtin_best[0].prediction.objective;
      const double bar =
          ctx.spec->objective.Maximize() ? best * (1 - veto_margin_) : best * (1 + veto_margin_);
      if (Better(*ctx.spec, bar, pred.objective)) {
        reason = "vetoed by the built-in ranking: predicted " + Fixed(pred.objective, 4) + " vs " +
                 Fixed(best, 4) + " for " +
                 ConfigKey(ctx.space->points()[builtin_best[0].index].config);
      }
    }
    if (!reason.empty()) {
      round.rejected.push_back(ConfigKey(c) + ": " + reason);
      if (pool_ != nullptr) pool_->AddRejected({ctx.iteration, c, reason, name()});
      continue;
    }
    seen.push_back(ConfigKey(c));
    Proposal prop;
    prop.rationale = cand.rationale.empty() ? "LLM proposal" : cand.rationale;
    prop.expected_impact = cand.expected_impact.empty()
                               ? "predicted " +
                                     std::string(ObjectiveMetricName(ctx.spec->objective.metric)) +
                                     " " + Fixed(pred.objective, 4)
                               : cand.expected_impact;
    prop.confidence = cand.confidence;
    prop.proposed_by = name();
    round.accepted.push_back({c, prop, borderline});
  }
  const std::string guardrail = Join(round.rejected, "; ");
  if (round.accepted.empty()) {
    Record(ctx, exchange, /*fallback=*/true, "guardrail: " + guardrail);
    return Fallback(ctx, "every candidate rejected: " + guardrail);
  }
  Record(ctx, exchange, false, guardrail.empty() ? "" : "guardrail: " + guardrail);

  EngineProposal out;
  if (mode_ == LlmEngineMode::kHybrid) {  // the built-in engine ranks what the model proposed
    std::stable_sort(round.accepted.begin(), round.accepted.end(),
                     [&](const EngineCandidate& a, const EngineCandidate& b) {
                       return Better(*ctx.spec, ctx.Score(a.config).objective,
                                     ctx.Score(b.config).objective);
                     });
  }
  out.candidates = std::move(round.accepted);
  if (static_cast<int>(out.candidates.size()) < ctx.want) {  // fill up with built-in picks
    BuiltinEngine builtin(seed_);
    if (auto more = builtin.Propose(ctx); more.ok()) {
      for (auto& c : more->candidates) {
        if (std::find(seen.begin(), seen.end(), ConfigKey(c.config)) == seen.end()) {
          out.candidates.push_back(std::move(c));
        }
      }
    }
  }
  if (analysis.value && mode_ == LlmEngineMode::kLlm && ctx.analysis != nullptr) {
    Analysis a = *ctx.analysis;
    a.summary = "LLM analyst: " + Join(pctx.analysis, " ");
    a.suggestions.clear();
    const Config ref = Reference(ctx);
    for (const auto& s : *analysis.value) {
      auto from = ref.find(s.parameter);
      a.suggestions.push_back(
          {s.parameter, from != ref.end() ? from->second : ParamValue(), s.to, s.reason, 0.0});
    }
    out.analysis = std::move(a);
  }
  return out;
}

Result<std::vector<llm::RecordedReply>> RecordedReplies(const nlohmann::json& j,
                                                        const std::string& field) {
  const nlohmann::json* list = nullptr;
  if (j.is_object() && j.contains("pool") && j["pool"].is_object()) {
    list = j["pool"].contains("llmExchanges") ? &j["pool"]["llmExchanges"] : nullptr;
  } else if (j.is_object() && j.contains("llmExchanges")) {
    list = &j["llmExchanges"];
  }
  if (list == nullptr || !list->is_array() || list->empty()) {
    return Status::Invalid(field + ": no recorded LLM exchanges (pool.llmExchanges)");
  }
  std::vector<llm::RecordedReply> out;
  const std::string failed = "no reply: ";
  for (const auto& e : *list) {
    if (!e.is_object()) return Status::Invalid(field + ": pool.llmExchanges[]: not an object");
    llm::RecordedReply r;
    r.role = e.value("role", "");
    r.reply = e.value("reply", "");
    const std::string parse = e.value("parseResult", "");
    if (parse.rfind(failed, 0) == 0) r.error = parse.substr(failed.size());
    r.prompt_tokens = e.value("promptTokens", int64_t{0});
    r.completion_tokens = e.value("completionTokens", int64_t{0});
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace paratune
