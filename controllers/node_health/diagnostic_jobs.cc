#include "controllers/node_health/diagnostic_jobs.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

#include "agents/model/catalog.h"
#include "base/json_fields.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

constexpr const char* kHostnameKey = "kubernetes.io/hostname";
constexpr const char* kCompletionIndex = "batch.kubernetes.io/job-completion-index";
// Kubernetes' own cap is 63; an Indexed Job's pod hostname "<job>-<index>" must fit in it too.
constexpr size_t kMaxJobName = 61;

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string Hex8(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%08llx", static_cast<unsigned long long>(v & 0xffffffffULL));
  return buf;
}

std::string TrimDashes(std::string s) {
  while (!s.empty() && s.back() == '-') s.pop_back();
  size_t b = 0;
  while (b < s.size() && s[b] == '-') ++b;
  return s.substr(b);
}

// `value` if it fits a label value (63 characters), else a cut ending in a hash of it.
std::string LabelValue(const std::string& value) {
  if (value.size() <= 63) return value;
  return TrimDashes(value.substr(0, 54)) + "-" + Hex8(Fnv1a(value));
}

// The Service nccl-allreduce's pods rendezvous through: a DNS-1035 label (starts with a letter).
std::string ServiceName(const std::string& job_name) {
  if (!job_name.empty() && std::isalpha(static_cast<unsigned char>(job_name[0]))) return job_name;
  return "d" + job_name.substr(0, kMaxJobName - 1);
}

