#include "tests/integration/reliability_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "controllers/message_pool_store.h"

namespace paratune::kube::testing {

namespace {

constexpr char kCampaignLabel[] = "tuning.paratune.dev/campaign";

int FreeLocalPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

OperatorProcess::OperatorProcess(LocalCluster* cluster, std::vector<std::string> extra,
                                 std::string log_path)
    : cluster_(cluster), extra_(std::move(extra)), log_path_(std::move(log_path)) {}

OperatorProcess::~OperatorProcess() {
  if (pid_ > 0) Stop(SIGKILL);
}

bool OperatorProcess::Start() {
  if (pid_ > 0 && Alive()) return true;
  port_ = FreeLocalPort();
  std::vector<std::string> args = {std::string(PARATUNE_BINARY_DIR) + "/bin/paratune-operator",
                                   "--kubeconfig", cluster_->dir() + "/operator.kubeconfig",
                                   "--health-probe-bind-address",
                                   "127.0.0.1:" + std::to_string(port_)};
  args.insert(args.end(), extra_.begin(), extra_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  exit_status_ = -1;
  return true;
}

void OperatorProcess::Stop(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(sig == SIGKILL ? 10 : 30);
  while (Alive() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_status_ = status;
    pid_ = -1;
  }
}

bool OperatorProcess::Alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  exit_status_ = status;
  pid_ = -1;
  return false;
}

std::string OperatorProcess::Http(const std::string& path) const {
  if (pid_ <= 0) return "";
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[8192];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  size_t body = out.find("\r\n\r\n");
  return body == std::string::npos ? "" : out.substr(body + 4);
}

double OperatorProcess::Metric(const std::string& family,
                               const std::vector<std::string>& label_parts) const {
  std::string text = Http("/metrics");
  if (text.empty()) return -1;
  double sum = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind(family, 0) != 0) continue;
    char next = line.size() > family.size() ? line[family.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    bool match = true;
    for (const auto& part : label_parts) match &= line.find(part) != std::string::npos;
    if (!match) continue;
    sum += std::atof(line.substr(line.rfind(' ') + 1).c_str());
  }
  return sum;
}

long OperatorProcess::RssKiB() const {
  if (pid_ <= 0) return 0;
  std::istringstream in(ReadAll("/proc/" + std::to_string(pid_) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

std::string OperatorProcess::Log() const { return ReadAll(log_path_); }

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds every) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(every);
  }
}

Json SimCampaign(const std::string& name, int max_trials, int parallel_trials) {
  Json params = Json::array({Json{{"name", "tp"}, {"values", {1, 2, 4, 8}}},
                             Json{{"name", "pp"}, {"values", {1, 2, 4}}},
                             Json{{"name", "mbs"}, {"values", {1, 2, 4}}},
                             Json{{"name", "recompute"}, {"values", {"none", "selective", "full"}}},
                             Json{{"name", "sequenceParallel"}, {"values", {true, false}}},
                             Json{{"name", "distributedOptimizer"}, {"values", {true, false}}}});
  Json container = {{"name", "trainer"},
                    {"image", "paratune/paratune:latest"},
                    {"command", {"paratune", "trial-sim"}}};
  return {
      {"apiVersion", "tuning.paratune.dev/v1alpha1"},
      {"kind", "TuningCampaign"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"model", {{"preset", "llama3-8b"}}},
        {"training", {{"framework", "megatron-lm"}, {"seqLength", 8192}, {"globalBatchSize", 512}}},
        {"hardware", {{"accelerator", "nvidia-h100-80gb"}, {"nodes", 1}, {"devicesPerNode", 8}}},
        {"searchSpace", {{"parameters", params}}},
        {"baseline",
         {{"tp", 2},
          {"pp", 1},
          {"mbs", 2},
          {"recompute", "full"},
          {"sequenceParallel", true},
          {"distributedOptimizer", true}}},
        {"objective", {{"metric", "mfu"}}},
        {"budget",
         {{"maxTrials", max_trials},
          {"parallelTrials", parallel_trials},
          {"maxFailedTrials", max_trials},
          {"trialTimeout", "5m"}}},
        {"trialTemplate",
         {{"spec",
           {{"backoffLimit", 0},
            {"template",
             {{"spec",
               {{"restartPolicy", "Never"}, {"containers", Json::array({container})}}}}}}}}},
        {"metrics", {{"collector", "megatron-lm"}}}}}};
}

std::vector<Json> TrialRunsOf(KubeClient* c, const std::string& ns, const std::string& campaign) {
  ListOptions o;
  o.label_selector = std::string(kCampaignLabel) + "=" + campaign;
  auto l = c->List(resources::kTrialRuns, ns, o);
  return l.ok() ? l->items : std::vector<Json>{};
}

