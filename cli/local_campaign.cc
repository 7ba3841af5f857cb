#include "cli/local_campaign.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/collectors/metric_collector.h"
#include "agents/engines/engine_factory.h"
#include "agents/trials/early_stopping.h"

namespace paratune::cli {

namespace {

std::string PoolPath(const std::string& dir) { return dir + "/pool.json"; }

// The pool of an earlier run in DIR, or an empty one. The file names its campaign so that a DIR
// is never resumed by another campaign.
Result<MessagePool> LoadPool(const std::string& dir, const std::string& campaign) {
  std::ifstream in(PoolPath(dir));
  if (!in) return MessagePool();
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  const std::string where = "--out: " + PoolPath(dir);
  if (!j.is_object() || !j.contains("pool")) {
    return Status::Invalid(where + ": not a paratune tune pool (remove it or pick another --out)");
  }
  if (j.value("campaign", "") != campaign) {
    return Status::Invalid(where + ": holds campaign \"" + j.value("campaign", "") + "\", not \"" +
                           campaign + "\"");
  }
  auto pool = MessagePool::FromJson(j["pool"]);
  if (!pool.ok()) return pool.status().WithPrefix(where);
  return pool;
}

// Written to a temporary file and renamed: an interrupt never leaves half a pool.
Status SavePool(const std::string& dir, const std::string& campaign, const MessagePool& pool) {
  const std::string tmp = PoolPath(dir) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"campaign", campaign}, {"pool", pool.ToJson()}}.dump() << "\n";
    if (!out) return Status::Internal("--out: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), PoolPath(dir).c_str()) != 0) {
    return Status::Internal("--out: cannot replace " + PoolPath(dir));
  }
  return Status::Ok();
}

bool IsOpen(const TrialRecord& t) {
  return t.phase == TrialPhase::kPending || t.phase == TrialPhase::kRunning;
}

TrialPlan PlanOf(const TrialRecord& t) {
  TrialPlan p;
  p.name = t.name;
  p.iteration = t.iteration;
  p.config = t.config;
  p.proposal = t.proposal;
  p.prediction = t.prediction;
  p.retry_of = t.retry_of;
  p.change = t.change;
  p.avoid_nodes = t.avoid_nodes;
  return p;
}

bool Interrupted(const LocalCampaignOptions& o) {
  return o.interrupted != nullptr && *o.interrupted != 0;
}

struct Driver {
  const LocalCampaignOptions& options;
  LocalTrialExecutor* executor;
  const TrialObserver& observer;
  TuningSession& session;
  std::vector<TrialPlan> queued;  // open trials waiting for a slot
  std::optional<StopDecision> stop;
  std::chrono::steady_clock::time_point last_poll{};
  nlohmann::json early_stopped = nlohmann::json::array();

  Status Save() { return SavePool(options.out_dir, session.spec().name, session.pool()); }

  // Proposes into the free slots (none once the coordinator says stop). Returns false when
  // nothing runs or waits and nothing more will be proposed: the campaign is over.
  Result<bool> Fill() {
    int64_t open_slots = executor->Slots() - static_cast<int64_t>(executor->Running()) -
                         static_cast<int64_t>(queued.size());
    if (open_slots > 0 && !stop) {
      stop = session.ShouldStop();
      if (!stop) {
        auto plans = session.ProposeNext(static_cast<int>(open_slots));
        if (!plans.ok()) return plans.status();
        for (auto& p : *plans) queued.push_back(std::move(p));
        PARATUNE_RETURN_IF_ERROR(Save());  // before the trials start, as the reconciler does
        if (plans->empty() && executor->Running() == 0 && queued.empty()) {
          stop = session.ShouldStop();
          if (!stop) stop = StopDecision{StopReason::kSpaceExhausted, "Nothing left to propose."};
        }
      }
    }
    while (!queued.empty() && static_cast<int64_t>(executor->Running()) < executor->Slots()) {
      PARATUNE_RETURN_IF_ERROR(executor->Start(queued.front()));
      queued.erase(queued.begin());
    }
    return executor->Running() > 0 || !queued.empty();
  }

