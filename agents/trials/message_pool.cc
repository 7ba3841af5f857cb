#include "agents/trials/message_pool.h"

#include <algorithm>
#include <cmath>

#include "base/json_fields.h"
#include "base/strings.h"

namespace paratune {

namespace {

constexpr double kBig = 1e15;

// Reads an array field and parses each element with `parse(elem, "field[i]")`.
template <typename T, typename Fn>
Status ReadArray(const nlohmann::json& j, const std::string& key, const std::string& field,
                 std::vector<T>* out, Fn parse) {
  if (!j.contains(key) || j.at(key).is_null()) return Status::Ok();
  const auto& arr = j.at(key);
  if (!arr.is_array()) return Status::Invalid(field + "." + key + ": must be a list");
  for (size_t i = 0; i < arr.size(); ++i) {
    auto r = parse(arr[i], field + "." + key + "[" + std::to_string(i) + "]");
    if (!r.ok()) return r.status();
    out->push_back(std::move(r).value());
  }
  return Status::Ok();
}

Result<Config> ReadConfig(const nlohmann::json& j, const std::string& field) {
  if (!j.contains("config")) return Config{};
  return ConfigFromJson(j.at("config"), field + ".config");
}

}  // namespace

nlohmann::json Proposal::ToJson() const {
  return {{"rationale", rationale},
          {"expectedImpact", expected_impact},
          {"confidence", RoundTo(confidence, 4)},
          {"proposedBy", proposed_by}};
}

Result<Proposal> Proposal::FromJson(const nlohmann::json& j, const std::string& field) {
  Proposal p;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadString("rationale", &p.rationale));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("expectedImpact", &p.expected_impact));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("confidence", 0, 1, &p.confidence));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("proposedBy", &p.proposed_by));
  return p;
}

nlohmann::json Prediction::ToJson() const {
  // A prediction the model could not make (an invalid config: infinite step time, NaN MFU)
  // is written as 0, "no prediction", so that FromJson always reads back what ToJson wrote.
  auto amount = [](double v) { return std::isfinite(v) && v > 0 ? RoundTo(v, 4) : 0.0; };
  nlohmann::json j = {{"peakMemoryGiB", amount(peak_memory_gib)},
                      {"mfu", amount(mfu)},
                      {"stepTimeSeconds", amount(step_time_seconds)},
                      {"objective", std::isfinite(objective) ? RoundTo(objective, 4) : 0.0}};
  if (!verdict.empty()) j["verdict"] = verdict;
  if (step_high > 0 || memory_high > 0) {
    j["interval"] = {{"stepTimeSeconds", {amount(step_low), amount(step_high)}},
                     {"peakMemoryGiB", {amount(memory_low), amount(memory_high)}}};
  }
  return j;
}

Result<Prediction> Prediction::FromJson(const nlohmann::json& j, const std::string& field) {
  Prediction p;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("peakMemoryGiB", 0, kBig, &p.peak_memory_gib));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("mfu", 0, kBig, &p.mfu));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("stepTimeSeconds", 0, kBig, &p.step_time_seconds));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("objective", -kBig, kBig, &p.objective));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("verdict", &p.verdict));
  const nlohmann::json& in = f.Get("interval");
  if (!in.is_null()) {
    if (!in.is_object()) return Status::Invalid(field + ".interval: must be an object");
    auto pair = [&](const char* key, double* low, double* high) -> Status {
      const nlohmann::json v = in.value(key, nlohmann::json());
      if (v.is_null()) return Status::Ok();
      if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) {
        return Status::Invalid(field + ".interval." + key + ": must be [low, high] numbers");
      }
      *low = v[0].get<double>();
      *high = v[1].get<double>();
      return Status::Ok();
    };
    PARATUNE_RETURN_IF_ERROR(pair("stepTimeSeconds", &p.step_low, &p.step_high));
    PARATUNE_RETURN_IF_ERROR(pair("peakMemoryGiB", &p.memory_low, &p.memory_high));
  }
  return p;
}

std::string Suggestion::Text() const {
  std::string s = "Change " + parameter + " from " + from.ToString() + " to " + to.ToString();
  if (!reason.empty()) s += ": " + reason;
  return s;
}

nlohmann::json Suggestion::ToJson() const {
  return {{"parameter", parameter},
          {"from", from.ToJson()},
          {"to", to.ToJson()},
          {"reason", reason},
          {"expectedGain", RoundTo(expected_gain, 4)},
          {"text", Text()}};
}

