#include "cli/local_trials.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agents/model/workload.h"
#include "agents/trials/trial_env.h"
#include "base/strings.h"

namespace paratune::cli {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kContainerPath = "spec.trialTemplate.spec.template.spec.containers[0]";
constexpr size_t kLogTailBytes = 256 * 1024;  // what the collectors read (a whole small run)
constexpr size_t kTerminationBytes = 4096;    // the kubelet's termination-message cap

// A TCP port that was free a moment ago (bound to port 0, then released), for MASTER_PORT.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > static_cast<std::streamoff>(max_bytes)
                                  ? size - static_cast<std::streamoff>(max_bytes)
                                  : 0;
  in.seekg(from);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<int64_t> GpuQuantity(const nlohmann::json& v, const std::string& field) {
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (!s.empty() && s.size() < 7 && std::all_of(s.begin(), s.end(), ::isdigit)) {
      return std::stoll(s);
    }
  }
  return Status::Invalid(field + ": a whole number of GPUs expected, got " + v.dump());
}

const nlohmann::json* FirstContainer(const CampaignSpec& spec) {
  const nlohmann::json& t = spec.trial_template;
  if (!t.is_object() || !t.contains("spec") || !t["spec"].is_object()) return nullptr;
  const nlohmann::json& tmpl = t["spec"].value("template", nlohmann::json::object());
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) return nullptr;
  const nlohmann::json& cs = tmpl["spec"].value("containers", nlohmann::json::array());
  if (!cs.is_array() || cs.empty() || !cs[0].is_object()) return nullptr;
  return &t["spec"]["template"]["spec"]["containers"][0];
}

Status CheckStrings(const nlohmann::json& c, const char* key) {
  if (!c.contains(key)) return Status::Ok();
  const auto& v = c[key];
  if (!v.is_array() ||
      !std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_string(); })) {
    return Status::Invalid(std::string(kContainerPath) + "." + key + ": a list of strings");
  }
  return Status::Ok();
}

}  // namespace

struct LocalTrialExecutor::ActiveTrial {
  TrialPlan plan;
  std::unique_ptr<LocalProcess> process;
  std::vector<std::string> gpus;
  std::string log_path, termination_path;
  Clock::time_point started;
  std::string start_error;  // set when the command could not start
};

Result<int64_t> TemplateGpuCount(const CampaignSpec& spec) {
  const nlohmann::json* c = FirstContainer(spec);
  if (c != nullptr && c->contains("resources") && (*c)["resources"].is_object()) {
    for (const char* section : {"limits", "requests"}) {
      const auto& r = (*c)["resources"].value(section, nlohmann::json::object());
      if (r.is_object() && r.contains("nvidia.com/gpu")) {
        return GpuQuantity(r["nvidia.com/gpu"], std::string(kContainerPath) + ".resources." +
                                                    section + "[\"nvidia.com/gpu\"]");
      }
    }
  }
  return spec.hardware.devices_per_node;
}

LocalTrialExecutor::LocalTrialExecutor(const CampaignSpec& spec, LocalTrialOptions options)
    : spec_(spec), options_(std::move(options)) {}

LocalTrialExecutor::~LocalTrialExecutor() { KillAll(); }

