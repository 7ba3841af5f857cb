#include "controllers/trial_evidence.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "base/json_fields.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

constexpr const char* kIndexKey = "batch.kubernetes.io/job-completion-index";

// A completion index as a rank: -1 unless it is 1 to 9 decimal digits.
int64_t RankOf(const std::string& index) {
  if (index.empty() || index.size() > 9 ||
      !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::atoll(index.c_str());
}

// Everything of one pod that the trial's reading uses: its JSON first, then the times it holds.
TrialPod ReadPod(const json& pod) {
  TrialPod p;
  const json& meta = ValueField(pod, "metadata");
  const json& spec = ValueField(pod, "spec");
  const json& status = ValueField(pod, "status");
  p.name = StringField(meta, "name");
  p.ns = StringField(meta, "namespace");
  const std::string index = StringField(ValueField(meta, "annotations"), kIndexKey);
  const std::string index_label = StringField(ValueField(meta, "labels"), kIndexKey);
  const json& containers = ValueField(spec, "containers");
  if (containers.is_array() && !containers.empty()) {
    p.container = StringField(containers[0], "name");
  }
  p.node_name = StringField(spec, "nodeName");
  p.deleting = meta.contains("deletionTimestamp");
  p.phase = StringField(status, "phase");
  const std::string started = StringField(status, "startTime");
  // The first terminated (or waiting) container says whether the pod failed.
  bool failed = p.phase == "Failed";
  std::string pod_reason = StringField(status, "reason");  // Evicted, DeadlineExceeded...
  const json& statuses = ValueField(status, "containerStatuses");
  std::vector<std::string> finished;
  if (statuses.is_array()) {
    for (const auto& cs : statuses) {
      const json& state = ValueField(cs, "state");
      const json& term = ValueField(state, "terminated");
      const json& waiting = ValueField(state, "waiting");
      if (term.is_object()) {
        int code =
            ValueField(term, "exitCode").is_number() ? ValueField(term, "exitCode").get<int>() : 0;
        p.termination_message = StringField(term, "message");
        p.exit_code = code;
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
    for (const auto& cs : statuses) {
      finished.push_back(
          StringField(ValueField(ValueField(cs, "state"), "terminated"), "finishedAt"));
    }
  }
  std::vector<std::pair<std::string, std::string>> unschedulable;  // since, message
  const json& conditions = ValueField(status, "conditions");
  if (p.phase == "Pending" && conditions.is_array()) {
    for (const auto& c : conditions) {
      if (StringField(c, "type") == "PodScheduled" && StringField(c, "status") == "False" &&
          StringField(c, "reason") == "Unschedulable") {
        unschedulable.emplace_back(StringField(c, "lastTransitionTime"), StringField(c, "message"));
      }
    }
  }
  p.failed = failed;
  if (failed) p.pod_reason = pod_reason.empty() ? "Error" : pod_reason;
  p.lead = index.empty() || index == "0";
  p.rank = RankOf(index.empty() ? index_label : index);
  SystemTime t;
  if (ParseRfc3339(started, &t)) p.start_time = t;
  for (const std::string& f : finished) {
    if (ParseRfc3339(f, &t) && (!p.finished_at || t > *p.finished_at)) p.finished_at = t;
  }
  for (auto& [since, message] : unschedulable) {
    if (ParseRfc3339(since, &t)) p.unschedulable.emplace_back(t, std::move(message));
  }
  return p;
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

TrialPods ReadTrialPods(const std::vector<json>& pods) {
  TrialPods out;
  out.pods.reserve(pods.size());
  for (const auto& pod : pods) out.pods.push_back(ReadPod(pod));
  for (TrialPod& p : out.pods) {
    p.replaced = p.deleting && std::any_of(out.pods.begin(), out.pods.end(), [&](const auto& o) {
                   return !o.deleting && o.rank == p.rank;
                 });
  }
  const TrialPod* lead = nullptr;
  for (const TrialPod& p : out.pods) {
    if (p.replaced) continue;
    if (!p.node_name.empty() && std::find(out.node_names.begin(), out.node_names.end(),
                                          p.node_name) == out.node_names.end()) {
      out.node_names.push_back(p.node_name);
    }
    out.any_running |= p.phase == "Running";
    out.any_finished |= p.phase == "Succeeded" || p.phase == "Failed";
    if (p.start_time && (!out.start_time || *p.start_time < *out.start_time)) {
      out.start_time = p.start_time;
    }
    if (lead == nullptr || (p.lead && !lead->lead)) lead = &p;
  }
  std::sort(out.node_names.begin(), out.node_names.end());
  // The order of TrialPods::evidence_order, as a key: (class, finish, being deleted), the finish
  // and deletion counting only among failed pods that finished; an earlier run's pods last.
  const auto key = [&](size_t i) {
    const TrialPod& p = out.pods[i];
    const int cls = p.replaced ? 4 : p.failed ? (p.finished_at ? 0 : 1) : (&p == lead ? 2 : 3);
    return std::tuple(cls, cls == 0 ? *p.finished_at : SystemTime{}, cls == 0 && p.deleting);
  };
  out.evidence_order.resize(out.pods.size());
  for (size_t i = 0; i < out.pods.size(); ++i) out.evidence_order[i] = i;
  std::stable_sort(out.evidence_order.begin(), out.evidence_order.end(),
                   [&](size_t a, size_t b) { return key(a) < key(b); });
  return out;
}

const TrialPod& TrialPods::Evidence() const {
  static const TrialPod kNone;
  return evidence_order.empty() ? kNone : pods[evidence_order.front()];
}

bool ShouldRetryLogRead(const Status& read, const TrialPod& pod, SystemTime now) {
  if (read.ok()) return false;
  if (read.code() != StatusCode::kUnavailable && read.code() != StatusCode::kDeadlineExceeded) {
    return false;
  }
  return pod.finished_at.has_value() && now - *pod.finished_at < kLogRetryWindow;
}

double WallSeconds(const TrialPods& pods, SystemTime now) {
  std::optional<SystemTime> start, end;
  bool running = false;
  for (const TrialPod& p : pods.pods) {
    if (!p.start_time || p.replaced) continue;
    if (!start || *p.start_time < *start) start = p.start_time;
    if (p.finished_at && (!end || *p.finished_at > *end)) end = p.finished_at;
    running |= !p.finished_at;
  }
  if (!start) return 0;
  const SystemTime stop = running || !end ? now : *end;
  const double s = std::chrono::duration<double>(stop - *start).count();
  return s > 0 ? s : 0;
}

Millis UnschedulableFor(const TrialPods& pods, SystemTime now, std::string* message,
                        size_t* which) {
  Millis longest{0};
  for (size_t i = 0; i < pods.pods.size(); ++i) {
    for (const auto& [since, said] : pods.pods[i].unschedulable) {
      auto d = std::chrono::duration_cast<Millis>(now - since);
      if (d >= longest) {
        longest = d;
        *message = said;
        if (which != nullptr) *which = i;
      }
    }
  }
  return longest;
}

}  // namespace paratune::controllers
