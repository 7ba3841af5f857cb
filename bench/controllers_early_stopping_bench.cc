// Early stopping over the scenario set (issue 13, item 4): every scenario of bench/scenarios x
// 5 seeds runs a 20-trial built-in campaign on the simulated cluster twice, with early stopping
// off and on. "On" plays the operator's rule (controllers/early_stopping.h DecideEarlyStop, the
// same code) on each successful trial's logged step times as the 30 s log poll would see them:
// after each logged line, against the best objective measured so far; a stopped trial reports
// its partial measurement (mean of the steady steps seen) to the loop, as an EarlyStopped
// TrialRun does. Accelerator-hours of a trial: devices x (45 s start-up + logged steps x
// interval, + one 30 s poll interval when stopped; a trial that would end before that poll
// simply finishes). Reports hours spent and saved, trials
// stopped, wrong stops (a stopped trial whose full run would have beaten the best) and the true
// quality of the campaign's result (best/opt) both ways.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/collectors/metric_collector.h"
#include "agents/core/campaign.h"
#include "agents/model/workload.h"
#include "agents/sim_campaign/sim_runner.h"
#include "agents/sim_campaign/simulation.h"
#include "agents/trials/early_stopping.h"
#include "base/strings.h"

namespace paratune {
namespace {

constexpr int kSeeds = 5;
constexpr int kTrials = 20;
constexpr double kStartupSeconds = 45;  // the simulated cluster's initialization
constexpr double kPollSeconds = 30;     // TrialReconcilerOptions::early_stop_interval

struct Tally {
  double hours = 0, saved = 0;
  int trials = 0, stopped = 0, wrong = 0;
};

// Wraps the simulated cluster; with `enabled`, stops losing trials as the operator would.
class EarlyStoppingRunner : public TrialRunner {
 public:
  EarlyStoppingRunner(TrialRunner* inner, const CampaignSpec& spec, const Workload& w, bool enabled)
      : inner_(inner),
        spec_(spec),
        enabled_(enabled),
        devices_(w.devices),
        interval_(w.IsTpu() ? 1.0 : 10.0) {}

  TrialOutcome Run(const TrialPlan& plan, int64_t attempt) override {
    TrialOutcome o = inner_->Run(plan, attempt);
    if (!o.succeeded || o.step_times.empty()) return o;
    auto full = collectors::CollectTrialMetrics(spec_.metrics_collector, o.termination_message,
                                                o.log, CollectorContextFor(spec_));
    if (!full.ok()) return o;
    const ObjectiveMetric metric = spec_.objective.metric;
    const bool maximize = spec_.objective.Maximize();
    const double final_objective = full->Objective(metric);
    ++tally.trials;
    size_t seen = o.step_times.size();
    if (enabled_ && best_ > 0) {
      for (size_t k = 2; k < o.step_times.size(); ++k) {
        EarlyStopInput in;
        const size_t skip = std::max<size_t>(1, k / 5);  // SteadyState's warm-up
        in.steady_step_times.assign(o.step_times.begin() + static_cast<std::ptrdiff_t>(skip),
                                    o.step_times.begin() + static_cast<std::ptrdiff_t>(k));
        in.objective = Partial(*full, o, in.steady_step_times).Objective(metric);
        in.best_objective = best_;
        in.maximize = maximize;
        if (DecideEarlyStop(in).stop) {
          seen = k;
          break;
        }
      }
    }
    const double full_hours = Hours(o.step_times, o.step_times.size(), false);
    // A trial that ends before the next poll is not stopped: it simply finishes.
    if (seen < o.step_times.size() && Hours(o.step_times, seen, true) >= full_hours) {
      seen = o.step_times.size();
    }
    if (seen < o.step_times.size()) {
      const double h = Hours(o.step_times, seen, true);
      tally.hours += h;
      tally.saved += std::max(0.0, full_hours - h);
      ++tally.stopped;
      if (maximize ? final_objective > best_ : final_objective < best_) ++tally.wrong;
      const size_t skip = std::max<size_t>(1, seen / 5);
      std::vector<double> steady(o.step_times.begin() + static_cast<std::ptrdiff_t>(skip),
                                 o.step_times.begin() + static_cast<std::ptrdiff_t>(seen));
      o.termination_message =
          nlohmann::json{{"metrics", Partial(*full, o, steady).ToJson()}}.dump();
      o.step_times.resize(seen);
      return o;
    }
    tally.hours += full_hours;
    if (best_ <= 0 || (maximize ? final_objective > best_ : final_objective < best_)) {
      best_ = final_objective;
    }
    return o;
  }

  std::optional<TrialMetrics> TrueMetrics(const Config& c) const override {
    return inner_->TrueMetrics(c);
  }

  Tally tally;

 private:
  // The measurement after the steady steps `steady`: throughput scales as 1 / step time.
  static TrialMetrics Partial(const TrialMetrics& full, const TrialOutcome& o,
                              const std::vector<double>& steady) {
    double full_mean = 0, mean = 0;
    for (size_t i = 1; i < o.step_times.size(); ++i) full_mean += o.step_times[i];
    full_mean /= static_cast<double>(std::max<size_t>(1, o.step_times.size() - 1));
    for (double t : steady) mean += t;
    mean /= static_cast<double>(std::max<size_t>(1, steady.size()));
    TrialMetrics m = full;
    const double r = mean > 0 ? full_mean / mean : 1;
    m.mfu *= r;
    m.tflops_per_device *= r;
    m.tokens_per_second_per_device *= r;
    m.step_time_seconds = mean;
    return m;
  }

  double Hours(const std::vector<double>& steps, size_t lines, bool stopped) const {
    double s = kStartupSeconds + (stopped ? kPollSeconds : 0);
    for (size_t i = 0; i < lines && i < steps.size(); ++i) s += steps[i] * interval_;
    return static_cast<double>(devices_) * s / 3600.0;
  }

