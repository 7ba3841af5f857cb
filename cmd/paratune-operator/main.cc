// paratune-operator: runs the TuningCampaign and TrialRun controllers.
//   --kubeconfig FILE               credentials (default: $KUBECONFIG, ~/.kube/config, in-cluster)
//   --namespace NS[,NS...]          namespaces to watch (default: all)
//   --leader-elect                  Lease leader election (for several replicas)
//   --leader-election-namespace NS  where the Lease lives (default paratune-system)
//   --metrics-bind-address ADDR     a separate /metrics listener (default: with the probes)
//   --health-probe-bind-address A   /healthz, /readyz, /metrics (default :8081, or
//                                   $PARATUNE_HEALTH_PROBE_BIND_ADDRESS)
//   --log-format json|text          (default text)
//   --max-concurrent-reconciles N   workers per controller (default 4)
//   --trial-image IMAGE             image of the default trial-sim template (and of the
//                                   simulated diagnostic checks)
//   --diagnostics off|nvidia|simulated  what diagnostic checks of suspect nodes run
//                                   (default nvidia; simulated: `paratune node-check CHECK`)
//   --node-health true|false        node ledger, anti-affinity and remediation (default true)
//   --node-remediation true|false   cordon a suspect node once a cluster administrator approved
//                                   (default false: the proposal stays, nobody's Node is
//                                   patched; RBAC then grants no `patch` on Nodes)
//   --rdma-resource NAME|none       the RDMA extended resource the GPU nodes advertise (e.g.
//                                   rdma/ib; none: no RDMA devices); campaigns requesting
//                                   another rdma/ resource are refused (default: not checked)
//   --operator-namespace NS         where the node-health ledger ConfigMap lives (default
//                                   $POD_NAMESPACE, else paratune-system)
// Multi-tenant safety (docs/security.md):
//   --llm-allowed-endpoints P[,P...]  URL prefixes campaigns' LLM endpoints must start with
//                                   (default: only the operator-wide $PARATUNE_LLM_ENDPOINT)
//   --trial-allow-privileged, --trial-allow-host-namespaces, --trial-allow-host-path,
//   --trial-allow-control-plane-tolerations true|false   widen the trial pod policy (default
//                                   false: refused)
//   --trial-allowed-capabilities C[,C...]  capabilities trial containers may add (default none)
//   --trial-allowed-service-accounts S[,S...]  besides "default" (default none)
//   --suspect-min-campaigns N       campaigns whose evidence it takes to make a node suspect
//                                   (default 2; 1: one campaign's evidence suffices)
//   --node-ledger-max-bytes N       bound of the node ledger's nodes.json (default 921600)
//   --kube-api-qps Q, --kube-api-burst B  client-side rate limit towards the API server.
//                                   Without them, the limit (20 qps, burst 30, as client-go)
//                                   applies only to a server without API Priority and
//                                   Fairness; with either, it always applies.
// Exit status: 0 on clean shutdown, 2 on bad flags, 1 otherwise.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "agents/llm/endpoint_policy.h"
#include "base/strings.h"
#include "controllers/node_health/diagnostic_jobs.h"
#include "controllers/node_health/node_ledger_store.h"
#include "controllers/setup.h"
#include "operator/manager.h"
#include "operator/rest_client.h"
#include "operator/rest_config.h"

namespace {

// The environment variable `name`, or `fallback` when it is unset or empty. The operator program
// is the one place below the CLI that reads the environment; it passes what it found down.
std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : fallback;
}

using paratune::Result;
using paratune::Status;