Result<Suggestion> Suggestion::FromJson(const nlohmann::json& j, const std::string& field) {
  Suggestion s;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadString("parameter", &s.parameter));
  const ParamInfo* info = FindParameter(s.parameter);
  if (info == nullptr) return Status::Invalid(f.Path("parameter") + ": unknown parameter");
  auto from = ParseParamValue(*info, f.Get("from"), f.Path("from"));
  if (!from.ok()) return from.status();
  auto to = ParseParamValue(*info, f.Get("to"), f.Path("to"));
  if (!to.ok()) return to.status();
  s.from = *from;
  s.to = *to;
  PARATUNE_RETURN_IF_ERROR(f.ReadString("reason", &s.reason));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("expectedGain", -kBig, kBig, &s.expected_gain));
  return s;
}

nlohmann::json Analysis::ToJson() const {
  nlohmann::json sug = nlohmann::json::array();
  for (const auto& s : suggestions) sug.push_back(s.ToJson());
  return {{"iteration", iteration},
          {"healthState", health_state},
          {"bottleneck", bottleneck},
          {"summary", summary},
          {"suggestions", sug}};
}

Result<Analysis> Analysis::FromJson(const nlohmann::json& j, const std::string& field) {
  Analysis a;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("iteration", 0, INT64_MAX, &a.iteration));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("healthState", &a.health_state));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("bottleneck", &a.bottleneck));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("summary", &a.summary));
  PARATUNE_RETURN_IF_ERROR(
      ReadArray(j, "suggestions", field, &a.suggestions, Suggestion::FromJson));
  return a;
}

nlohmann::json CalibrationState::ToJson() const {
  return {{"computeEfficiency", RoundTo(compute_efficiency, 4)},
          {"communicationEfficiency", RoundTo(communication_efficiency, 4)},
          {"memoryOverheadGiB", RoundTo(memory_overhead_gib, 4)},
          {"memoryMarginGiB", RoundTo(memory_margin_gib, 4)},
          {"residualSigma", RoundTo(residual_sigma, 4)},
          {"observations", observations},
          {"oomObservations", oom_observations},
          {"memoryStaticScale", RoundTo(memory_static_scale, 4)},
          {"memoryActivationScale", RoundTo(memory_activation_scale, 4)},
          {"memoryLogitsBytes", RoundTo(memory_logits_bytes, 4)},
          {"microbatchFloorSeconds", RoundTo(microbatch_floor_seconds, 4)}};
}

Result<CalibrationState> CalibrationState::FromJson(const nlohmann::json& j,
                                                    const std::string& field) {
  CalibrationState c;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("computeEfficiency", 1e-6, kBig, &c.compute_efficiency));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadDouble("communicationEfficiency", 1e-6, kBig, &c.communication_efficiency));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("memoryOverheadGiB", -kBig, kBig, &c.memory_overhead_gib));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("memoryMarginGiB", 0, kBig, &c.memory_margin_gib));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("residualSigma", 0, kBig, &c.residual_sigma));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("observations", 0, INT64_MAX, &c.observations));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("oomObservations", 0, INT64_MAX, &c.oom_observations));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("memoryStaticScale", 0, kBig, &c.memory_static_scale));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadDouble("memoryActivationScale", 0, kBig, &c.memory_activation_scale));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("memoryLogitsBytes", -kBig, kBig, &c.memory_logits_bytes));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadDouble("microbatchFloorSeconds", 0, kBig, &c.microbatch_floor_seconds));
  return c;
}

nlohmann::json TrialRecord::ToJson() const {
  nlohmann::json j = {{"iteration", iteration},
                      {"name", name},
                      {"config", ConfigToJson(config)},
                      {"phase", TrialPhaseName(phase)},
                      {"proposal", proposal.ToJson()},
                      {"rationale", proposal.rationale},
                      {"prediction", prediction.ToJson()},
                      {"retryOf", retry_of},
                      {"change", change},
                      {"analysisIndex", analysis_index}};
  j["metrics"] = metrics ? metrics->ToJson() : nlohmann::json(nullptr);
  j["failure"] = failure ? failure->ToJson() : nlohmann::json(nullptr);
  if (accelerator_hours > 0) j["acceleratorHours"] = accelerator_hours;
  // Health fields only when set, so pools without node placement read as before.
  if (!node_names.empty()) j["nodeNames"] = node_names;
  if (anomaly) j["anomaly"] = anomaly->ToJson();
  if (!avoid_nodes.empty()) j["avoidNodes"] = avoid_nodes;
  if (retry_requested) {
    j["retryRequested"] = true;
    j["retryAvoidNodes"] = retry_avoid_nodes;
  }
  return j;
}