Result<std::unique_ptr<LocalTrialExecutor>> LocalTrialExecutor::Create(const CampaignSpec& spec,
                                                                       LocalTrialOptions options) {
  if (spec.hardware.nodes > 1) {
    return Status::Invalid("spec.hardware.nodes: " + std::to_string(spec.hardware.nodes) +
                           " nodes; --local runs trials of one node only");
  }
  auto w = ResolveWorkload(spec);
  if (!w.ok()) return w.status();
  if (w->IsTpu()) {
    return Status::Invalid("spec.hardware.accelerator: " + spec.hardware.accelerator +
                           " is a TPU; --local maps GPUs only");
  }
  const nlohmann::json* c = FirstContainer(spec);
  if (c == nullptr) {
    return Status::Invalid(std::string(kContainerPath) + ": the trial template has no container");
  }
  PARATUNE_RETURN_IF_ERROR(CheckStrings(*c, "command"));
  PARATUNE_RETURN_IF_ERROR(CheckStrings(*c, "args"));
  if (c->value("command", nlohmann::json::array()).empty() &&
      c->value("args", nlohmann::json::array()).empty()) {
    return Status::Invalid(std::string(kContainerPath) +
                           ".command: required for --local (no image entrypoint runs here)");
  }
  // A program that is not here would fail every trial the same way: say so before any runs.
  const auto& first =
      c->value("command", nlohmann::json::array()).empty() ? (*c)["args"][0] : (*c)["command"][0];
  const std::string program = first.get<std::string>();
  const char* path = std::getenv("PATH");
  const std::string search =
      options.extra_path + ":" + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  if (program.find("$(") == std::string::npos && !FindExecutable(program, search)) {
    return Status::Invalid(std::string(kContainerPath) + ".command: \"" + program +
                           "\" is not an executable here (PATH, or relative to the working "
                           "directory when it holds a '/')");
  }
  auto gpus = TemplateGpuCount(spec);
  if (!gpus.ok()) return gpus.status();
  const int64_t have = static_cast<int64_t>(options.devices.size());
  if (*gpus > have) {
    return Status::Invalid(std::string(kContainerPath) + ".resources: each trial needs " +
                           std::to_string(*gpus) + " GPU(s); this machine has " +
                           std::to_string(have) + " (--devices)");
  }
  std::unique_ptr<LocalTrialExecutor> e(new LocalTrialExecutor(spec, std::move(options)));
  e->container_ = *c;
  e->gpus_per_trial_ = *gpus;
  e->free_devices_ = e->options_.devices;
  const int64_t by_devices = *gpus > 0 ? have / *gpus : spec.budget.parallel_trials;
  e->slots_ = std::max<int64_t>(1, std::min(spec.budget.parallel_trials, by_devices));
  std::error_code ec;
  std::filesystem::create_directories(e->options_.out_dir + "/trials", ec);
  if (ec)
    return Status::Invalid("--out: cannot create " + e->options_.out_dir + ": " + ec.message());
  return e;
}

std::map<std::string, std::string> LocalTrialExecutor::EnvFor(
    const TrialPlan& plan, const std::vector<std::string>& gpus) const {
  // Kubernetes order: the container's own env (each may refer to the ones before it), then the
  // controller's variables, which win (controllers/job_renderer.cc MergeEnv).
  std::map<std::string, std::string> env;
  const auto& own = container_.value("env", nlohmann::json::array());
  if (own.is_array()) {
    for (const auto& e : own) {
      if (e.is_object() && e.value("name", "") != "" && e.contains("value") &&
          e["value"].is_string()) {
        env[e["name"].get<std::string>()] =
            ExpandKubernetesVars(e["value"].get<std::string>(), env);
      }
    }
  }
  for (const auto& v : TrialEnvironment(spec_, plan.name, plan.iteration, plan.config)) {
    env[v.name] = v.value;
  }
  for (const auto& v :
       LocalRendezvousEnvironment(FreePort(), FreePort(), std::max<int64_t>(1, gpus_per_trial_))) {
    env[v.name] = v.value;
  }
  env["PARATUNE_NODE_NAME"] = "localhost";
  std::string visible;
  for (const auto& g : gpus) visible += (visible.empty() ? "" : ",") + g;
  env["CUDA_VISIBLE_DEVICES"] = visible;
  if (!options_.extra_path.empty()) {
    const char* path = std::getenv("PATH");
    env["PATH"] = options_.extra_path + ":" + (path != nullptr ? path : "/usr/bin:/bin");
  }
  return env;
}

Status LocalTrialExecutor::Start(const TrialPlan& plan) {
  if (static_cast<int64_t>(running_.size()) >= slots_) {
    return Status::Precondition("no free slot for " + plan.name);
  }
  auto r = std::make_unique<ActiveTrial>();
  r->plan = plan;
  r->gpus.assign(free_devices_.begin(), free_devices_.begin() + gpus_per_trial_);
  free_devices_.erase(free_devices_.begin(), free_devices_.begin() + gpus_per_trial_);
  r->log_path = options_.out_dir + "/trials/" + plan.name + ".log";
  r->termination_path = options_.out_dir + "/trials/" + plan.name + ".termination-log";
  std::error_code ec;
  std::filesystem::remove(r->termination_path, ec);  // absent is fine
  std::map<std::string, std::string> env = EnvFor(plan, r->gpus);
  env["PARATUNE_TERMINATION_LOG"] = r->termination_path;
  ProcessSpec ps;
  for (const char* key : {"command", "args"}) {
    for (const auto& a : container_.value(key, nlohmann::json::array())) {
      ps.argv.push_back(ExpandKubernetesVars(a.get<std::string>(), env));
    }
  }
  ps.env = std::move(env);
  ps.dir = options_.work_dir;  // workingDir names a path in the image, which is not here
  ps.log_path = r->log_path;
  r->started = Clock::now();
  auto p = LocalProcess::Start(ps);
  if (p.ok()) {
    r->process = std::move(p).value();
  } else {
    r->start_error = p.status().message();
    std::ofstream(r->log_path, std::ios::trunc) << r->start_error << "\n";
  }
  running_.push_back(std::move(r));
  return Status::Ok();
}

