#include "agents/sim_campaign/sim_runner.h"

#include <memory>

#include "agents/model/workload.h"
#include "agents/sim/simulated_cluster.h"
#include "base/strings.h"

namespace paratune {

namespace {

// What a pod's status carries: the tail of the log (FallbackToLogsOnError).
class SimulatedClusterRunner : public TrialRunner {
 public:
  SimulatedClusterRunner(Workload w, uint64_t seed, std::vector<NodeFault> faults, bool structural)
      : w_(std::move(w)) {
    opt_.seed = seed;
    opt_.structural_reality = structural;
    opt_.node_faults = std::move(faults);
  }

  TrialOutcome Run(const TrialPlan& plan, int64_t attempt) override {
    return RunOn(plan, attempt, {});
  }

  // Like a real trial's pod: no termination message on success (frameworks do not write one),
  // so RecordOutcome reads the metrics from the log with the campaign's collector, the code the
  // operator runs on real logs; a failed one leaves its log tail (FallbackToLogsOnError). The
  // step times are the ones the log shows; the fault actually played
  // (SimTrialResult::fault_played) is never passed on.
  TrialOutcome RunOn(const TrialPlan& plan, int64_t attempt,
                     const std::vector<std::string>& nodes) override {
    SimOptions opt = opt_;
    opt.nodes = nodes;
    const SimTrialResult r = RunSimulatedTrial(w_, plan.config, opt, attempt);
    TrialOutcome o;
    o.node_names = nodes;
    if (r.exit_code == 0) o.step_times = r.step_times;
    o.name = plan.name;
    o.succeeded = r.exit_code == 0;
    o.exit_code = r.exit_code;
    if (r.exit_code != 0) o.termination_message = Tail(r.log, 4096);
    o.log = Tail(r.log, 16384);
    o.accelerator_hours = static_cast<double>(w_.devices) * r.simulated_seconds / 3600.0;
    return o;
  }

  std::optional<TrialMetrics> TrueMetrics(const Config& c) const override {
    const SimTruth t = TrueOutcome(w_, c, opt_);
    if (!t.ok) return std::nullopt;
    return t.metrics;
  }

 private:
  Workload w_;
  SimOptions opt_;
};

}  // namespace

Result<std::unique_ptr<TrialRunner>> MakeSimulatedClusterRunner(const CampaignSpec& spec,
                                                                uint64_t seed,
                                                                const std::string& node_faults,
                                                                const std::string& reality) {
  if (reality != "perturbed" && reality != "structural") {
    return Status::Invalid("--reality: unknown kind \"" + reality + "\" (perturbed, structural)");
  }
  auto w = ResolveWorkload(spec);
  if (!w.ok()) return w.status();
  auto faults = ParseNodeFaults(node_faults);
  if (!faults.ok()) return faults.status().WithPrefix("--node-faults");
  return std::unique_ptr<TrialRunner>(new SimulatedClusterRunner(
      std::move(w).value(), seed, std::move(faults).value(), reality == "structural"));
}

}  // namespace paratune
