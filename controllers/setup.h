// Wires the TuningCampaign and TrialRun controllers into a kube::Manager: the informers they
// read, their reconcilers and the watches that trigger them. Used by paratune-operator's main()
// and by the integration tests, so both run exactly the same wiring.
#ifndef PARATUNE_CONTROLLERS_SETUP_H_
#define PARATUNE_CONTROLLERS_SETUP_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "controllers/campaign_knowledge.h"
#include "controllers/campaign_reconciler.h"
#include "controllers/config_map_cache.h"
#include "controllers/job_renderer.h"
#include "controllers/llm_api_key.h"
#include "controllers/message_pool_store.h"
#include "controllers/node_fit.h"
#include "controllers/node_health/node_health.h"
#include "controllers/node_health/node_ledger_store.h"
#include "controllers/pod_policy.h"
#include "controllers/rdma_resources.h"
#include "controllers/trial_reconciler.h"
#include "operator/manager.h"
#include "operator/object_reader.h"

namespace paratune::controllers {

struct ControllerSetupOptions {
  std::string watch_namespace;  // "" : all namespaces
  // When several: one informer per namespace for each kind (nothing cluster-wide), and only
  // these are reconciled.
  std::set<std::string> namespaces;
  int max_concurrent_reconciles = 4;
  std::string trial_image = kDefaultTrialImage;
  bool detect_jobset = true;  // look for the JobSet API at start
  uint64_t seed = 1;
  EngineFactory engine_factory;  // null: CreateStrategyEngine by spec.agents.engine
  // Cluster health (contract section 10).
  bool node_health = true;  // the node ledger, anti-affinity, remediation
  // Cordon an approved suspect node (a `patch` of the Node, which RBAC grants only then:
  // chart nodeHealth.remediation.enabled, --node-remediation). Off: approvals cordon nothing.
  bool node_remediation = false;
  std::string diagnostics = "nvidia";  // off | nvidia | simulated (--diagnostics)
  std::string operator_namespace = kDefaultOperatorNamespace;  // where the ledger lives
  // How often a running trial's log is read for early stopping (issue 13); 0: never.
  Millis trial_log_poll{30000};
  // Multi-tenant safety (docs/security.md). Campaigns in operator_namespace are refused.
  TrialPodPolicy pod_policy;  // what trial pods may ask for
  // The RDMA extended resource the cluster's nodes advertise (--rdma-resource, chart
  // rdma.resourceName): "" unknown (not checked), "none", or e.g. "rdma/ib" (rdma_resources.h).
  std::string rdma_resource;
  LlmAccessOptions llm;  // LLM endpoints and keys; used when engine_factory is null
  // A single campaign's evidence may make a node suspect only when this is 1 (the ledger's
  // min_campaigns, agents/health/node_ledger.h); the operator's default is 2.
  int suspect_min_campaigns = 2;
  size_t ledger_max_bytes = 0;  // 0: NodeLedgerStore's default bound
  // What a campaign leaves empty (the chart's llm.endpoint and llm.model).
  CampaignDefaults campaign_defaults;
  // The site's knowledge documents (mounted knowledge ConfigMaps) beside the embedded ones;
  // "": the embedded ones only.
  std::string knowledge_dir;
};

// The administrator policy a campaign must meet before anything runs: not in the operator's
// namespace (metadata.namespace), the trial pod policy, the RDMA resource the cluster has, and
// (engine llm|hybrid) LLM access.
// kInvalidArgument naming the field; other codes are transient.
Status AdmitCampaign(kube::KubeClient* client, const ControllerSetupOptions& opts,
                     const std::string& ns, const CampaignSpec& spec, bool check_llm);

// What Setup made; owned by the caller, must outlive the manager's Run.
struct ControllerSet {
  std::unique_ptr<ConfigMapCache> configmaps;  // the stores and reconcilers read through it
  std::unique_ptr<MessagePoolStore> store;
  std::shared_ptr<const FailureAnalyzer> analyzer;  // the site's
  std::unique_ptr<CampaignKnowledge> knowledge;     // the site's plus each campaign's
  std::unique_ptr<kube::Reconciler> campaign_reconciler;
  std::unique_ptr<kube::Reconciler> trial_reconciler;
  std::unique_ptr<NodeLedgerStore> ledger;  // null when node_health is off
  std::unique_ptr<CampaignHealth> health;
  std::unique_ptr<ClusterNodes> nodes;  // judges pods the scheduler leaves Pending (node_fit.h)
  // The campaigns' models and evaluated search spaces, one per workload and space.
  std::unique_ptr<PlanningCache> planning;
  // The merged readers over per-namespace informers (several watched namespaces).
  std::vector<std::unique_ptr<kube::NamespacedReader>> readers;
  bool jobset_available = false;
};

// Registers both controllers on `mgr` (before mgr->Run). Fails with kInvalidArgument for an
// unknown diagnostics mode; a site knowledge directory that does not load leaves the embedded
// knowledge (and a malformed embedded one, a bug, the keyword fallback analyzer).
Result<std::unique_ptr<ControllerSet>> SetupControllers(kube::Manager* mgr,
                                                        const ControllerSetupOptions& opts);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_SETUP_H_
