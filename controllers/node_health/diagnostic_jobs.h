// Renders and reads the Jobs that run whitelisted diagnostic checks (contract section 10) on a
// suspect node, and their simulated counterpart. The command always comes from the whitelist
// (health::DiagnosticWhitelist) or, in simulated mode, is `paratune node-check CHECK`; nothing
// from the campaign's spec reaches it. Pure: no I/O, deterministic, thread-safe.
#ifndef PARATUNE_CONTROLLERS_NODE_HEALTH_DIAGNOSTIC_JOBS_H_
#define PARATUNE_CONTROLLERS_NODE_HEALTH_DIAGNOSTIC_JOBS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agents/health/diagnostic_checks.h"
#include "base/status.h"
#include "controllers/job_renderer.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

inline constexpr const char* kDiagnosticCheckLabel = "tuning.paratune.dev/diagnostic-check";
inline constexpr const char* kNodeLabel = "tuning.paratune.dev/node";
// On the pods of one diagnostic Job (their anti-affinity spreads nccl-allreduce's two pods).
inline constexpr const char* kDiagnosticJobLabel = "tuning.paratune.dev/diagnostic-job";
inline constexpr int kDiagnosticDeadlineSeconds = 600;

struct DiagnosticJobOptions {
  std::string mode = "nvidia";  // off | nvidia | simulated (operator flag --diagnostics)
  std::string paratune_image = kDefaultTrialImage;  // simulated mode's image
  int active_deadline_seconds = kDiagnosticDeadlineSeconds;
};

// kInvalidArgument unless `mode` is off, nvidia or simulated.
Status ValidateDiagnosticMode(const std::string& mode);

// "<campaign>-diag-<check>-<node>", lowercased, made DNS-1123 (other characters become '-'),
// at most 63 characters: a longer name is cut and ends in a hash of the full name. Deterministic.
std::string DiagnosticJobName(const std::string& campaign, const std::string& check,
                              const std::string& node);

// One check's Job on `node` (nccl-allreduce: an Indexed Job of 2 pods, one on `node`, one on
// `peer`), pinned with required node affinity on kubernetes.io/hostname, tolerating NoSchedule
// taints (a cordoned or tainted suspect node must still run its check), labelled
// tuning.paratune.dev/diagnostic-check, tuning.paratune.dev/node and the campaign label, owned by
// the campaign (controller ownerReference), backoffLimit 0, activeDeadlineSeconds, and the GPU
// request the node's accelerator needs (from the campaign's spec.hardware). Mode simulated:
// command `paratune node-check CHECK` with the paratune image and PARATUNE_NODE_NAME from the
// downward API (spec.nodeName).
// Errors: kInvalidArgument for a check outside the whitelist, mode off or unknown, an empty
// node, nccl-allreduce without a peer (or with peer == node), or a campaign without
// metadata.name / metadata.uid.
Result<kube::Json> RenderDiagnosticJob(const kube::Json& campaign, const std::string& check,
                                       const std::string& node, const std::string& peer,
                                       const DiagnosticJobOptions& opts);

// The headless Service nccl-allreduce's pods rendezvous through in mode nvidia (pod 0 is
// "<job>-0.<job>"); nullopt for other checks and in simulated mode. Same name, labels and owner
// as the Job.
std::optional<kube::Json> RenderDiagnosticService(const kube::Json& campaign,
                                                  const std::string& check, const std::string& node,
                                                  const DiagnosticJobOptions& opts);

// The Job's Complete or Failed condition whose status is True (it has ended), or null. Points
// into `job`.
const kube::Json* TerminalJobCondition(const kube::Json& job);
// True when two pod specs run the same containers (name, image, command, args), in order.
bool SameDiagnosticPods(const kube::Json& pod_spec_a, const kube::Json& pod_spec_b);

// nullopt while the Job runs; the judged result once it completed or failed. Reads the output of
// the pod on the Job's node (label tuning.paratune.dev/node; for nccl-allreduce pod index 0 or
// the pod on that node) through `log_of`, falling back to its termination message when the log
// is empty. A failed Job whose output cannot be judged gives passed=false with the reason (the
// Job's failure condition, or the parse error) as the summary.
// Trust: only pods the Job controls are read (a controller ownerReference with the Job's UID,
// whose containers are the Job template's: same images, commands and args); any other pod,
// however labelled, is ignored, so a namespace user cannot forge a verdict with a pod of their
// own. Whether the Job itself is paratune's is the caller's check (SameDiagnosticPods).
std::optional<health::CheckResult> InterpretDiagnosticJob(
    const kube::Json& job, const std::vector<kube::Json>& pods,
    const std::function<std::string(const kube::Json& pod)>& log_of,
    const nlohmann::json& expected);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_NODE_HEALTH_DIAGNOSTIC_JOBS_H_
