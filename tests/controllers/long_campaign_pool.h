// The message pool a long campaign leaves behind, for the pool store's 10,000-trial test and the
// bounded-state benchmark: every trial with a 240-character rationale, every fifth failed with
// 2,000 bytes of evidence.
#ifndef PARATUNE_TESTS_CONTROLLERS_LONG_CAMPAIGN_POOL_H_
#define PARATUNE_TESTS_CONTROLLERS_LONG_CAMPAIGN_POOL_H_

#include <string>

#include "agents/trials/message_pool.h"

namespace paratune::testing {

inline MessagePool LongCampaignPool(int trials) {
  MessagePool pool;
  for (int i = 0; i < trials; ++i) {
    TrialRecord t;
    t.iteration = i;
    t.name = "llama-t" + std::to_string(i);
    t.config = {{"tp", ParamValue::Int(1 + i % 8)}, {"pp", ParamValue::Int(1 + i % 4)}};
    t.proposal.rationale = std::string(240, 'r');
    t.proposal.proposed_by = "builtin";
    t.change = "tp 1->2, pp 1->2, microBatchSize 2->1";
    if (i % 5 == 0) {
      t.phase = TrialPhase::kFailed;
      FailureDiagnosis d;
      d.category = "CudaOOM";
      d.summary = std::string(300, 's');
      d.evidence = std::string(2000, 'x');
      t.failure = d;
    } else {
      t.phase = TrialPhase::kSucceeded;
    }
    pool.AddTrial(t);
  }
  return pool;
}

}  // namespace paratune::testing

#endif  // PARATUNE_TESTS_CONTROLLERS_LONG_CAMPAIGN_POOL_H_