TrialOutcome LocalTrialExecutor::Finish(ActiveTrial& r, int exit_status, bool timed_out) {
  const double seconds = std::chrono::duration<double>(Clock::now() - r.started).count();
  TrialOutcome o;
  o.name = r.plan.name;
  o.node_names = {"localhost"};
  o.exit_code = exit_status;
  o.succeeded = exit_status == 0 && !timed_out;
  o.log = ReadTail(r.log_path, kLogTailBytes);
  o.termination_message = ReadTail(r.termination_path, kTerminationBytes);
  // terminationMessagePolicy: FallbackToLogsOnError (contract section 4).
  if (!o.succeeded && o.termination_message.empty()) {
    o.termination_message = Tail(o.log, kTerminationBytes);
  }
  if (timed_out) {
    o.pod_reason = "DeadlineExceeded";
    o.events.push_back("Job was active longer than specified deadline (trialTimeout " +
                       std::to_string(spec_.budget.trial_timeout_seconds) + "s)");
  } else if (!o.succeeded) {
    o.pod_reason = "Error";
  }
  o.accelerator_hours = static_cast<double>(spec_.hardware.TotalDevices()) * seconds / 3600.0;
  return o;
}

void LocalTrialExecutor::EndGroups(std::vector<ActiveTrial*> victims) {
  for (ActiveTrial* r : victims) {
    if (r->process) r->process->Signal(SIGTERM);
  }
  const auto deadline = Clock::now() + options_.kill_grace;
  while (Clock::now() < deadline) {
    bool all_done = true;
    for (ActiveTrial* r : victims) all_done &= !r->process || r->process->Poll().has_value();
    if (all_done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (ActiveTrial* r : victims) {
    if (r->process && !r->process->Poll()) r->process->Signal(SIGKILL);
  }
}

std::vector<TrialOutcome> LocalTrialExecutor::Reap(std::chrono::milliseconds wait) {
  std::vector<TrialOutcome> out;
  const auto until = Clock::now() + wait;
  const auto timeout = std::chrono::seconds(spec_.budget.trial_timeout_seconds);
  for (;;) {
    std::vector<ActiveTrial*> late;
    for (auto it = running_.begin(); it != running_.end();) {
      ActiveTrial& r = **it;
      std::optional<int> status = r.process ? r.process->Poll() : std::optional<int>(127);
      if (!status && Clock::now() - r.started > timeout) late.push_back(&r);
      if (!status) {
        ++it;
        continue;
      }
      out.push_back(Finish(r, *status, false));
      free_devices_.insert(free_devices_.end(), r.gpus.begin(), r.gpus.end());
      it = running_.erase(it);
    }
    if (!late.empty()) {
      EndGroups(late);
      for (auto it = running_.begin(); it != running_.end();) {
        if (std::find(late.begin(), late.end(), it->get()) == late.end()) {
          ++it;
          continue;
        }
        const std::optional<int> status = (*it)->process->Poll();
        out.push_back(Finish(**it, status.value_or(128 + SIGKILL), true));
        free_devices_.insert(free_devices_.end(), (*it)->gpus.begin(), (*it)->gpus.end());
        it = running_.erase(it);
      }
    }
    if (!out.empty() || running_.empty() || Clock::now() >= until) return out;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<std::pair<std::string, std::string>> LocalTrialExecutor::RunningLogs() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : running_) {
    if (r->process) out.emplace_back(r->plan.name, ReadTail(r->log_path, kLogTailBytes));
  }
  return out;
}

std::optional<TrialOutcome> LocalTrialExecutor::Stop(const std::string& name) {
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if ((*it)->plan.name != name || !(*it)->process) continue;
    EndGroups({it->get()});
    const std::optional<int> status = (*it)->process->Poll();
    TrialOutcome o = Finish(**it, status.value_or(128 + SIGKILL), false);
    free_devices_.insert(free_devices_.end(), (*it)->gpus.begin(), (*it)->gpus.end());
    running_.erase(it);
    return o;
  }
  return std::nullopt;
}

void LocalTrialExecutor::KillAll() {
  std::vector<ActiveTrial*> all;
  for (auto& r : running_) all.push_back(r.get());
  EndGroups(all);
  running_.clear();  // ~LocalProcess SIGKILLs and reaps what survived
  free_devices_ = options_.devices;
}

}  // namespace paratune::cli