  // Early stopping (spec.budget.earlyStopping), as the TrialRun reconciler does it
  // (controllers/trial_early_stop.cc): a running trial whose logged steps show it cannot beat the
  // best (DecideEarlyStop) is ended; its partial metrics are ingested as a measured, losing
  // trial.
  Status StopLosers() {
    const CampaignSpec& spec = session.spec();
    const auto now = std::chrono::steady_clock::now();
    if (!spec.budget.early_stopping || now - last_poll < options.early_stop_interval) {
      return Status::Ok();
    }
    last_poll = now;
    const SessionSummary sum = session.Summary();
    if (!sum.best) return Status::Ok();
    const double best = session.ObjectiveOf(*sum.best);
    const auto ctx = CollectorContextFor(spec);
    for (const auto& [name, log] : executor->RunningLogs()) {
      auto read = collectors::CollectLogWithStepTimes(spec.metrics_collector, log, ctx);
      if (!read.ok()) continue;  // nothing logged yet
      EarlyStopInput in;
      in.steady_step_times = read->steady_step_times;
      in.objective = read->metrics.Objective(spec.objective.metric);
      in.best_objective = best;
      in.maximize = spec.objective.Maximize();
      const EarlyStopDecision decision = DecideEarlyStop(in);
      if (!decision.stop) continue;
      std::optional<TrialOutcome> o = executor->Stop(name);
      if (!o) continue;
      o->succeeded = true;
      o->metrics = read->metrics;
      nlohmann::json evidence = decision.ToJson();
      evidence["trial"] = name;
      evidence["bestTrial"] = sum.best->name;
      early_stopped.push_back(evidence);
      PARATUNE_RETURN_IF_ERROR(Ingest({*o}));
    }
    return Status::Ok();
  }

  Status Ingest(const std::vector<TrialOutcome>& finished) {
    for (const auto& o : finished) {
      Status s = session.RecordOutcome(o);
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
      PARATUNE_RETURN_IF_ERROR(Save());
      if (observer) {
        if (const TrialRecord* t = session.pool().FindTrial(o.name)) observer(*t, session);
      }
    }
    return Status::Ok();
  }
};

}  // namespace

Result<LocalCampaignResult> RunLocalCampaign(const CampaignSpec& spec,
                                             const LocalCampaignOptions& options,
                                             LocalTrialExecutor* executor,
                                             const TrialObserver& observer) {
  const auto start = std::chrono::steady_clock::now();
  SimulationOptions sim;
  sim.strategy = options.strategy;
  sim.seed = options.seed;
  auto session_options = SessionOptionsFor(sim);
  if (!session_options.ok()) return session_options.status();
  auto pool = LoadPool(options.out_dir, spec.name);
  if (!pool.ok()) return pool.status();
  int64_t finished_before = 0;
  for (const auto& t : pool->trials()) finished_before += IsOpen(t) ? 0 : 1;
  SessionDeps deps;
  deps.options = *session_options;
  EngineOptions eo{&spec, options.seed, &*pool};
  auto engine = options.engine_factory
                    ? options.engine_factory(WithEngine(spec, options.strategy), &*pool)
                    : CreateStrategyEngine(options.strategy, eo);
  if (!engine.ok()) return engine.status().WithPrefix("--strategy");
  deps.engine = std::move(engine).value();
  auto session = TuningSession::Create(spec, &*pool, std::move(deps));
  if (!session.ok()) return session.status();
  Driver d{options, executor, observer, **session, {}, std::nullopt, {}, nlohmann::json::array()};
  for (const auto& t : d.session.pool().trials()) {
    if (IsOpen(t)) d.queued.push_back(PlanOf(t));  // interrupted last time: run again
  }
  LocalCampaignResult result;
  for (;;) {
    if (Interrupted(options)) {
      executor->KillAll();
      result.interrupted = true;
      break;
    }
    auto busy = d.Fill();
    if (!busy.ok()) return busy.status();
    if (!*busy) break;
    PARATUNE_RETURN_IF_ERROR(d.Ingest(executor->Reap(std::chrono::milliseconds(200))));
    PARATUNE_RETURN_IF_ERROR(d.StopLosers());
  }
  PARATUNE_RETURN_IF_ERROR(d.Save());
  if (!result.interrupted) {
    if (auto now = d.session.ShouldStop()) d.stop = now;  // the last trials may have changed it
  }
  result.stop = result.interrupted ? std::nullopt : d.stop;
  result.json = SimulationJson(d.session, result.stop, std::nullopt);
  result.json["seed"] = options.seed;
  result.json["strategy"] = options.strategy;
  result.json["ablate"] = "";
  result.json["local"] = {
      {"outDir", options.out_dir},           {"gpusPerTrial", executor->GpusPerTrial()},
      {"parallelTrials", executor->Slots()}, {"resumedFinishedTrials", finished_before},
      {"interrupted", result.interrupted},   {"earlyStopped", d.early_stopped}};
  result.json["wallSeconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace paratune::cli
