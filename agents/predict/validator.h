// The Validator (pre-flight check): every candidate, whoever proposed it, passes here before it
// costs a trial. It rejects configurations outside the search space, with broken constraints,
// already tried, matching a known failure signature, or predicted to exceed device memory by
// less than the margin the Calibration agent learned. A rejection carries a sentence a user can
// act on and is recorded in the pool by the caller.
#ifndef PARATUNE_AGENTS_PREDICT_VALIDATOR_H_
#define PARATUNE_AGENTS_PREDICT_VALIDATOR_H_

#include <string>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/predict/planner_model.h"
#include "agents/predict/predictor.h"
#include "agents/trials/message_pool.h"

namespace paratune {

// The rejection reason of a candidate replay cannot measure (SessionOptions::measurable).
inline constexpr const char* kUnmeasuredReason =
    "not measured: the measurements file has no line for this configuration";

// True for a rejection reason Check gives a candidate predicted to run out of device memory
// (the memory check, or a known out-of-memory failure it needs at least as much memory as):
// a trial the pre-flight check saved from an OOM.
bool IsMemoryRejection(const std::string& reason);

struct ValidatorOptions {
  bool check_memory = true;          // predicted peak + margin vs capacity
  bool check_known_failures = true;  // failure signatures recorded in the pool
  bool check_duplicates = true;
};

struct ValidationVerdict {
  bool ok = false;
  std::string reason;  // why it was rejected ("" when ok)
  PointPrediction prediction;
};

// Holds pointers it does not own; all must outlive it. Thread-safety: Check is const.
class Validator {
 public:
  Validator(const CampaignSpec* spec, const PlannerModel* model, const SearchSpaceIndex* space,
            ValidatorOptions options)
      : spec_(spec), model_(model), space_(space), options_(options) {}

  // `margin_override_gib` >= 0 replaces the learned memory margin (the built-in engine's single
  // memory-borderline attempt uses 0: predicted to fit, but inside the margin).
  ValidationVerdict Check(const Config& c, const MessagePool& pool,
                          const CalibratedPredictor& predictor,
                          double margin_override_gib = -1) const;

  // The known failure in `pool` that `c` matches ("" when none): a non-retryable failure whose
  // implicated parameters all hold the same values in `c` (for memory failures: `c` needs at
  // least as much memory by the model as the failed config).
  std::string MatchKnownFailure(const Config& c, const MessagePool& pool,
                                const CalibratedPredictor& predictor) const;

  const ValidatorOptions& options() const { return options_; }

 private:
  const CampaignSpec* spec_;
  const PlannerModel* model_;
  const SearchSpaceIndex* space_;
  ValidatorOptions options_;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_PREDICT_VALIDATOR_H_
