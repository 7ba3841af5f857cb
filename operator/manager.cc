#include "operator/manager.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <thread>

#include "operator/probe_server.h"

namespace paratune::kube {

Manager::Manager(ManagerOptions opts, KubeClient* client, TimeSource* time,
                 MetricsRegistry* metrics)
    : opts_(std::move(opts)),
      client_(client),
      time_(time),
      metrics_(metrics),
      recorder_(std::make_unique<EventRecorder>(client, opts_.name, time, opts_.events)) {}

Manager::~Manager() {
  StopLeaderWork();
  if (probe_) probe_->Stop();
  if (metrics_server_) metrics_server_->Stop();
}

Result<std::unique_ptr<Manager>> Manager::Create(ManagerOptions opts, KubeClient* client,
                                                 TimeSource* time, MetricsRegistry* metrics) {
  if (!opts.probe_address.empty() && opts.probe_address.find(':') == std::string::npos) {
    return Status::Invalid("probe address: want host:port, got \"" + opts.probe_address + "\"");
  }
  if (opts.leader_election) {
    if (opts.leader.lease_name.empty()) opts.leader.lease_name = opts.name;
    if (opts.leader.lease_namespace.empty()) {
      return Status::Invalid("leader election: lease namespace: required");
    }
    if (opts.leader.identity.empty()) {
      char host[256] = {0};
      gethostname(host, sizeof(host) - 1);
      opts.leader.identity = std::string(host) + "_" + std::to_string(getpid());
    }
  }
  return std::unique_ptr<Manager>(new Manager(std::move(opts), client, time, metrics));
}

Informer* Manager::GetInformer(const GroupVersionResource& gvr, const std::string& ns,
                               const std::string& label_selector) {
  for (auto& inf : informers_) {
    if (inf->gvr() == gvr && inf->namespace_() == ns && inf->label_selector() == label_selector) {
      return inf.get();
    }
  }
  ReflectorOptions ro = opts_.reflector;
  ro.ns = ns;
  ro.label_selector = label_selector;
  informers_.push_back(std::make_unique<Informer>(client_, gvr, ro, time_, metrics_));
  return informers_.back().get();
}

Controller* Manager::NewController(ControllerOptions opts, Reconciler* reconciler) {
  controllers_.push_back(
      std::make_unique<Controller>(std::move(opts), reconciler, time_, metrics_));
  return controllers_.back().get();
}

void Manager::AddRunnable(std::unique_ptr<Runnable> runnable, bool leader_only) {
  runnables_.emplace_back(std::move(runnable), leader_only);
}

int Manager::probe_port() const { return probe_ ? probe_->port() : 0; }
int Manager::metrics_port() const { return metrics_server_ ? metrics_server_->port() : 0; }

void Manager::StartLeaderWork() {
  leading_.store(true);
  for (auto& c : controllers_) c->Start();
  for (auto& [r, leader_only] : runnables_) {
    if (leader_only) r->Start();
  }
}

void Manager::StopLeaderWork() {
  if (!leading_.exchange(false)) return;
  // Bounded: a reconcile that hangs must not keep the process past the grace period.
  auto done = std::async(std::launch::async, [this] {
    for (auto& c : controllers_) c->Stop();
    for (auto& [r, leader_only] : runnables_) {
      if (leader_only) r->Stop();
    }
  });
  if (done.wait_for(opts_.graceful_shutdown) != std::future_status::ready) {
    spdlog::error("manager: workers did not stop within {} ms; exiting anyway",
                  opts_.graceful_shutdown.count());
    std::_Exit(1);
  }
}

bool Manager::WaitForCaches(std::stop_token stop) {
  for (auto& inf : informers_) {
    if (!inf->WaitForSync(stop, opts_.cache_sync_timeout)) return false;
  }
  return true;
}

Status Manager::Run(std::stop_token stop) {
  running_.store(true);
  const HttpProbeServer::Handler serve_metrics = [this] {
    return ProbeResponse{200, metrics_ ? metrics_->Render() : "", "text/plain; version=0.0.4"};
  };
  if (!opts_.metrics_address.empty()) {
    metrics_server_ = std::make_unique<HttpProbeServer>(
        std::map<std::string, HttpProbeServer::Handler>{{"/metrics", serve_metrics}});
    Status s = metrics_server_->Start(opts_.metrics_address);
    if (!s.ok())
      return Status(s.code(), "metrics address " + opts_.metrics_address + ": " + s.message());
  }
  if (!opts_.probe_address.empty()) {
    probe_ = std::make_unique<HttpProbeServer>(std::map<std::string, HttpProbeServer::Handler>{
        {"/healthz",
         [this] {
           return ProbeResponse{running_ ? 200 : 500, "ok\n"};
         }},
        {"/readyz",
         [this] {
           return ready_ ? ProbeResponse{200, "ok\n"} : ProbeResponse{500, "not ready\n"};
         }},
        {"/metrics", serve_metrics}});
    Status s = probe_->Start(opts_.probe_address);
    if (!s.ok()) return s;
  }
  std::stop_source informer_stop;
  std::vector<std::jthread> threads;
  for (auto& inf : informers_) {
    threads.emplace_back([&inf, token = informer_stop.get_token()] { inf->Run(token); });
  }
  for (auto& [r, leader_only] : runnables_) {
    if (!leader_only) r->Start();
  }
  Status result;
  if (!WaitForCaches(stop)) {
    result = stop.stop_requested() ? Status::Ok() : Status::Deadline("caches did not sync");
  } else {
    ready_.store(true);
    spdlog::info("manager {}: caches synced ({} informers)", opts_.name, informers_.size());
    if (opts_.leader_election) {
      LeaderElector elector(client_, opts_.leader, time_, metrics_);
      elector.Run(
          stop, [this] { StartLeaderWork(); }, [this] { StopLeaderWork(); });
      if (!stop.stop_requested()) result = Status::Unavailable("leadership lost");
    } else {
      StartLeaderWork();
      std::mutex mu;
      std::condition_variable_any cv;
      std::unique_lock lock(mu);
      cv.wait(lock, stop, [] { return false; });
    }
  }
  StopLeaderWork();
  for (auto& [r, leader_only] : runnables_) {
    if (!leader_only) r->Stop();
  }
  informer_stop.request_stop();
  threads.clear();  // joins.
  ready_.store(false);
  running_.store(false);
  if (probe_) probe_->Stop();
  spdlog::info("manager {}: stopped", opts_.name);
  return result;
}

std::stop_source& InstallSignalHandlers() {
  static std::stop_source source;
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by threads created later.
    // A peer that hung up (the API server cancelling a proxied pod-log read because its client
    // went away, a probe client closing early) is an EPIPE from write(), never the death of the
    // process: SIGPIPE's default action would kill it silently.
    signal(SIGPIPE, SIG_IGN);
    std::thread([set] {
      int sig = 0;
      sigwait(&set, &sig);
      spdlog::info("received signal {}: shutting down", sig);
      source.request_stop();
      sigwait(&set, &sig);  // a second signal: exit at once.
      std::_Exit(1);
    }).detach();
  });
  return source;
}

}  // namespace paratune::kube