json EnvVar(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

json Labels(const std::string& campaign, const std::string& check, const std::string& node) {
  return {{kCampaignLabel, LabelValue(campaign)},
          {kDiagnosticCheckLabel, check},
          {kNodeLabel, LabelValue(node)}};
}

json Metadata(const kube::Json& campaign, const std::string& name, const json& labels,
              const std::string& node) {
  return {{"name", name},
          {"namespace", kube::NamespaceOf(campaign)},
          {"labels", labels},
          {"annotations", {{kNodeLabel, node}}},
          {"ownerReferences", json::array({{{"apiVersion", kApiVersion},
                                            {"kind", "TuningCampaign"},
                                            {"name", kube::NameOf(campaign)},
                                            {"uid", kube::UidOf(campaign)},
                                            {"controller", true},
                                            {"blockOwnerDeletion", true}}})}};
}

// GPUs per node from the campaign's spec.hardware (8 when absent). Only numbers are read: no
// text of the spec reaches the pod.
int64_t GpusPerNode(const kube::Json& campaign) {
  const json& hw = campaign.value("spec", json::object()).value("hardware", json::object());
  const json& n = hw.is_object() ? hw.value("devicesPerNode", json()) : json();
  if (n.is_number_integer() && n.get<int64_t>() >= 1 && n.get<int64_t>() <= 64) {
    return n.get<int64_t>();
  }
  return 8;
}

// The catalog accelerator of the campaign (nullptr when the spec names none or an unknown one).
const Accelerator* CampaignAccelerator(const kube::Json& campaign) {
  const json& hw = campaign.value("spec", json::object()).value("hardware", json::object());
  if (!hw.is_object() || !hw.value("accelerator", json()).is_string()) return nullptr;
  return FindAccelerator(hw["accelerator"].get<std::string>());
}

json Tolerations(const kube::Json& campaign) {
  // A suspect node may be cordoned (NoSchedule unschedulable taint) or tainted by an operator:
  // its checks must still run there, pinned by hostname.
  json tols = json::array({
      {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
      {{"key", "node.kubernetes.io/unschedulable"},
       {"operator", "Exists"},
       {"effect", "NoSchedule"}},
  });
  const json& hw = campaign.value("spec", json::object()).value("hardware", json::object());
  const json& extra = hw.is_object() ? hw.value("tolerations", json()) : json();
  if (extra.is_array()) {
    for (const auto& t : extra) {
      if (t.is_object()) tols.push_back(t);
    }
  }
  return tols;
}

json Affinity(const std::vector<std::string>& nodes, const std::string& job_name) {
  json terms = json::array(
      {{{"matchExpressions",
         json::array({{{"key", kHostnameKey}, {"operator", "In"}, {"values", nodes}}})}}});
  json affinity = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
  if (nodes.size() > 1) {
    // One pod per node: the two pods of nccl-allreduce land on the suspect and on the peer.
    affinity["podAntiAffinity"] = {
        {"requiredDuringSchedulingIgnoredDuringExecution",
         json::array({{{"labelSelector", {{"matchLabels", {{kDiagnosticJobLabel, job_name}}}}},
                       {"topologyKey", kHostnameKey}}})}};
  }
  return affinity;
}

// The container: the whitelist's image and argv (nvidia), or `paratune node-check CHECK`.
json Container(const health::CheckSpec& spec, const std::string& job_name,
               const kube::Json& campaign, const DiagnosticJobOptions& opts) {
  json env = json::array({{{"name", "PARATUNE_NODE_NAME"},
                           {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}}});
  json c = {{"name", "check"}, {"terminationMessagePolicy", "FallbackToLogsOnError"}};
  if (opts.mode == "simulated") {
    c["image"] = opts.paratune_image;
    c["command"] = json::array({"paratune", "node-check", spec.name});
    env.push_back(EnvVar("PARATUNE_CAMPAIGN", kube::NameOf(campaign)));
    if (const Accelerator* a = CampaignAccelerator(campaign)) {
      env.push_back(EnvVar("PARATUNE_ACCELERATOR", a->name));
    }
  } else {
    c["image"] = spec.image;
    c["command"] = spec.command;
    if (spec.pods > 1) {
      env.push_back(EnvVar("PARATUNE_DIAG_MASTER", job_name + "-0." + ServiceName(job_name)));
    }
  }
  c["env"] = env;
  if (spec.needs_gpus) {
    c["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(GpusPerNode(campaign))}}}};
  }
  c["securityContext"] = {{"allowPrivilegeEscalation", false}};
  return c;
}

Status CheckInputs(const kube::Json& campaign, const std::string& check, const std::string& node,
                   const std::string& peer, const DiagnosticJobOptions& opts,
                   const health::CheckSpec** spec) {
  PARATUNE_RETURN_IF_ERROR(ValidateDiagnosticMode(opts.mode));
  if (opts.mode == "off") return Status::Invalid("--diagnostics=off: diagnostic checks are off");
  auto found = health::FindCheck(check);
  if (!found.ok()) return Status::Invalid(found.status().message());
  *spec = *found;
  if (node.empty()) return Status::Invalid("node: required");
  if ((*spec)->pods > 1 && (peer.empty() || peer == node)) {
    return Status::Invalid("peer: " + check + " needs a healthy peer node other than " + node);
  }
  if (kube::NameOf(campaign).empty() || kube::UidOf(campaign).empty()) {
    return Status::Invalid("campaign: metadata.name and metadata.uid are required");
  }
  const Accelerator* a = CampaignAccelerator(campaign);
  if (a != nullptr && a->tpu) {
    return Status::Invalid("spec.hardware.accelerator: diagnostic checks run on NVIDIA GPUs, not " +
                           a->name);
  }
  return Status::Ok();
}

}  // namespace

Status ValidateDiagnosticMode(const std::string& mode) {
  if (mode == "off" || mode == "nvidia" || mode == "simulated") return Status::Ok();
  return Status::Invalid("--diagnostics: must be off, nvidia or simulated, not \"" + mode + "\"");
}

std::string DiagnosticJobName(const std::string& campaign, const std::string& check,
                              const std::string& node) {
  const std::string full = campaign + "-diag-" + check + "-" + node;
  std::string name;
  for (char c : full) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name += (std::isalnum(static_cast<unsigned char>(l)) ? l : '-');
  }
  name = TrimDashes(name);
  if (name.size() <= kMaxJobName && name == full) return name;
  if (name.size() <= kMaxJobName - 9) return TrimDashes(name) + "-" + Hex8(Fnv1a(full));
  return TrimDashes(name.substr(0, kMaxJobName - 9)) + "-" + Hex8(Fnv1a(full));
}

Result<kube::Json> RenderDiagnosticJob(const kube::Json& campaign, const std::string& check,
                                       const std::string& node, const std::string& peer,
                                       const DiagnosticJobOptions& opts) {
  const health::CheckSpec* spec = nullptr;
  PARATUNE_RETURN_IF_ERROR(CheckInputs(campaign, check, node, peer, opts, &spec));
  const std::string name = DiagnosticJobName(kube::NameOf(campaign), check, node);
  const json labels = Labels(kube::NameOf(campaign), check, node);
  json pod_labels = labels;
  pod_labels[kDiagnosticJobLabel] = name;
  std::vector<std::string> nodes = {node};
  if (spec->pods > 1) nodes.push_back(peer);
  json pod_spec = {{"restartPolicy", "Never"},
                   {"automountServiceAccountToken", false},
                   {"affinity", Affinity(nodes, name)},
                   {"tolerations", Tolerations(campaign)},
                   {"containers", json::array({Container(*spec, name, campaign, opts)})}};
  if (spec->pods > 1 && opts.mode == "nvidia") pod_spec["subdomain"] = ServiceName(name);
  json job_spec = {{"backoffLimit", 0},
                   {"activeDeadlineSeconds", opts.active_deadline_seconds},
                   {"completions", spec->pods},
                   {"parallelism", spec->pods},
                   {"template", {{"metadata", {{"labels", pod_labels}}}, {"spec", pod_spec}}}};
  if (spec->pods > 1) job_spec["completionMode"] = "Indexed";
  return kube::Json{{"apiVersion", "batch/v1"},
                    {"kind", "Job"},
                    {"metadata", Metadata(campaign, name, labels, node)},
                    {"spec", job_spec}};
}

std::optional<kube::Json> RenderDiagnosticService(const kube::Json& campaign,
                                                  const std::string& check, const std::string& node,
                                                  const DiagnosticJobOptions& opts) {
  auto spec = health::FindCheck(check);
  if (!spec.ok() || (*spec)->pods < 2 || opts.mode != "nvidia") return std::nullopt;
  const std::string job = DiagnosticJobName(kube::NameOf(campaign), check, node);
  json meta =
      Metadata(campaign, ServiceName(job), Labels(kube::NameOf(campaign), check, node), node);
  return kube::Json{{"apiVersion", "v1"},
                    {"kind", "Service"},
                    {"metadata", meta},
                    {"spec",
                     {{"clusterIP", "None"},
                      {"publishNotReadyAddresses", true},
                      {"selector", {{kDiagnosticJobLabel, job}}},
                      {"ports", json::array({{{"name", "rendezvous"}, {"port", 29500}}})}}}};
}

// ---- reading a finished Job ----------------------------------------------------------------

const kube::Json* TerminalJobCondition(const kube::Json& job) {
  const json& status = ObjectField(job, "status");
  const auto conditions = status.find("conditions");
  if (conditions == status.end() || !conditions->is_array()) return nullptr;
  for (const auto& c : *conditions) {
    if (!c.is_object() || c.value("status", "") != "True") continue;
    const std::string type = c.value("type", "");
    if (type == "Complete" || type == "Failed") return &c;
  }
  return nullptr;
}

namespace {

// "Complete" or "Failed" when the Job has ended (TerminalJobCondition), else "".
std::string JobOutcome(const kube::Json& job, std::string* reason) {
  const json* c = TerminalJobCondition(job);
  if (c == nullptr) return "";
  *reason = c->value("reason", "") + (c->contains("message") ? ": " + c->value("message", "") : "");
  return c->value("type", "");
}

std::string PodIndex(const kube::Json& pod) {
  const json& meta = pod.value("metadata", json::object());
  return meta.value("annotations", json::object()).value(kCompletionIndex, "");
}

json ContainerShapes(const kube::Json& pod_spec) {
  json out = json::array();
  const json& cs =
      pod_spec.is_object() ? pod_spec.value("containers", json::array()) : json::array();
  for (const auto& c : cs.is_array() ? cs : json::array()) {
    if (!c.is_object()) continue;
    out.push_back({c.value("name", json()), c.value("image", json()), c.value("command", json()),
                   c.value("args", json())});
  }
  return out;
}

const json& PodSpecOfJob(const kube::Json& job) {
  return ObjectField(ObjectField(ObjectField(job, "spec"), "template"), "spec");
}

// A pod the Job controls: the Job controller's ownerReference (controller, the Job's UID) and
// the Job template's containers. Labels alone prove nothing: anyone may set them.
bool BelongsTo(const kube::Json& pod, const kube::Json& job) {
  const std::string uid = kube::UidOf(job);
  if (uid.empty()) return false;
  const json& meta = pod.value("metadata", json::object());
  const json& owners = meta.value("ownerReferences", json::array());
  bool owned = false;
  for (const auto& o : owners.is_array() ? owners : json::array()) {
    owned |= o.is_object() && o.value("uid", "") == uid && o.value("controller", false) &&
             o.value("kind", "") == "Job";
  }
  if (!owned) return false;
  // Every container of the template runs in the pod (an injected sidecar may be added).
  const json want = ContainerShapes(PodSpecOfJob(job));
  const json have = ContainerShapes(ObjectField(pod, "spec"));
  if (want.empty()) return false;
  for (const auto& c : want) {
    if (std::find(have.begin(), have.end(), c) == have.end()) return false;
  }
  return true;
}

// The pods to read, best first: the one on the suspect node, then index 0, then the rest.
std::vector<const kube::Json*> ReadOrder(const kube::Json& job, const std::vector<kube::Json>& pods,
                                         const std::string& node) {
  std::vector<const kube::Json*> mine;
  for (const auto& p : pods) {
    if (BelongsTo(p, job)) mine.push_back(&p);
  }
  auto rank = [&](const kube::Json* p) {
    if (p->value("spec", json::object()).value("nodeName", "") == node) return 0;
    return PodIndex(*p) == "0" ? 1 : 2;
  };
  std::stable_sort(mine.begin(), mine.end(),
                   [&](const kube::Json* a, const kube::Json* b) { return rank(a) < rank(b); });
  return mine;
}

std::string TerminationMessage(const kube::Json& pod) {
  const json& status = ObjectField(pod, "status");
  for (const auto& cs : status.value("containerStatuses", json::array())) {
    const json& term = cs.value("state", json::object()).value("terminated", json::object());
    if (term.is_object() && term.value("message", "") != "") return term.value("message", "");
  }
  return "";
}

}  // namespace

bool SameDiagnosticPods(const kube::Json& a, const kube::Json& b) {
  const json sa = ContainerShapes(a);
  return !sa.empty() && sa == ContainerShapes(b);
}

std::optional<health::CheckResult> InterpretDiagnosticJob(
    const kube::Json& job, const std::vector<kube::Json>& pods,
    const std::function<std::string(const kube::Json& pod)>& log_of,
    const nlohmann::json& expected) {
  std::string reason;
  const std::string outcome = JobOutcome(job, &reason);
  if (outcome.empty()) return std::nullopt;
  const json& meta = job.value("metadata", json::object());
  const std::string check = meta.value("labels", json::object()).value(kDiagnosticCheckLabel, "");
  std::string node = meta.value("annotations", json::object()).value(kNodeLabel, "");
  if (node.empty()) node = meta.value("labels", json::object()).value(kNodeLabel, "");
  health::CheckResult result;
  result.check = check;
  result.node = node;
  std::string parse_error;
  for (const kube::Json* pod : ReadOrder(job, pods, node)) {
    std::string output = log_of ? log_of(*pod) : "";
    if (output.empty()) output = TerminationMessage(*pod);
    if (output.empty()) continue;
    auto judged = health::InterpretCheckOutput(check, node, output, expected);
    if (judged.ok()) return *judged;
    if (parse_error.empty()) parse_error = judged.status().message();
  }
  result.passed = false;
  result.inconclusive = true;
  if (outcome == "Failed") {
    result.summary = "Job failed" + (reason.empty() ? "" : " (" + reason + ")");
    if (!parse_error.empty()) result.summary += "; " + parse_error;
  } else {
    result.summary = parse_error.empty() ? "Job completed without output"
                                         : "output not understood: " + parse_error;
  }
  result.measurements = json::object();
  return result;
}

}  // namespace paratune::controllers
