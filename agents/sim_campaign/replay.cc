#include "agents/sim_campaign/replay.h"

#include <fstream>
#include <set>
#include <sstream>

#include "agents/predict/memory_fit.h"
#include "agents/predict/planner_model.h"
#include "base/strings.h"

namespace paratune {

namespace {

Result<MeasuredTrial> ParseLine(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("config")) {
    return Status::Invalid(where + ": a JSON object with \"config\" and \"outcome\" expected");
  }
  MeasuredTrial t;
  auto c = ConfigFromJson(j["config"], where + ".config");
  if (!c.ok()) return c.status();
  t.config = std::move(c).value();
  t.outcome = j.value("outcome", "");
  if (t.outcome == "succeeded") {
    if (!j.contains("metrics") || !j["metrics"].is_object()) {
      return Status::Invalid(where + ".metrics: required when outcome is succeeded");
    }
    auto m = TrialMetrics::FromJson(j["metrics"]);
    if (!m.ok()) return m.status().WithPrefix(where + ".metrics");
    t.metrics = *m;
    return t;
  }
  if (t.outcome != "oom" && t.outcome != "failed") {
    return Status::Invalid(where + ".outcome: \"" + t.outcome +
                           "\" is not one of succeeded, oom, failed");
  }
  const nlohmann::json f = j.value("failure", nlohmann::json::object());
  t.category = f.is_object() ? f.value("category", "") : "";
  if (t.outcome == "oom" && t.category.empty()) t.category = "CudaOOM";
  if (t.category.empty()) t.category = "Unknown";
  if (f.is_object()) {
    const auto a = f.find("allocatedAtFailureGiB");
    if (a != f.end() && a->is_number()) t.allocated_at_failure_gib = a->get<double>();
    t.error = f.value("error", f.value("message", ""));
  }
  return t;
}

// The config typed like the search space's values (an int in the file matches an enum "1"
// nowhere; a value the space lists wins over the file's spelling).
Config TypeLike(const Config& c, const CampaignSpec& spec) {
  Config out = c;
  for (const auto& p : spec.search_space) {
    auto it = out.find(p.name);
    if (it == out.end()) continue;
    for (const auto& v : p.values) {
      if (v.ToString() == it->second.ToString()) it->second = v;
    }
  }
  return out;
}

}  // namespace

Result<std::vector<MeasuredTrial>> ParseMeasurements(const std::string& text,
                                                     const CampaignSpec& spec,
                                                     const std::string& file_name) {
  std::vector<MeasuredTrial> out;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = file_name + ":" + std::to_string(n);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status::Invalid(where + ": not valid JSON");
    auto t = ParseLine(j, where);
    if (!t.ok()) return t.status();
    t->config = TypeLike(t->config, spec);
    if (!seen.insert(ConfigKey(t->config)).second) continue;  // the first line of a config wins
    out.push_back(std::move(t).value());
  }
  if (out.empty()) return Status::Invalid(file_name + ": no measured trial");
  return out;
}

