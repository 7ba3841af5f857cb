// Early stopping of losing trials: the rule lives in agents/loop/early_stopping.h, shared with
// `paratune tune --local`; these names keep the controllers' spelling.
#ifndef PARATUNE_CONTROLLERS_EARLY_STOPPING_H_
#define PARATUNE_CONTROLLERS_EARLY_STOPPING_H_

#include "agents/loop/early_stopping.h"

namespace paratune::controllers {

using ::paratune::DecideEarlyStop;
using ::paratune::EarlyStopDecision;
using ::paratune::EarlyStopInput;
using ::paratune::EarlyStopOptions;

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_EARLY_STOPPING_H_
