// The loop's view of the performance and memory model (agents/model), behind an interface so the
// agents can be tested with a fake and so a resumed session rebuilds it from the campaign alone.
// Estimates here are uncalibrated; CalibratedPredictor (predictor.h) applies what the loop has
// learned from observations.
#ifndef PARATUNE_AGENTS_PREDICT_PLANNER_MODEL_H_
#define PARATUNE_AGENTS_PREDICT_PLANNER_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/core/results.h"
#include "base/status.h"

namespace paratune {

struct Workload;  // agents/model/workload.h

// Thread-safety: const methods may run concurrently.
class PlannerModel {
 public:
  virtual ~PlannerModel() = default;
  // Broken constraints of `c` (heads % tp, devices % (tp*pp*cp), ...), each a sentence naming the
  // keys; empty when the configuration can run.
  virtual std::vector<std::string> Violations(const Config& c) const = 0;
  // The model's verdict with default (uncalibrated) efficiencies. Must be fast (< ~10 us).
  virtual Estimate EstimateUncalibrated(const Config& c) const = 0;
  // Usable device memory in GiB.
  virtual double CapacityGiB() const = 0;
  // The resolved workload (model shape, hardware); nullptr for fakes.
  virtual const Workload* workload() const = 0;
};

// The PlannerModel backed by agents/model (ResolveWorkload, CheckConstraints, EstimateConfig).
// Fails (kInvalidArgument/kNotFound naming the field) when the campaign's model, training or
// hardware sections cannot be resolved.
Result<std::unique_ptr<PlannerModel>> CreateModelPlanner(const CampaignSpec& spec);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_PREDICT_PLANNER_MODEL_H_
