// Estimates with an interval (contract section 14). The model's error is not the same on every
// stack: on the Hugging Face stack it was fitted to, peaks land within 1%; on stacks it was not
// fitted to, much less close. So every estimate carries the range that the model's residuals on
// its fit data give for the workload's framework profile, per metric, and the memory verdict has
// a margin: "fits" when even the pessimistic end of the peak is within capacity, "does-not-fit"
// when even the optimistic end is not (or a constraint is broken), "marginal" in between.
//
// A residual is log(measured / predicted). A profile's band is [min, max] of its residuals,
// widened to at least kMinHalfWidth each side (a handful of points says little about the
// tails) and, with fewer than kMinPoints residuals, the default band of a profile the model was
// never checked on. Pure functions; thread-safe.
#ifndef PARATUNE_AGENTS_MODEL_INTERVAL_H_
#define PARATUNE_AGENTS_MODEL_INTERVAL_H_

#include <map>
#include <string>
#include <vector>

#include "agents/core/results.h"
#include "agents/model/workload.h"

namespace paratune {

struct Band {
  double low = 0, high = 0;  // log(measured / predicted)
  int points = 0;            // residuals it was learned from (0: the default band)
};

struct ProfileBands {
  Band step_time;  // step time (throughput's band is its inverse)
  Band memory;     // peak memory as the source measured it
};

// Framework profile name -> its bands ("megatron", "torchtitan", "transformers", "deepspeed",
// "maxtext"); a profile missing from the table gets DefaultBands().
using IntervalTable = std::map<std::string, ProfileBands>;

// The profile an estimate's residuals are pooled under.
std::string IntervalProfile(const Workload& w);

// One residual of the fit data.
struct Residual {
  std::string profile;
  bool memory = false;   // false: step time
  double log_ratio = 0;  // log(measured / predicted)
};

// The bands of a profile nothing was measured on: step time -35% .. +35%, memory -25% .. +25%
// (the size of the errors the model had on unseen stacks before the framework profiles).
ProfileBands DefaultBands();

// Learns the bands from residuals (see the file comment).
IntervalTable FitIntervals(const std::vector<Residual>& residuals);

// The table the agents use, learned by bench/model_published_bench.cc from the fit data in
// tests/model/data (h100-hf, published tables, SC'21, MaxText); tests/model/interval_test.cc
// checks that refitting gives these bands.
const IntervalTable& DefaultIntervals();

// Fills e->verdict and the ranges from `e`'s point estimate (fits stays the point verdict's
// constraint part: false when a constraint is broken; otherwise true unless does-not-fit).
void ApplyInterval(const IntervalTable& table, const Workload& w, Estimate* e);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_MODEL_INTERVAL_H_
