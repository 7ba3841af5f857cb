#include "controllers/setup.h"

#include <spdlog/spdlog.h>

#include "agents/trials/knowledge_failure_analyzer.h"
#include "controllers/campaign_metrics.h"
#include "controllers/node_health/diagnostic_jobs.h"
#include "controllers/operator_engines.h"

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

// Skips keys outside the watched namespaces (when several are watched through one
// all-namespace informer).
class NamespaceFilter : public kube::Reconciler {
 public:
  NamespaceFilter(std::unique_ptr<kube::Reconciler> inner, std::set<std::string> namespaces)
      : inner_(std::move(inner)), namespaces_(std::move(namespaces)) {}
  Result<kube::ReconcileResult> Reconcile(const kube::ObjectKey& key) override {
    if (!namespaces_.empty() && namespaces_.count(key.ns) == 0) return kube::ReconcileResult{};
    return inner_->Reconcile(key);
  }

 private:
  std::unique_ptr<kube::Reconciler> inner_;
  std::set<std::string> namespaces_;
};

// In a namespace the operator may read (with per-namespace RBAC a cluster-wide list is denied).
bool DetectJobSet(kube::KubeClient* client, const std::string& ns) {
  kube::ListOptions opts;
  opts.limit = 1;
  auto list = client->List(kJobSets, ns, opts);
  return list.ok();
}

}  // namespace

Status AdmitCampaign(kube::KubeClient* client, const ControllerSetupOptions& opts,
                     const std::string& ns, const CampaignSpec& spec, bool check_llm) {
  if (ns == opts.operator_namespace) {
    return Status::Invalid(
        "metadata.namespace: campaigns may not run in the operator's own "
        "namespace " +
        ns + " (its ServiceAccount and state live there)");
  }
  PARATUNE_RETURN_IF_ERROR(CheckTrialPodPolicy(spec, opts.pod_policy));
  PARATUNE_RETURN_IF_ERROR(CheckRdmaRequests(spec.trial_template, opts.rdma_resource));
  if (!check_llm) return Status::Ok();
  return CheckLlmAccess(client, spec, opts.llm);
}

namespace {

// What the controllers read of one kind, and the informers behind it (their event sources).
struct Watched {
  kube::ObjectReader* reader = nullptr;
  std::vector<kube::Informer*> informers;
};

// One informer for the watched namespace (or all), or one per namespace when several are
// watched: then RBAC may grant the operator nothing cluster-wide (the chart's per-namespace
// Roles), so nothing is listed or watched beyond them.
Watched Watch(kube::Manager* mgr, ControllerSet* set, const ControllerSetupOptions& opts,
              const kube::GroupVersionResource& gvr, const std::string& selector = "") {
  Watched w;
  if (opts.namespaces.size() <= 1) {
    const std::string ns =
        opts.namespaces.empty() ? opts.watch_namespace : *opts.namespaces.begin();
    w.informers.push_back(mgr->GetInformer(gvr, ns, selector));
    w.reader = w.informers.front();
    return w;
  }
  std::vector<kube::ObjectReader*> readers;
  std::vector<std::string> names;
  for (const std::string& ns : opts.namespaces) {
    w.informers.push_back(mgr->GetInformer(gvr, ns, selector));
    readers.push_back(w.informers.back());
    names.push_back(ns);
  }
  set->readers.push_back(std::make_unique<kube::NamespacedReader>(readers, names));
  w.reader = set->readers.back().get();
  return w;
}

// The planning cache's counts at every scrape: how often a reconcile planned without building
// the model and search space, and what the cache holds.
void ExportPlanningCacheMetrics(const PlanningCache* cache, kube::MetricsRegistry* metrics) {
  if (metrics == nullptr) return;
  struct Exported {
    const char* name;
    bool counter;
    const char* help;
    double (*value)(const PlanningCacheStats&);
  };
  static constexpr Exported kExported[] = {
      {"paratune_planning_cache_hits_total", true,
       "Reconciles that planned with a cached model and search space",
       [](const PlanningCacheStats& s) { return static_cast<double>(s.hits); }},
      {"paratune_planning_cache_builds_total", true,
       "Models and search spaces built (one per workload and space in cache)",
       [](const PlanningCacheStats& s) { return static_cast<double>(s.builds); }},
      {"paratune_planning_cache_evictions_total", true,
       "Cached models and search spaces dropped to stay within the budget",
       [](const PlanningCacheStats& s) { return static_cast<double>(s.evictions); }},
      {"paratune_planning_cache_bytes", false, "Approximate bytes of the cached search spaces",
       [](const PlanningCacheStats& s) { return static_cast<double>(s.bytes); }},
  };
  for (const Exported& e : kExported) {
    if (e.counter) {
      metrics->DeclareCounter(e.name, e.help);
    } else {
      metrics->DeclareGauge(e.name, e.help);
    }
    metrics->SetGaugeFunction(e.name, {},
                              [cache, value = e.value] { return value(cache->stats()); });
  }
}

}  // namespace

