// The one definition of model FLOPs (issue 35): what MFU and TFLOP/s count, for the estimates and
// the metric collectors alike. Pure function; thread-safe.
#ifndef PARATUNE_AGENTS_MODEL_MODEL_FLOPS_H_
#define PARATUNE_AGENTS_MODEL_MODEL_FLOPS_H_

#include "agents/model/workload.h"

namespace paratune {

// Model FLOPs of one trained token at the workload's sequence length (forward + backward, no
// recomputation; attention over the full sequence, the Megatron-LM / MaxText convention).
double ModelFlopsPerToken(const Workload& w);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_MODEL_MODEL_FLOPS_H_