Result<std::vector<MeasuredTrial>> LoadMeasurementsFile(const std::string& path,
                                                        const CampaignSpec& spec) {
  std::ifstream f(path);
  if (!f) return Status::NotFound("--measurements: cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseMeasurements(ss.str(), spec, path);
}

std::string TorchOomText(double allocated_gib, double capacity_gib) {
  const double reserved_free = 0.35;
  const double in_use = std::min(capacity_gib - 0.02, allocated_gib + reserved_free + 0.55);
  const double free_gib = std::max(0.02, capacity_gib - in_use);
  const double tried = std::max(0.02, capacity_gib - allocated_gib);
  return "Traceback (most recent call last):\n"
         "  File \"/workspace/sweep.py\", line 60, in run\n"
         "    loss.backward()\n"
         "  File \"/usr/local/lib/python3.12/dist-packages/torch/_tensor.py\", line 647, in "
         "backward\n"
         "    torch.autograd.backward(\n"
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " +
         Fixed(tried, 2) + " GiB. GPU 0 has a total capacity of " + Fixed(capacity_gib, 2) +
         " GiB of which " + Fixed(free_gib, 2) +
         " GiB is free. Including non-PyTorch memory, this process has " + Fixed(in_use, 2) +
         " GiB memory in use. Of the allocated memory " + Fixed(allocated_gib, 2) +
         " GiB is allocated by PyTorch, and " + Fixed(reserved_free, 2) +
         " GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
         "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
         "fragmentation.  See documentation for Memory Management  "
         "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n";
}

TrialRecord RecordFromMeasurement(const MeasuredTrial& t, double capacity_gib,
                                  const std::string& name) {
  TrialRecord r;
  r.name = name;
  r.config = t.config;
  if (t.Succeeded()) {
    r.phase = TrialPhase::kSucceeded;
    r.metrics = t.metrics;
    return r;
  }
  r.phase = TrialPhase::kFailed;
  FailureDiagnosis d;
  d.category = t.category;
  d.confidence = 95;
  d.evidence = t.OutOfMemory() ? TorchOomText(t.allocated_at_failure_gib, capacity_gib) : t.error;
  d.summary = t.category + " (measured)";
  r.failure = d;
  return r;
}

bool PredictedToFit(const Config& c, const CalibratedPredictor& predictor,
                    const PlannerModel& model, const MessagePool& pool) {
  for (const auto& t : pool.trials()) {
    if (t.phase == TrialPhase::kFailed && t.failure && t.failure->Is(FailureCategory::kCudaOOM) &&
        NeedsAtLeastAsMuchMemory(c, t.config)) {
      return false;
    }
  }
  const PointPrediction p = predictor.PredictConfig(c, model);
  return p.peak_memory_gib + p.memory_margin_gib <= p.UsableGiB(model.CapacityGiB());
}

ReplayRunner::ReplayRunner(std::vector<MeasuredTrial> trials, double capacity_gib,
                           ObjectiveMetric metric)
    : trials_(std::move(trials)), capacity_gib_(capacity_gib), metric_(metric) {}

const MeasuredTrial* ReplayRunner::Find(const Config& c) const {
  const std::string key = ConfigKey(c);
  for (const auto& t : trials_) {
    if (ConfigKey(t.config) == key) return &t;
  }
  return nullptr;
}

bool ReplayRunner::Measured(const Config& c) const { return Find(c) != nullptr; }

TrialOutcome ReplayRunner::Run(const TrialPlan& plan, int64_t attempt) {
  (void)attempt;  // a replayed measurement answers the same on a retry
  TrialOutcome o;
  o.name = plan.name;
  const MeasuredTrial* t = Find(plan.config);
  if (t == nullptr) {  // callers check Measured first; answer like a run that left no trace
    o.exit_code = 1;
    o.log = "replay: configuration " + ConfigKey(plan.config) + " was never measured\n";
    o.termination_message = o.log;
    return o;
  }
  if (t->Succeeded()) {
    o.succeeded = true;
    o.metrics = t->metrics;
    o.termination_message = nlohmann::json{{"metrics", t->metrics.ToJson()}}.dump();
    return o;
  }
  o.exit_code = 1;
  o.log = t->OutOfMemory()
              ? TorchOomText(t->allocated_at_failure_gib, capacity_gib_)
              : (t->error.empty() ? "training failed (" + t->category + ")\n" : t->error + "\n");
  o.termination_message = o.log;
  return o;
}

std::optional<TrialMetrics> ReplayRunner::TrueMetrics(const Config& config) const {
  const MeasuredTrial* t = Find(config);
  if (t == nullptr || !t->Succeeded() || t->metrics.Objective(metric_) <= 0) return std::nullopt;
  return t->metrics;
}

Result<std::unique_ptr<ReplayRunner>> MakeReplayRunner(const CampaignSpec& spec,
                                                       std::vector<MeasuredTrial> trials) {
  auto model = CreateModelPlanner(spec);
  if (!model.ok()) return model.status();
  // Metrics absent from a line are derived from the ones present through the model's FLOPs and
  // tokens per step (the measured step time is what the model's ratio scales).
  for (auto& t : trials) {
    if (!t.Succeeded()) continue;
    const Estimate e = (*model)->EstimateUncalibrated(t.config);
    TrialMetrics& m = t.metrics;
    if (m.step_time_seconds <= 0 && m.tokens_per_second_per_device > 0 &&
        e.tokens_per_second_per_device > 0) {
      m.step_time_seconds =
          e.step_time_seconds * e.tokens_per_second_per_device / m.tokens_per_second_per_device;
    }
    if (m.step_time_seconds <= 0 || e.step_time_seconds <= 0) continue;
    const double ratio = e.step_time_seconds / m.step_time_seconds;
    if (m.tokens_per_second_per_device <= 0) {
      m.tokens_per_second_per_device = e.tokens_per_second_per_device * ratio;
    }
    if (m.mfu <= 0) m.mfu = e.mfu * ratio;
    if (m.tflops_per_device <= 0) m.tflops_per_device = e.model_tflops_per_device * ratio;
  }
  return std::make_unique<ReplayRunner>(std::move(trials), (*model)->CapacityGiB(),
                                        spec.objective.metric);
}

}  // namespace paratune