  TrialRunner* inner_;
  const CampaignSpec& spec_;
  bool enabled_;
  int64_t devices_;
  double interval_;
  double best_ = 0;
};

// True objective of the campaign's best measured configuration over the optimum.
double Quality(const nlohmann::json& result, const TrialRunner& runner, const CampaignSpec& spec,
               double optimum) {
  if (!result.contains("best") || !result["best"].is_object() || optimum <= 0) return 0;
  auto config = ConfigFromJson(result["best"].value("config", nlohmann::json::object()), "best");
  if (!config.ok()) return 0;
  auto m = runner.TrueMetrics(*config);
  if (!m) return 0;
  const double v = m->Objective(spec.objective.metric);
  if (v <= 0) return 0;
  return spec.objective.Maximize() ? v / optimum : optimum / v;
}

int Main() {
  const std::filesystem::path dir = std::filesystem::path(PARATUNE_SOURCE_DIR) / "bench/scenarios";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  const auto t0 = std::chrono::steady_clock::now();
  std::string rows;
  Tally off_all, on_all;
  double q_off = 0, q_on = 0;
  int runs = 0;
  for (const auto& f : files) {
    auto spec = LoadCampaignFile(f.string());
    auto w = spec.ok() ? ResolveWorkload(*spec) : Result<Workload>(spec.status());
    if (!w.ok()) {
      std::cerr << f << ": " << w.status().ToString() << "\n";
      return 1;
    }
    Tally off_sc, on_sc;
    double qs_off = 0, qs_on = 0;
    for (int seed = 1; seed <= kSeeds; ++seed) {
      auto inner = MakeSimulatedClusterRunner(*spec, seed);
      if (!inner.ok()) return 1;
      double optimum = 0;
      for (bool enabled : {false, true}) {
        EarlyStoppingRunner runner(inner->get(), *spec, *w, enabled);
        SimulationOptions o;
        o.seed = static_cast<uint64_t>(seed);
        o.max_trials = kTrials;
        o.exhaustive = optimum == 0;
        auto r = RunSimulation(*spec, o, &runner, {});
        if (!r.ok()) {
          std::cerr << f << ": " << r.status().ToString() << "\n";
          return 1;
        }
        if (optimum == 0) optimum = r->json["optimum"]["objective"].get<double>();
        const double q = Quality(r->json, runner, *spec, optimum);
        Tally& t = enabled ? on_sc : off_sc;
        t.hours += runner.tally.hours;
        t.saved += runner.tally.saved;
        t.trials += runner.tally.trials;
        t.stopped += runner.tally.stopped;
        t.wrong += runner.tally.wrong;
        (enabled ? qs_on : qs_off) += q;
      }
    }
    rows += "| " + f.stem().string() + " | " + Fixed(off_sc.hours / kSeeds, 1) + " | " +
            Fixed(on_sc.hours / kSeeds, 1) + " | " +
            Fixed(off_sc.hours > 0 ? 100 * (1 - on_sc.hours / off_sc.hours) : 0, 0) + "% | " +
            Fixed(static_cast<double>(on_sc.stopped) / kSeeds, 1) + " | " +
            std::to_string(on_sc.wrong) + " | " + Fixed(qs_off / kSeeds, 3) + " | " +
            Fixed(qs_on / kSeeds, 3) + " |\n";
    for (auto [all, sc] : {std::pair{&off_all, &off_sc}, std::pair{&on_all, &on_sc}}) {
      all->hours += sc->hours;
      all->saved += sc->saved;
      all->trials += sc->trials;
      all->stopped += sc->stopped;
      all->wrong += sc->wrong;
    }
    q_off += qs_off;
    q_on += qs_on;
    runs += kSeeds;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("## Early stopping\n\n");
  std::printf(
      "%zu scenarios (bench/scenarios) x %d seeds, %d-trial built-in campaigns on the simulated "
      "cluster, early stopping off vs on (the operator's rule, controllers/early_stopping.h, "
      "played on each trial's logged step times as the 30 s log poll sees them). "
      "Accelerator-hours: devices x (45 s start-up + logged steps, + 30 s poll when stopped) of "
      "the successful trials (a trial that ends before the poll that would stop it finishes); "
      "means per campaign. Wrong stops: stopped trials whose full run "
      "would have beaten the best. best/opt: true objective of the campaign's best over the "
      "optimum.\n\n",
      files.size(), kSeeds, kTrials);
  std::printf(
      "| scenario | accel-h off | accel-h on | saved | stopped trials | wrong stops | best/opt off "
      "| best/opt on |\n|---|---|---|---|---|---|---|---|\n%s\n",
      rows.c_str());
  std::printf(
      "- accelerator-hours over all %d campaigns: %.0f without early stopping, %.0f with "
      "it: %.0f saved (%.1f%%)\n",
      runs, off_all.hours, on_all.hours, off_all.hours - on_all.hours,
      off_all.hours > 0 ? 100 * (1 - on_all.hours / off_all.hours) : 0.0);
  std::printf("- trials stopped early: %d of %d successful trials (%.1f%%); wrong stops: %d\n",
              on_all.stopped, on_all.trials,
              on_all.trials > 0 ? 100.0 * on_all.stopped / on_all.trials : 0.0, on_all.wrong);
  std::printf("- hours the stopped trials did not run: %.0f\n", on_all.saved);
  std::printf("- mean best/opt: %.4f off, %.4f on\n", q_off / runs, q_on / runs);
  std::printf("- benchmark total: %.1f s on one core\n", secs);
  return 0;
}

}  // namespace
}  // namespace paratune

int main() { return paratune::Main(); }