struct Flags {
  std::string kubeconfig;
  std::string namespaces;
  bool leader_elect = false;
  std::string leader_namespace = "paratune-system";
  // "" (the default): /metrics is served on the probe address. The Deployment passes :8080.
  std::string metrics_address;
  // The environment may move the default (tests running several operators on one machine).
  std::string probe_address = EnvOr("PARATUNE_HEALTH_PROBE_BIND_ADDRESS", ":8081");
  std::string log_format = "text";
  int max_concurrent_reconciles = 4;
  double kube_api_qps = 20;
  int kube_api_burst = 30;
  bool kube_api_limit_given = false;  // --kube-api-qps/--kube-api-burst on the command line
  std::string trial_image = paratune::controllers::kDefaultTrialImage;
  std::string diagnostics = "nvidia";
  std::string node_health = "true";
  std::string node_remediation = "false";
  std::string rdma_resource;
  // $POD_NAMESPACE (the downward API sets it in the Deployment), else paratune-system.
  std::string operator_namespace =
      EnvOr("POD_NAMESPACE", paratune::controllers::kDefaultOperatorNamespace);
  // Multi-tenant safety.
  std::string llm_allowed_endpoints;
  std::map<std::string, std::string> trial_allow = {
      {"--trial-allow-privileged", "false"},
      {"--trial-allow-host-namespaces", "false"},
      {"--trial-allow-host-path", "false"},
      {"--trial-allow-control-plane-tolerations", "false"}};
  std::string trial_allowed_capabilities;
  std::string trial_allowed_service_accounts;
  int suspect_min_campaigns = 2;
  int64_t node_ledger_max_bytes = 0;
};

// The flags of docs/security.md; false when `arg` is not one of them.
Result<bool> ParseSecurityFlag(const std::string& arg, const std::string& value, Flags* f) {
  if (f->trial_allow.count(arg) > 0) {
    if (value != "true" && value != "false") {
      return Status::Invalid(arg + ": must be true or false, got \"" + value + "\"");
    }
    f->trial_allow[arg] = value;
    return true;
  }
  if (arg == "--suspect-min-campaigns" || arg == "--node-ledger-max-bytes") {
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    const bool campaigns = arg == "--suspect-min-campaigns";
    const long long lo = campaigns ? 1 : 4096, hi = campaigns ? 16 : 1000000;
    if (value.empty() || *end != '\0' || v < lo || v > hi) {
      return Status::Invalid(arg + ": must be an integer in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "], got \"" + value + "\"");
    }
    if (campaigns) f->suspect_min_campaigns = static_cast<int>(v);
    if (!campaigns) f->node_ledger_max_bytes = v;
    return true;
  }
  std::map<std::string, std::string*> lists = {
      {"--llm-allowed-endpoints", &f->llm_allowed_endpoints},
      {"--trial-allowed-capabilities", &f->trial_allowed_capabilities},
      {"--trial-allowed-service-accounts", &f->trial_allowed_service_accounts}};
  auto it = lists.find(arg);
  if (it == lists.end()) return false;
  *it->second = value;
  return true;
}

Result<Flags> ParseFlags(int argc, char** argv) {
  Flags f;
  std::map<std::string, std::string*> strings = {
      {"--kubeconfig", &f.kubeconfig},
      {"--namespace", &f.namespaces},
      {"--namespaces", &f.namespaces},
      {"--leader-election-namespace", &f.leader_namespace},
      {"--metrics-bind-address", &f.metrics_address},
      {"--health-probe-bind-address", &f.probe_address},
      {"--log-format", &f.log_format},
      {"--trial-image", &f.trial_image},
      {"--diagnostics", &f.diagnostics},
      {"--node-health", &f.node_health},
      {"--node-remediation", &f.node_remediation},
      {"--rdma-resource", &f.rdma_resource},
      {"--operator-namespace", &f.operator_namespace}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    size_t eq = arg.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "--leader-elect") {
      f.leader_elect = !has_value || value == "true";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) return Status::Invalid(arg + ": needs a value");
      value = argv[++i];
    }
    if (arg == "--max-concurrent-reconciles") {
      try {
        f.max_concurrent_reconciles = std::stoi(value);
      } catch (const std::exception&) {
        return Status::Invalid("--max-concurrent-reconciles: not a number: " + value);
      }
      if (f.max_concurrent_reconciles < 1 || f.max_concurrent_reconciles > 256) {
        return Status::Invalid("--max-concurrent-reconciles: must be in [1, 256]");
      }
      continue;
    }
    if (arg == "--kube-api-qps" || arg == "--kube-api-burst") {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || end == nullptr || *end != '\0' || !(v >= 1 && v <= 10000)) {
        return Status::Invalid(arg + ": must be a number in [1, 10000], got \"" + value + "\"");
      }
      if (arg == "--kube-api-qps") f.kube_api_qps = v;
      if (arg == "--kube-api-burst") f.kube_api_burst = static_cast<int>(v);
      f.kube_api_limit_given = true;
      continue;
    }
    auto security = ParseSecurityFlag(arg, value, &f);
    if (!security.ok()) return security.status();
    if (*security) continue;
    auto it = strings.find(arg);
    if (it == strings.end()) return Status::Invalid("unknown flag " + arg);
    *it->second = value;
  }
  if (Status d = paratune::controllers::ValidateDiagnosticMode(f.diagnostics); !d.ok()) {
    return Status::Invalid("--diagnostics: must be off, nvidia or simulated, got \"" +
                           f.diagnostics + "\"");
  }
  if (f.node_health != "true" && f.node_health != "false") {
    return Status::Invalid("--node-health: must be true or false, got \"" + f.node_health + "\"");
  }
  if (f.node_remediation != "true" && f.node_remediation != "false") {
    return Status::Invalid("--node-remediation: must be true or false, got \"" +
                           f.node_remediation + "\"");
  }
  if (!f.rdma_resource.empty() && f.rdma_resource != "none" &&
      f.rdma_resource.find('/') == std::string::npos) {
    return Status::Invalid(
        "--rdma-resource: must be none or an extended resource name "
        "(domain/name, e.g. rdma/ib), got \"" +
        f.rdma_resource + "\"");
  }
  if (f.operator_namespace.empty()) return Status::Invalid("--operator-namespace: empty");
  if (f.log_format != "json" && f.log_format != "text") {
    return Status::Invalid("--log-format: must be json or text, got \"" + f.log_format + "\"");
  }
  return f;
}

