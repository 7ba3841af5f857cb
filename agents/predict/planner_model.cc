#include "agents/predict/planner_model.h"

#include <memory>

#include "agents/model/perf_model.h"
#include "agents/model/workload.h"

namespace paratune {

namespace {

class ModelPlanner : public PlannerModel {
 public:
  explicit ModelPlanner(Workload w) : w_(std::move(w)) {}
  std::vector<std::string> Violations(const Config& c) const override {
    return CheckConstraints(w_, c);
  }
  Estimate EstimateUncalibrated(const Config& c) const override { return EstimateConfig(w_, c); }
  double CapacityGiB() const override { return w_.accel != nullptr ? w_.accel->hbm_gib : 0; }
  const Workload* workload() const override { return &w_; }

 private:
  Workload w_;
};

}  // namespace

Result<std::unique_ptr<PlannerModel>> CreateModelPlanner(const CampaignSpec& spec) {
  auto w = ResolveWorkload(spec);
  if (!w.ok()) return w.status();
  return std::unique_ptr<PlannerModel>(new ModelPlanner(std::move(w).value()));
}

}  // namespace paratune