namespace {

// The health fields of a trial (all optional).
Status ReadHealthFields(const JsonFields& f, const std::string& field, TrialRecord* t) {
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("nodeNames", &t->node_names));
  if (f.Has("anomaly")) {
    auto a = health::Anomaly::FromJson(f.Get("anomaly"));
    if (!a.ok()) return a.status().WithPrefix(field);
    t->anomaly = *a;
  }
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("avoidNodes", &t->avoid_nodes));
  PARATUNE_RETURN_IF_ERROR(f.ReadBool("retryRequested", &t->retry_requested));
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("retryAvoidNodes", &t->retry_avoid_nodes));
  return Status::Ok();
}

}  // namespace

nlohmann::json PoolMessage::ToJson() const {
  return {{"iteration", iteration}, {"trial", trial}, {"kind", kind}, {"text", text}};
}

Result<PoolMessage> PoolMessage::FromJson(const nlohmann::json& j, const std::string& field) {
  PoolMessage m;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("iteration", 0, INT64_MAX, &m.iteration));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("trial", &m.trial));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("kind", &m.kind));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("text", &m.text));
  return m;
}

Result<TrialRecord> TrialRecord::FromJson(const nlohmann::json& j, const std::string& field) {
  TrialRecord t;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("iteration", 0, INT64_MAX, &t.iteration));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("name", &t.name));
  if (t.name.empty()) return Status::Invalid(f.Path("name") + ": required");
  auto cfg = ReadConfig(j, field);
  if (!cfg.ok()) return cfg.status();
  t.config = *cfg;
  std::string phase = "Pending";
  PARATUNE_RETURN_IF_ERROR(f.ReadString("phase", &phase));
  auto ph = ParseTrialPhase(phase);
  if (!ph.ok()) return Status::Invalid(f.Path("phase") + ": " + ph.status().message());
  t.phase = *ph;
  if (f.Has("metrics") && !f.Get("metrics").is_null()) {
    auto m = TrialMetrics::FromJson(f.Get("metrics"));
    if (!m.ok()) return m.status().WithPrefix(field);
    t.metrics = *m;
  }
  if (f.Has("failure") && !f.Get("failure").is_null()) {
    auto d = FailureDiagnosis::FromJson(f.Get("failure"));
    if (!d.ok()) return d.status().WithPrefix(field);
    t.failure = *d;
  }
  if (f.Has("proposal")) {
    auto p = Proposal::FromJson(f.Get("proposal"), f.Path("proposal"));
    if (!p.ok()) return p.status();
    t.proposal = *p;
  }
  if (f.Has("prediction")) {
    auto p = Prediction::FromJson(f.Get("prediction"), f.Path("prediction"));
    if (!p.ok()) return p.status();
    t.prediction = *p;
  }
  PARATUNE_RETURN_IF_ERROR(f.ReadString("retryOf", &t.retry_of));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("change", &t.change));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("analysisIndex", -1, INT64_MAX, &t.analysis_index));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("acceleratorHours", 0, 1e12, &t.accelerator_hours));
  PARATUNE_RETURN_IF_ERROR(ReadHealthFields(f, field, &t));
  return t;
}

nlohmann::json RejectedCandidate::ToJson() const {
  return {{"iteration", iteration},
          {"config", ConfigToJson(config)},
          {"reason", reason},
          {"proposedBy", proposed_by}};
}

Result<RejectedCandidate> RejectedCandidate::FromJson(const nlohmann::json& j,
                                                      const std::string& field) {
  RejectedCandidate r;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("iteration", 0, INT64_MAX, &r.iteration));
  auto cfg = ReadConfig(j, field);
  if (!cfg.ok()) return cfg.status();
  r.config = *cfg;
  PARATUNE_RETURN_IF_ERROR(f.ReadString("reason", &r.reason));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("proposedBy", &r.proposed_by));
  return r;
}