// ":8081" listens on every interface, as controller-runtime's flags do.
std::string HostPort(const std::string& addr) {
  if (addr.empty() || addr == "0") return "";
  return addr[0] == ':' ? "0.0.0.0" + addr : addr;
}

void ConfigureLogging(const std::string& format) {
  if (format == "json") {
    spdlog::set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"paratune-operator","msg":"%v"})",
        spdlog::pattern_time_type::utc);
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
}

std::set<std::string> SplitNamespaces(const std::string& text) {
  std::set<std::string> out;
  std::stringstream ss(text);
  std::string ns;
  while (std::getline(ss, ns, ',')) {
    if (!ns.empty()) out.insert(ns);
  }
  return out;
}

// The operator runs the llm and hybrid engines itself, under the administrator's policy: the
// operator-wide key ($OPENAI_API_KEY) goes only to the operator-wide endpoint.
void ApplySecurityFlags(const Flags& f, const std::string& llm_endpoint,
                        paratune::controllers::ControllerSetupOptions* so) {
  using paratune::SplitList;
  so->llm.endpoints.operator_endpoint = llm_endpoint;
  so->llm.endpoints.allowed_prefixes = SplitList(f.llm_allowed_endpoints);
  so->llm.operator_api_key = EnvOr("OPENAI_API_KEY", "");
  paratune::controllers::TrialPodPolicy& p = so->pod_policy;
  p.allow_privileged = f.trial_allow.at("--trial-allow-privileged") == "true";
  p.allow_host_namespaces = f.trial_allow.at("--trial-allow-host-namespaces") == "true";
  p.allow_host_path = f.trial_allow.at("--trial-allow-host-path") == "true";
  p.allow_control_plane_tolerations =
      f.trial_allow.at("--trial-allow-control-plane-tolerations") == "true";
  for (const auto& c : SplitList(f.trial_allowed_capabilities)) p.allowed_capabilities.insert(c);
  for (const auto& s : SplitList(f.trial_allowed_service_accounts)) {
    p.allowed_service_accounts.insert(s);
  }
  so->suspect_min_campaigns = f.suspect_min_campaigns;
  so->ledger_max_bytes = static_cast<size_t>(f.node_ledger_max_bytes);
}

