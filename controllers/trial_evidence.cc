#include "controllers/trial_evidence.h"

#include <algorithm>

#include "base/json_fields.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

bool IsLead(const json& pod) {
  const json& ann = ValueField(ValueField(pod, "metadata"), "annotations");
  std::string index = StringField(ann, "batch.kubernetes.io/job-completion-index");
  return index.empty() || index == "0";
}

// Fills evidence from the pod's first terminated (or waiting) container. Returns true when the
// pod shows a failure.
bool ReadContainer(const json& pod, PodEvidence* out) {
  const json& status = ValueField(pod, "status");
  const json& statuses = ValueField(status, "containerStatuses");
  bool failed = StringField(status, "phase") == "Failed";
  std::string pod_reason = StringField(status, "reason");  // Evicted, DeadlineExceeded...
  if (statuses.is_array()) {
    for (const auto& cs : statuses) {
      const json& state = ValueField(cs, "state");
      const json& term = ValueField(state, "terminated");
      const json& waiting = ValueField(state, "waiting");
      if (term.is_object()) {
        int code =
            ValueField(term, "exitCode").is_number() ? ValueField(term, "exitCode").get<int>() : 0;
        out->termination_message = StringField(term, "message");
        out->exit_code = code;
        if (code != 0 || StringField(term, "reason") == "OOMKilled") {
          pod_reason = StringField(term, "reason");
          failed = true;
        }
        break;
      }
      if (waiting.is_object()) {
        std::string reason = StringField(waiting, "reason");
        if (reason == "ImagePullBackOff" || reason == "ErrImagePull" ||
            reason == "CreateContainerConfigError" || reason == "InvalidImageName") {
          pod_reason = reason;
          failed = true;
        }
      }
    }
  }
  if (failed) out->pod_reason = pod_reason.empty() ? "Error" : pod_reason;
  return failed;
}

}  // namespace

WorkloadState ReadWorkloadState(const json& workload) {
  WorkloadState s;
  const json& conditions = ValueField(ValueField(workload, "status"), "conditions");
  if (!conditions.is_array()) return s;
  for (const auto& c : conditions) {
    if (StringField(c, "status") != "True") continue;
    std::string type = StringField(c, "type");
    if (type == "Complete" || type == "Completed") {
      s.phase = WorkloadState::Phase::kSucceeded;
    } else if (type == "Failed") {
      s.phase = WorkloadState::Phase::kFailed;
    } else {
      continue;
    }
    s.reason = StringField(c, "reason");
    s.message = StringField(c, "message");
    if (s.phase == WorkloadState::Phase::kFailed) break;
  }
  return s;
}

PodEvidence ReadPods(const std::vector<json>& pods) {
  PodEvidence out;
  const json* lead = nullptr;
  for (const auto& pod : pods) {
    std::string node = StringField(ValueField(pod, "spec"), "nodeName");
    if (!node.empty() &&
        std::find(out.node_names.begin(), out.node_names.end(), node) == out.node_names.end()) {
      out.node_names.push_back(node);
    }
    const std::string phase = StringField(ValueField(pod, "status"), "phase");
    out.any_running |= phase == "Running";
    out.any_finished |= phase == "Succeeded" || phase == "Failed";
    SystemTime t;
    if (ParseRfc3339(StringField(ValueField(pod, "status"), "startTime"), &t)) {
      if (!out.start_time || t < *out.start_time) out.start_time = t;
    }
    if (lead == nullptr || (IsLead(pod) && !IsLead(*lead))) lead = &pod;
  }
  std::sort(out.node_names.begin(), out.node_names.end());
  // A failed pod's evidence wins over the lead's.
  for (const auto& pod : pods) {
    PodEvidence probe;
    if (ReadContainer(pod, &probe)) {
      probe.node_names = out.node_names;
      probe.any_running = out.any_running;
      probe.any_finished = out.any_finished;
      probe.start_time = out.start_time;
      probe.failed_pod = StringField(ValueField(pod, "metadata"), "name");
      lead = &pod;
      out = probe;
      break;
    }
  }
  if (lead != nullptr) {
    if (out.failed_pod.empty()) {
      ReadContainer(*lead, &out);
      out.failed_pod = StringField(ValueField(*lead, "metadata"), "name");
    }
    const json& containers = ValueField(ValueField(*lead, "spec"), "containers");
    if (containers.is_array() && !containers.empty())
      out.container = StringField(containers[0], "name");
  }
  return out;
}

std::string TerminationMessageOf(const json& pod) {
  const json& statuses = ValueField(ValueField(pod, "status"), "containerStatuses");
  if (!statuses.is_array()) return "";
  for (const auto& cs : statuses) {
    const json& term = ValueField(ValueField(cs, "state"), "terminated");
    if (term.is_object()) return StringField(term, "message");
  }
  return "";
}

double PodsWallSeconds(const std::vector<json>& pods, SystemTime now) {
  std::optional<SystemTime> start, end;
  bool running = false;
  for (const auto& pod : pods) {
    SystemTime t;
    if (!ParseRfc3339(StringField(ValueField(pod, "status"), "startTime"), &t)) continue;
    if (!start || t < *start) start = t;
    bool finished = false;
    const json& statuses = ValueField(ValueField(pod, "status"), "containerStatuses");
    if (statuses.is_array()) {
      for (const auto& cs : statuses) {
        SystemTime f;
        if (ParseRfc3339(
                StringField(ValueField(ValueField(cs, "state"), "terminated"), "finishedAt"), &f)) {
          finished = true;
          if (!end || f > *end) end = f;
        }
      }
    }
    running |= !finished;
  }
  if (!start) return 0;
  const SystemTime stop = running || !end ? now : *end;
  const double s = std::chrono::duration<double>(stop - *start).count();
  return s > 0 ? s : 0;
}

Millis UnschedulableFor(const std::vector<json>& pods, SystemTime now, std::string* message,
                        const json** which) {
  Millis longest{0};
  for (const auto& pod : pods) {
    if (StringField(ValueField(pod, "status"), "phase") != "Pending") continue;
    const json& conditions = ValueField(ValueField(pod, "status"), "conditions");
    if (!conditions.is_array()) continue;
    for (const auto& c : conditions) {
      if (StringField(c, "type") != "PodScheduled" || StringField(c, "status") != "False" ||
          StringField(c, "reason") != "Unschedulable") {
        continue;
      }
      SystemTime since;
      if (!ParseRfc3339(StringField(c, "lastTransitionTime"), &since)) continue;
      auto d = std::chrono::duration_cast<Millis>(now - since);
      if (d >= longest) {
        longest = d;
        *message = StringField(c, "message");
        if (which != nullptr) *which = &pod;
      }
    }
  }
  return longest;
}

}  // namespace paratune::controllers