nlohmann::json LlmExchange::ToJson() const {
  return {{"iteration", iteration},
          {"role", role},
          {"prompt", prompt},
          {"reply", reply},
          {"parseResult", parse_result},
          {"latencySeconds", RoundTo(latency_seconds, 4)},
          {"promptTokens", prompt_tokens},
          {"completionTokens", completion_tokens},
          {"fallback", fallback}};
}

Result<LlmExchange> LlmExchange::FromJson(const nlohmann::json& j, const std::string& field) {
  LlmExchange e;
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("iteration", 0, INT64_MAX, &e.iteration));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("role", &e.role));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("prompt", &e.prompt));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("reply", &e.reply));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("parseResult", &e.parse_result));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("latencySeconds", 0, kBig, &e.latency_seconds));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("promptTokens", 0, INT64_MAX, &e.prompt_tokens));
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("completionTokens", 0, INT64_MAX, &e.completion_tokens));
  PARATUNE_RETURN_IF_ERROR(f.ReadBool("fallback", &e.fallback));
  return e;
}

size_t MessagePool::AddTrial(TrialRecord t) {
  trials_.push_back(std::move(t));
  return trials_.size() - 1;
}

void MessagePool::AddRejected(RejectedCandidate r) { rejected_.push_back(std::move(r)); }

size_t MessagePool::AddAnalysis(Analysis a) {
  analyses_.push_back(std::move(a));
  return analyses_.size() - 1;
}

void MessagePool::AddLlmExchange(LlmExchange e) { llm_exchanges_.push_back(std::move(e)); }

void MessagePool::AddMessage(PoolMessage m) { messages_.push_back(std::move(m)); }

TrialRecord* MessagePool::FindTrial(const std::string& name) {
  for (auto& t : trials_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const TrialRecord* MessagePool::FindTrial(const std::string& name) const {
  return const_cast<MessagePool*>(this)->FindTrial(name);
}

bool MessagePool::WasTried(const Config& config) const {
  const std::string key = ConfigKey(config);
  return std::any_of(trials_.begin(), trials_.end(), [&](const TrialRecord& t) {
    return t.phase != TrialPhase::kRejected && ConfigKey(t.config) == key;
  });
}

int64_t MessagePool::LastIteration() const {
  int64_t last = 0;
  for (const auto& t : trials_) last = std::max(last, t.iteration);
  return last;
}

nlohmann::json MessagePool::ToJson() const {
  nlohmann::json j = {{"trials", nlohmann::json::array()},
                      {"rejected", nlohmann::json::array()},
                      {"analyses", nlohmann::json::array()},
                      {"calibration", calibration_.ToJson()},
                      {"llmExchanges", nlohmann::json::array()}};
  for (const auto& t : trials_) j["trials"].push_back(t.ToJson());
  for (const auto& r : rejected_) j["rejected"].push_back(r.ToJson());
  for (const auto& a : analyses_) j["analyses"].push_back(a.ToJson());
  for (const auto& e : llm_exchanges_) j["llmExchanges"].push_back(e.ToJson());
  if (!messages_.empty()) {
    j["messages"] = nlohmann::json::array();
    for (const auto& m : messages_) j["messages"].push_back(m.ToJson());
  }
  return j;
}

Result<MessagePool> MessagePool::FromJson(const nlohmann::json& j) {
  MessagePool p;
  const std::string field = "pool";
  JsonFields f(j, field);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys(
      {"trials", "rejected", "analyses", "calibration", "llmExchanges", "messages"}));
  PARATUNE_RETURN_IF_ERROR(ReadArray(j, "trials", field, &p.trials_, TrialRecord::FromJson));
  PARATUNE_RETURN_IF_ERROR(
      ReadArray(j, "rejected", field, &p.rejected_, RejectedCandidate::FromJson));
  PARATUNE_RETURN_IF_ERROR(ReadArray(j, "analyses", field, &p.analyses_, Analysis::FromJson));
  PARATUNE_RETURN_IF_ERROR(
      ReadArray(j, "llmExchanges", field, &p.llm_exchanges_, LlmExchange::FromJson));
  PARATUNE_RETURN_IF_ERROR(ReadArray(j, "messages", field, &p.messages_, PoolMessage::FromJson));
  if (f.Has("calibration")) {
    auto c = CalibrationState::FromJson(f.Get("calibration"), f.Path("calibration"));
    if (!c.ok()) return c.status();
    p.calibration_ = *c;
  }
  return p;
}

}  // namespace paratune
