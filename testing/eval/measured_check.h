// The model's cold predictions next to measured trials (contract "Measured trials" JSON lines):
// what tests/model and bench/model_measured_bench.cc judge the model by. The campaign goes
// through LoadCampaignFile + ResolveWorkload + EstimateConfig, the path of `paratune estimate
// -f`, so a number here is the number a user sees. Pure functions; thread-safe.
#ifndef PARATUNE_TESTING_EVAL_MEASURED_CHECK_H_
#define PARATUNE_TESTING_EVAL_MEASURED_CHECK_H_

#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "base/status.h"

namespace paratune {

struct MeasuredComparison {
  Config config;
  bool measured_ok = false;             // the trial ran (outcome succeeded)
  double measured_step_seconds = 0;     // when it ran
  double measured_peak_gib = 0;         // when it ran: peak allocated
  double allocated_at_failure_gib = 0;  // OOM lines, when reported
  Estimate predicted;                   // cold model, no calibration

  // Right when a run that ran was not called does-not-fit and an OOM was (a marginal verdict
  // counts as "fits": the pre-flight launches it).
  bool FitCalledRight() const { return predicted.fits == measured_ok; }
  // Signed relative errors in percent (predicted / measured - 1); 0 when the trial did not run.
  double StepTimeErrorPct() const;
  double PeakMemoryErrorPct() const;
};

struct MeasuredCheck {
  std::string campaign;  // metadata.name
  std::vector<MeasuredComparison> rows;
};

// Loads the campaign YAML and its JSON-lines trials and predicts each measured configuration
// (the campaign's baseline overridden by the line's config). Errors: the file's parse error,
// or kInvalidArgument naming "FILE:LINE" for a malformed line. Lines with outcome "failed"
// (not an OOM) are skipped: they say nothing about memory or time.
Result<MeasuredCheck> CheckAgainstMeasurements(const std::string& campaign_path,
                                               const std::string& trials_path);

}  // namespace paratune

#endif  // PARATUNE_TESTING_EVAL_MEASURED_CHECK_H_
