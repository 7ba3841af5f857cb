// Wires the TuningCampaign and TrialRun controllers into a kube::Manager: the informers they
// read, their reconcilers and the watches that trigger them. Used by paratune-operator's main()
// and by the integration tests, so both run exactly the same wiring.
#ifndef PARATUNE_CONTROLLERS_SETUP_H_
#define PARATUNE_CONTROLLERS_SETUP_H_

#include <memory>
#include <set>
#include <string>

#include "controllers/campaign_reconciler.h"
#include "controllers/job_renderer.h"
#include "controllers/message_pool_store.h"
#include "controllers/trial_reconciler.h"
#include "operator/manager.h"

namespace paratune::controllers {

struct ControllerSetupOptions {
  std::string watch_namespace;       // "" : all namespaces
  std::set<std::string> namespaces;  // when several: watch all, reconcile only these
  int max_concurrent_reconciles = 4;
  std::string trial_image = kDefaultTrialImage;
  bool detect_jobset = true;  // look for the JobSet API at start
  uint64_t seed = 1;
  EngineFactory engine_factory;  // null: CreateStrategyEngine by spec.agents.engine
};

// What Setup made; owned by the caller, must outlive the manager's Run.
struct ControllerSet {
  std::unique_ptr<MessagePoolStore> store;
  std::shared_ptr<const FailureAnalyzer> analyzer;
  std::unique_ptr<kube::Reconciler> campaign_reconciler;
  std::unique_ptr<kube::Reconciler> trial_reconciler;
  bool jobset_available = false;
};

// Registers both controllers on `mgr` (before mgr->Run). Fails only when the knowledge base
// is malformed (then the fallback analyzer is used, so in practice it does not fail).
Result<std::unique_ptr<ControllerSet>> SetupControllers(kube::Manager* mgr,
                                                        const ControllerSetupOptions& opts);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_SETUP_H_