std::vector<Json> JobsOf(KubeClient* c, const std::string& ns, const std::string& campaign) {
  ListOptions o;
  o.label_selector = std::string(kCampaignLabel) + "=" + campaign;
  auto l = c->List(resources::kJobs, ns, o);
  return l.ok() ? l->items : std::vector<Json>{};
}

std::string PhaseOf(KubeClient* c, const std::string& ns, const std::string& campaign) {
  auto tc = c->Get(resources::kTuningCampaigns, ns, campaign);
  if (!tc.ok()) return "";
  return tc->value("status", Json::object()).value("phase", "");
}

bool Finished(KubeClient* c, const std::string& ns, const std::string& campaign) {
  std::string p = PhaseOf(c, ns, campaign);
  return p == "Succeeded" || p == "Failed";
}

std::string AuditCampaign(KubeClient* c, const std::string& ns, const std::string& campaign,
                          int expected_trials) {
  std::ostringstream bad;
  auto tc = c->Get(resources::kTuningCampaigns, ns, campaign);
  if (!tc.ok()) return "campaign " + campaign + ": " + StatusText(tc.status());
  controllers::ConfigMapPoolStore store(c);
  auto pool = store.Load(*tc);
  if (!pool.ok()) return "pool of " + campaign + ": " + StatusText(pool.status());
  std::set<std::string> pool_names;
  for (const auto& t : pool->pool.trials()) pool_names.insert(t.name);
  std::map<std::string, std::string> trial_uids;  // name -> uid
  std::set<std::string> early_stopped;            // their Job is deleted when they are stopped
  std::set<int64_t> iterations;
  for (const Json& tr : TrialRunsOf(c, ns, campaign)) {
    std::string name = NameOf(tr);
    if (tr.contains("status") && tr["status"].is_object() &&
        tr["status"].value("phase", "") == "EarlyStopped") {
      early_stopped.insert(name);
    }
    if (!trial_uids.emplace(name, UidOf(tr)).second) bad << "TrialRun " << name << " twice; ";
    int64_t it = tr["spec"].value("iteration", int64_t{-1});
    if (!iterations.insert(it).second) bad << "iteration " << it << " on two TrialRuns; ";
    if (!pool_names.count(name)) bad << "TrialRun " << name << " is not in the pool; ";
  }
  for (const auto& name : pool_names) {
    if (!trial_uids.count(name)) bad << "pool trial " << name << " has no TrialRun (lost); ";
  }
  std::map<std::string, int> jobs_per_trial;
  for (const Json& job : JobsOf(c, ns, campaign)) {
    const Json* owner = ControllerOwnerOf(job);
    std::string owner_uid = owner != nullptr ? owner->value("uid", "") : "";
    std::string trial;
    for (const auto& [n, uid] : trial_uids) {
      if (uid == owner_uid) trial = n;
    }
    if (trial.empty()) bad << "Job " << NameOf(job) << " is owned by no TrialRun; ";
    if (++jobs_per_trial[trial] > 1) bad << "TrialRun " << trial << " has two Jobs; ";
  }
  for (const auto& [n, uid] : trial_uids) {
    if (!jobs_per_trial.count(n) && !early_stopped.count(n)) {
      bad << "TrialRun " << n << " has no Job; ";
    }
  }
  int64_t total = tc->value("status", Json::object())
                      .value("trials", Json::object())
                      .value("total", int64_t{-1});
  if (total != static_cast<int64_t>(trial_uids.size())) {
    bad << "status.trials.total " << total << " but " << trial_uids.size() << " TrialRuns; ";
  }
  if (expected_trials >= 0 && static_cast<int>(trial_uids.size()) != expected_trials) {
    bad << trial_uids.size() << " TrialRuns, the budget is " << expected_trials << "; ";
  }
  return bad.str();
}

std::string Describe(KubeClient* c, const std::string& ns, const std::string& campaign) {
  auto tc = c->Get(resources::kTuningCampaigns, ns, campaign);
  if (!tc.ok()) return StatusText(tc.status());
  const Json& st = tc->value("status", Json::object());
  std::ostringstream out;
  out << "phase=" << st.value("phase", "") << " trials=" << st.value("trials", Json()).dump()
      << " message=" << st.value("message", "") << " TrialRuns=[";
  for (const Json& tr : TrialRunsOf(c, ns, campaign)) {
    out << NameOf(tr) << ":" << tr.value("status", Json::object()).value("phase", "") << " ";
  }
  out << "]";
  return out.str();
}

}  // namespace paratune::kube::testing