Result<std::unique_ptr<ControllerSet>> SetupControllers(kube::Manager* mgr,
                                                        const ControllerSetupOptions& opts) {
  PARATUNE_RETURN_IF_ERROR(ValidateDiagnosticMode(opts.diagnostics));
  auto set = std::make_unique<ControllerSet>();
  kube::KubeClient* client = mgr->client();
  // The site's knowledge, loaded once: the analyzer, the LLM prompts and every campaign's own
  // knowledge start from it. A site directory that does not load leaves the embedded knowledge.
  auto site_kb = KnowledgeBase::LoadDefault(opts.knowledge_dir);
  if (!site_kb.ok() && !opts.knowledge_dir.empty()) {
    spdlog::warn("site knowledge {} not loaded ({}): using the embedded knowledge",
                 opts.knowledge_dir, site_kb.status().message());
    site_kb = KnowledgeBase::LoadEmbedded();
  }
  std::shared_ptr<const KnowledgeBase> site;
  if (site_kb.ok()) site = std::move(*site_kb);
  auto analyzer = MakeKnowledgeFailureAnalyzer(site);
  if (analyzer.ok()) {
    set->analyzer = std::shared_ptr<const FailureAnalyzer>(std::move(*analyzer));
  } else {
    spdlog::warn("knowledge base unavailable ({}): using the fallback diagnostician",
                 analyzer.status().message());
    set->analyzer = std::shared_ptr<const FailureAnalyzer>(MakeFallbackFailureAnalyzer());
  }
  // The operator's own ConfigMaps are read from caches of what it labels (config_map_cache.h):
  // pool and output ConfigMaps by the campaign label in the watched namespaces, the node ledger
  // by kOperatorStateLabel in the operator's namespace. Never every ConfigMap of the cluster.
  std::vector<kube::Informer*> cm_informers;
  if (opts.node_health) {  // the ledger's; in the operator's namespace both are asked
    cm_informers.push_back(
        mgr->GetInformer(res::kConfigMaps, opts.operator_namespace, kOperatorStateLabel));
  }
  for (kube::Informer* i :
       Watch(mgr, set.get(), opts, res::kConfigMaps, kCampaignLabel).informers) {
    cm_informers.push_back(i);  // one per watched namespace when several
  }
  set->configmaps = std::make_unique<ConfigMapCache>(client, cm_informers);
  set->knowledge = std::make_unique<CampaignKnowledge>(set->configmaps.get(), opts.knowledge_dir,
                                                       site, set->analyzer);
  ConfigMapPoolStoreOptions pool_opts;
  pool_opts.configmaps = set->configmaps.get();
  set->store = std::make_unique<ConfigMapPoolStore>(client, pool_opts);
  const std::string probe_ns = !opts.watch_namespace.empty() ? opts.watch_namespace
                               : opts.namespaces.empty()     ? ""
                                                             : *opts.namespaces.begin();
  set->jobset_available = opts.detect_jobset && DetectJobSet(client, probe_ns);
  spdlog::info("JobSet API {}", set->jobset_available ? "found: multi-node trials use JobSets"
                                                      : "not installed: Indexed Jobs");
  const Watched campaigns_w = Watch(mgr, set.get(), opts, res::kTuningCampaigns);
  const Watched trials_w = Watch(mgr, set.get(), opts, res::kTrialRuns);
  // Only the operator's own Jobs and pods (trial and diagnostic ones all carry the campaign
  // label): the cache does not grow with the rest of the cluster.
  const Watched jobs_w = Watch(mgr, set.get(), opts, res::kJobs, kCampaignLabel);
  const Watched pods_w = Watch(mgr, set.get(), opts, res::kPods, kCampaignLabel);
  kube::ObjectReader* campaigns = campaigns_w.reader;
  kube::ObjectReader* trials = trials_w.reader;
  kube::ObjectReader* jobs = jobs_w.reader;
  kube::ObjectReader* pods = pods_w.reader;

  CampaignReconcilerOptions copts;
  copts.seed = opts.seed;
  copts.parse.defaults = opts.campaign_defaults;
  copts.configmaps = set->configmaps.get();
  set->planning = std::make_unique<PlanningCache>();
  copts.planning = set->planning.get();
  ExportPlanningCacheMetrics(set->planning.get(), mgr->metrics());
  // Per-campaign series from the same caches, at every scrape (campaign_metrics.h).
  ExportCampaignMetrics(campaigns, trials, mgr->metrics());
  TrialReconcilerOptions topts;
  topts.parse = copts.parse;
  if (opts.node_health) {
    set->ledger = std::make_unique<NodeLedgerStore>(client, opts.operator_namespace, 5,
                                                    set->configmaps.get());
    health::LedgerOptions lo;
    lo.min_campaigns = opts.suspect_min_campaigns;
    set->ledger->set_ledger_options(lo);
    if (opts.ledger_max_bytes > 0) set->ledger->set_max_bytes(opts.ledger_max_bytes);
    // Evidence that makes or clears no suspect waits up to 30 s to share a write (issue 17).
    set->ledger->set_coalescing(kLedgerCoalescing, mgr->time());
    CampaignHealthOptions ho;
    ho.diagnostics = opts.diagnostics;
    ho.paratune_image = opts.trial_image;
    ho.cordon = opts.node_remediation;
    set->health = std::make_unique<CampaignHealth>(client, set->ledger.get(), jobs, pods, ho);
    copts.health = set->health.get();
    NodeLedgerStore* ledger = set->ledger.get();
    topts.suspect_nodes = [ledger]() -> Result<std::vector<std::string>> {
      auto l = ledger->Load();
      if (!l.ok()) return l.status();
      return l->SuspectNames();
    };
    spdlog::info("node health: ledger configmap {}/{}, diagnostics {}", opts.operator_namespace,
                 kNodeHealthConfigMap, opts.diagnostics);
  }
  EngineFactory factory = opts.engine_factory
                              ? opts.engine_factory
                              : MakeOperatorEngineFactory(client, mgr->time(), opts.llm,
                                                          set->knowledge.get(), opts.seed);
  // The policy is read from a copy the lambdas own: the caller's options may not outlive Run.
  auto policy = std::make_shared<const ControllerSetupOptions>(opts);
  copts.admit = [client, policy](const Json& campaign, const CampaignSpec& spec) {
    return AdmitCampaign(client, *policy, kube::NamespaceOf(campaign), spec, true);
  };
  topts.admit = [client, policy](const std::string& trial_ns, const CampaignSpec& spec) {
    return AdmitCampaign(client, *policy, trial_ns, spec, false);
  };
  set->campaign_reconciler = std::make_unique<NamespaceFilter>(
      std::make_unique<TuningCampaignReconciler>(client, CampaignInformers{campaigns, trials},
                                                 set->store.get(), mgr->recorder(), set->analyzer,
                                                 factory, mgr->time(), copts),
      opts.namespaces);
  topts.jobset_available = set->jobset_available;
  topts.default_image = opts.trial_image;
  topts.early_stop_interval = opts.trial_log_poll;
  set->nodes = std::make_unique<ClusterNodes>(client, mgr->time());
  topts.cluster_nodes = set->nodes.get();
  set->trial_reconciler = std::make_unique<NamespaceFilter>(
      std::make_unique<TrialRunReconciler>(client, TrialInformers{trials, campaigns, jobs, pods},
                                           mgr->recorder(), set->knowledge.get(), mgr->time(),
                                           topts),
      opts.namespaces);

  // Workers grow up to 4x the flag while a burst of campaigns queues up (kube::Controller).
  const int max_workers = 4 * opts.max_concurrent_reconciles;
  kube::Controller* cc =
      mgr->NewController({"tuningcampaign", opts.max_concurrent_reconciles, {}, max_workers},
                         set->campaign_reconciler.get());
  for (kube::Informer* i : campaigns_w.informers) cc->For(i);
  for (kube::Informer* i : trials_w.informers) cc->Owns(i, "TuningCampaign");
  if (opts.node_health) {
    for (kube::Informer* i : jobs_w.informers) cc->Owns(i, "TuningCampaign");  // diagnostics
  }
  kube::Controller* tc = mgr->NewController(
      {"trialrun", opts.max_concurrent_reconciles, {}, max_workers}, set->trial_reconciler.get());
  for (kube::Informer* i : trials_w.informers) tc->For(i);
  for (kube::Informer* i : jobs_w.informers) tc->Owns(i, "TrialRun");
  for (kube::Informer* i : pods_w.informers) {
    tc->Watches(i, [](const Json& pod) {
      std::vector<kube::ObjectKey> out;
      const Json& labels = pod.value("metadata", Json::object()).value("labels", Json::object());
      if (labels.is_object() && labels.contains(kTrialLabel) && labels[kTrialLabel].is_string()) {
        out.push_back({kube::NamespaceOf(pod), labels[kTrialLabel].get<std::string>()});
      }
      return out;
    });
  }
  return set;
}

}  // namespace paratune::controllers