int Run(const Flags& flags) {
  using namespace paratune;
  ConfigureLogging(flags.log_format);
  // Before any thread starts (the HTTP client's pool, informers): SIGTERM/SIGINT are blocked in
  // every thread and taken by the handler's sigwait. A thread created earlier would keep the
  // default action, and a SIGTERM delivered to it killed the process at once, without stopping
  // the workers or giving the Lease up (the reliability suite's graceful-stop check).
  std::stop_source& stop = kube::InstallSignalHandlers();
  auto config =
      flags.kubeconfig.empty()
          ? kube::DefaultConfig(kube::ConfigEnvironment{EnvOr("KUBECONFIG", ""), EnvOr("HOME", ""),
                                                        EnvOr("KUBERNETES_SERVICE_HOST", ""),
                                                        EnvOr("KUBERNETES_SERVICE_PORT", "")})
          : kube::LoadKubeconfig(flags.kubeconfig);
  if (!config.ok()) {
    spdlog::error("credentials: {}", config.status().message());
    return 2;
  }
  config->user_agent = "paratune-operator/0.1";
  config->qps = flags.kube_api_qps;
  config->burst = flags.kube_api_burst;
  config->rate_limit_always = flags.kube_api_limit_given;
  kube::MetricsRegistry metrics;
  paratune::TimeSource* time = paratune::RealTimeSource::Get();
  auto client = kube::RestKubeClient::Create(*config, time, &metrics);
  if (!client.ok()) {
    spdlog::error("client: {}", client.status().message());
    return 2;
  }
  // Operator-wide LLM defaults (Helm values llm.endpoint / llm.model) for campaigns that leave
  // spec.agents.llm.endpoint or .model empty; OPENAI_API_KEY is the key of campaigns without
  // apiKeySecretRef (ApplySecurityFlags). Passed down through the setup options.
  CampaignDefaults defaults;
  defaults.llm_endpoint = EnvOr("PARATUNE_LLM_ENDPOINT", "");
  defaults.llm_model = EnvOr("PARATUNE_LLM_MODEL", "");
  kube::ManagerOptions mo;
  mo.leader_election = flags.leader_elect;
  mo.leader.lease_namespace = flags.leader_namespace;
  mo.leader.lease_name = "paratune-operator-leader";
  mo.probe_address =
      HostPort(flags.probe_address.empty() ? flags.metrics_address : flags.probe_address);
  if (!flags.probe_address.empty() && !HostPort(flags.metrics_address).empty()) {
    mo.metrics_address = HostPort(flags.metrics_address);
  }
  std::set<std::string> namespaces = SplitNamespaces(flags.namespaces);
  controllers::ControllerSetupOptions so;
  if (namespaces.size() == 1) so.watch_namespace = *namespaces.begin();
  if (namespaces.size() > 1) so.namespaces = namespaces;
  so.max_concurrent_reconciles = flags.max_concurrent_reconciles;
  so.trial_image = flags.trial_image;
  so.diagnostics = flags.diagnostics;
  so.node_health = flags.node_health == "true";
  so.node_remediation = flags.node_remediation == "true";
  so.rdma_resource = flags.rdma_resource;
  so.operator_namespace = flags.operator_namespace;
  so.campaign_defaults = defaults;
  // The knowledge ConfigMaps the chart mounts (values knowledgeConfigMaps).
  so.knowledge_dir = EnvOr("PARATUNE_KNOWLEDGE_DIR", "");
  ApplySecurityFlags(flags, defaults.llm_endpoint, &so);
  mo.reflector.ns = so.watch_namespace;
  auto mgr = kube::Manager::Create(mo, client->get(), time, &metrics);
  if (!mgr.ok()) {
    spdlog::error("manager: {}", mgr.status().message());
    return 2;
  }
  auto set = controllers::SetupControllers(mgr->get(), so);
  if (!set.ok()) {
    spdlog::error("controllers: {}", set.status().message());
    return 1;
  }
  spdlog::info(
      "paratune-operator starting: namespaces={} leader-elect={} probes={} workers={} "
      "diagnostics={} node-health={}",
      flags.namespaces.empty() ? "all" : flags.namespaces, flags.leader_elect, mo.probe_address,
      flags.max_concurrent_reconciles, flags.diagnostics, flags.node_health);
  Status s = (*mgr)->Run(stop.get_token());
  if (!s.ok()) {
    spdlog::error("manager stopped: {}", s.message());
    return 1;
  }
  spdlog::info("paratune-operator stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "paratune-operator: " << flags.status().message() << "\n";
    return 2;
  }
  return Run(*flags);
}
