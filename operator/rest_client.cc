// RestKubeClient over cpprestsdk. All cpprestsdk and boost types stay in this file.
#include "operator/rest_client.h"

// cpprestsdk defines a macro U() that breaks fmt (spdlog) templates.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/http_client.h>
#include <cpprest/uri_builder.h>
#include <pplx/threadpool.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ssl.hpp>
#include <mutex>

#include "base/tls_library.h"
#include "operator/rest_request.h"
#include "operator/token_bucket.h"

namespace paratune::kube {

namespace http = web::http;
namespace client = web::http::client;

namespace {

// Before main, before any TLS connection (base/tls_library.h).
[[maybe_unused]] const bool kTlsKeptUntilExit = [] {
  KeepTlsLibraryUntilExit();
  return true;
}();

client::http_client_config MakeConfig(const RestConfig& cfg, int timeout_s) {
  client::http_client_config config;
  config.set_timeout(std::chrono::seconds(timeout_s));
  config.set_validate_certificates(!cfg.insecure_skip_tls_verify);
  std::string ca = cfg.ca_pem, cert = cfg.client_cert_pem, key = cfg.client_key_pem;
  config.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
    boost::system::error_code ec;
    if (!ca.empty()) ctx.add_certificate_authority(boost::asio::buffer(ca), ec);
    if (!cert.empty()) ctx.use_certificate_chain(boost::asio::buffer(cert), ec);
    if (!key.empty()) {
      ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem, ec);
    }
    if (ec) spdlog::error("kube client: TLS setup failed: {}", ec.message());
  });
  return config;
}

void InitThreadPool() {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      crossplat::threadpool::initialize_with_threads(4);
    } catch (const std::exception&) {
      // Already initialized by another cpprest user: keep its pool.
    }
  });
}

// One non-watch request: what DoRaw sends and how it is counted.
struct Call {
  const char* verb;  // metric label: GET LIST POST PUT PATCH DELETE
  http::method method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  const Json* body = nullptr;
  std::string content_type;
  bool is_create = false;
  std::string resource;  // metric label: "trialruns.tuning.paratune.dev/status"
};

std::string ResourceLabel(const GroupVersionResource& gvr, const std::string& sub = "") {
  return sub.empty() ? gvr.GroupResource() : gvr.GroupResource() + "/" + sub;
}

// Seconds from a Retry-After header (delta-seconds form only; dates are ignored): -1 if none.
int RetryAfterSeconds(const http::http_headers& headers) {
  auto it = headers.find("Retry-After");
  if (it == headers.end()) return -1;
  try {
    return std::max(0, std::stoi(utility::conversions::to_utf8string(it->second)));
  } catch (const std::exception&) {
    return -1;
  }
}

class RestKubeClientImpl final : public RestKubeClient {
 public:
  RestKubeClientImpl(const RestConfig& cfg, TimeSource* time, MetricsRegistry* metrics)
      : cfg_(cfg),
        time_(time),
        metrics_(metrics),
        client_(utility::conversions::to_string_t(cfg.server),
                MakeConfig(cfg, cfg.timeout_seconds)),
        watch_client_(utility::conversions::to_string_t(cfg.server), MakeConfig(cfg, 900)),
        bucket_(cfg.qps, cfg.burst, time->Now()),
        tokens_(cfg, time) {
    if (metrics_ != nullptr) {
      metrics_->DeclareHistogram(kRestLatency,
                                 "Request latency in seconds by verb, resource and code",
                                 MetricsRegistry::LatencyBuckets());
      metrics_->DeclareCounter(kRestRequests, "Requests by verb, resource and code");
      metrics_->DeclareCounter(kRestRetries, "Requests retried after 429 or Retry-After, by code");
      metrics_->DeclareCounter(kRestThrottleSeconds,
                               "Seconds requests waited in the client-side token bucket");
      metrics_->SetGaugeFunction(kRestServerFlowControl, {}, [this] {
        return flow_control_.load() == kServerFlowControl ? 1.0 : 0.0;
      });
    }
  }
  ~RestKubeClientImpl() override {
    if (metrics_ != nullptr)
      metrics_->SetGaugeFunction(kRestServerFlowControl, {}, [] { return 0.0; });
  }

  Result<Json> Get(const GroupVersionResource& gvr, const std::string& ns,
                   const std::string& name) override {
    return DoJson({"GET",
                   http::methods::GET,
                   ResourcePath(gvr, ns, name),
                   {},
                   nullptr,
                   "",
                   false,
                   ResourceLabel(gvr)});
  }

  Result<ObjectList> List(const GroupVersionResource& gvr, const std::string& ns,
                          const ListOptions& opts) override {
    Query q;
    AddIf(&q, "labelSelector", opts.label_selector);
    AddIf(&q, "fieldSelector", opts.field_selector);
    if (opts.limit > 0) q.emplace_back("limit", std::to_string(opts.limit));
    AddIf(&q, "continue", opts.continue_token);
    AddIf(&q, "resourceVersion", opts.resource_version);
    auto r = DoJson({"LIST", http::methods::GET, ResourcePath(gvr, ns, ""), q, nullptr, "", false,
                     ResourceLabel(gvr)});
    if (!r.ok()) return r.status();
    return ParseList(gvr, *r);
  }

  Result<Json> Create(const GroupVersionResource& gvr, const std::string& ns, const Json& obj,
                      const WriteOptions& opts) override {
    std::string obj_ns = NamespaceOf(obj).empty() ? ns : NamespaceOf(obj);
    return DoJson({"POST", http::methods::POST, ResourcePath(gvr, obj_ns, ""), WriteQuery(opts),
                   &obj, "application/json", true, ResourceLabel(gvr)});
  }

  Result<Json> Update(const GroupVersionResource& gvr, const Json& obj,
                      const WriteOptions& opts) override {
    return DoJson({"PUT", http::methods::PUT, ResourcePath(gvr, NamespaceOf(obj), NameOf(obj)),
                   WriteQuery(opts), &obj, "application/json", false, ResourceLabel(gvr)});
  }

  Result<Json> UpdateStatus(const GroupVersionResource& gvr, const Json& obj,
                            const WriteOptions& opts) override {
    return DoJson({"PUT", http::methods::PUT,
                   ResourcePath(gvr, NamespaceOf(obj), NameOf(obj), "status"), WriteQuery(opts),
                   &obj, "application/json", false, ResourceLabel(gvr, "status")});
  }

  Result<Json> Patch(const GroupVersionResource& gvr, const std::string& ns,
                     const std::string& name, PatchType type, const Json& patch,
                     const WriteOptions& opts, const std::string& subresource) override {
    WriteOptions wo = opts;
    if (type == PatchType::kApply && wo.field_manager.empty()) wo.field_manager = cfg_.user_agent;
    Query q = WriteQuery(wo);
    if (type == PatchType::kApply && wo.force) q.emplace_back("force", "true");
    return DoJson({"PATCH", http::methods::PATCH, ResourcePath(gvr, ns, name, subresource), q,
                   &patch, PatchContentType(type), false, ResourceLabel(gvr, subresource)});
  }

  Status Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                const DeleteOptions& opts) override {
    Json body = DeleteBody(opts);
    return DoJson({"DELETE",
                   http::methods::DEL,
                   ResourcePath(gvr, ns, name),
                   {},
                   &body,
                   "application/json",
                   false,
                   ResourceLabel(gvr)})
        .status();
  }

  Result<std::string> GetPodLog(const std::string& ns, const std::string& name,
                                const PodLogOptions& opts) override {
    Query q;
    AddIf(&q, "container", opts.container);
    if (opts.tail_lines > 0) q.emplace_back("tailLines", std::to_string(opts.tail_lines));
    if (opts.limit_bytes > 0) q.emplace_back("limitBytes", std::to_string(opts.limit_bytes));
    if (opts.previous) q.emplace_back("previous", "true");
    return DoRaw({"GET", http::methods::GET, ResourcePath(resources::kPods, ns, name, "log"), q,
                  nullptr, "", false, "pods/log"});
  }

  Status Watch(const GroupVersionResource& gvr, const std::string& ns, const WatchOptions& opts,
               const WatchHandler& handler, std::stop_token stop) override;

  int64_t request_count() const override { return requests_.load(); }
  bool server_flow_control() const override { return flow_control_.load() == kServerFlowControl; }

 private:
  using Query = std::vector<std::pair<std::string, std::string>>;
  static constexpr int kUnknownFlowControl = 0;
  static constexpr int kServerFlowControl = 1;

  static void AddIf(Query* q, const char* k, const std::string& v) {
    if (!v.empty()) q->emplace_back(k, v);
  }
  static Query WriteQuery(const WriteOptions& opts) {
    Query q;
    AddIf(&q, "fieldManager", opts.field_manager);
    if (opts.dry_run) q.emplace_back("dryRun", "All");
    return q;
  }

  http::http_request MakeRequest(const http::method& method, const std::string& path,
                                 const Query& query, Status* status);
  void RateLimit();
  void NoteFlowControl(const http::http_headers& headers);
  void Record(const Call& call, int code, SteadyTime start);
  // Sends once; *retry_after is set (seconds, 0 if the header was absent) when the answer asks
  // for a retry (429, or a 5xx carrying Retry-After).
  Result<std::string> SendOnce(const Call& call, int* retry_after);
  Result<std::string> DoRaw(const Call& call);
  Result<Json> DoJson(const Call& call);

  RestConfig cfg_;
  TimeSource* time_;
  MetricsRegistry* metrics_;
  client::http_client client_;
  client::http_client watch_client_;
  std::mutex bucket_mu_;
  TokenBucket bucket_;  // guarded by bucket_mu_
  std::atomic<int64_t> requests_{0};
  std::atomic<int> flow_control_{kUnknownFlowControl};
  TokenSource tokens_;
};

http::http_request RestKubeClientImpl::MakeRequest(const http::method& method,
                                                   const std::string& path, const Query& query,
                                                   Status* status) {
  web::uri_builder ub(utility::conversions::to_string_t(path));
  for (const auto& [k, v] : query) ub.append_query(k, v, true);
  http::http_request req(method);
  req.set_request_uri(ub.to_uri());
  req.headers().add("User-Agent", cfg_.user_agent);
  req.headers().add("Accept", "application/json");
  auto token = tokens_.Current();
  if (!token.ok()) {
    *status = token.status();
  } else if (!token->empty()) {
    req.headers().add("Authorization", "Bearer " + *token);
  }
  return req;
}

void RestKubeClientImpl::RateLimit() {
  if (cfg_.qps <= 0) return;
  if (!cfg_.rate_limit_always && flow_control_.load() == kServerFlowControl) return;
  Millis wait;
  {
    std::lock_guard lock(bucket_mu_);
    wait = bucket_.Reserve(time_->Now());
  }
  if (wait <= Millis(0)) return;
  if (metrics_ != nullptr) metrics_->Inc(kRestThrottleSeconds, {}, wait.count() / 1000.0);
  time_->SleepFor(wait, std::stop_token());
}

// The API Priority and Fairness filter (Kubernetes >= 1.20) names the FlowSchema that classified
// every request it served in X-Kubernetes-PF-FlowSchema-UID: once a response carries it, the
// server does the limiting. Serving the flowcontrol.apiserver.k8s.io group says nothing: a 1.20
// server started with --enable-priority-and-fairness=false serves it and limits nothing. Sticky;
// until then, and on servers without the filter, the token bucket applies.
void RestKubeClientImpl::NoteFlowControl(const http::http_headers& headers) {
  if (!headers.has("X-Kubernetes-PF-FlowSchema-UID")) return;
  if (flow_control_.exchange(kServerFlowControl) != kServerFlowControl) {
    spdlog::info("kube client: the API server has priority and fairness{}",
                 cfg_.rate_limit_always ? "; --kube-api-qps keeps the client-side limit of " +
                                              std::to_string(cfg_.qps) + " qps"
                                        : ": no client-side rate limit");
  }
}

void RestKubeClientImpl::Record(const Call& call, int code, SteadyTime start) {
  double secs = std::chrono::duration<double>(time_->Now() - start).count();
  if (call.verb != std::string("WATCH")) AddThreadApiSeconds(secs);
  if (metrics_ == nullptr) return;
  const std::string code_text = code == 0 ? "<error>" : std::to_string(code);
  metrics_->Observe(kRestLatency,
                    {{"verb", call.verb}, {"resource", call.resource}, {"code", code_text}}, secs);
  metrics_->Inc(kRestRequests,
                {{"verb", call.verb}, {"resource", call.resource}, {"code", code_text}});
}

Result<std::string> RestKubeClientImpl::SendOnce(const Call& call, int* retry_after) {
  *retry_after = -1;
  RateLimit();
  requests_++;
  Status st;
  http::http_request req = MakeRequest(call.method, call.path, call.query, &st);
  if (!st.ok()) return st;
  // Replace invalid UTF-8 rather than throw: log text ends up in status fields.
  if (call.body != nullptr) {
    req.set_body(call.body->dump(-1, ' ', false, Json::error_handler_t::replace),
                 call.content_type);
  }
  SteadyTime start = time_->Now();
  try {
    http::http_response resp = client_.request(req).get();
    std::string text = resp.extract_utf8string(true).get();
    int code = resp.status_code();
    Record(call, code, start);
    NoteFlowControl(resp.headers());
    if (code >= 200 && code < 300) return text;
    const int after = RetryAfterSeconds(resp.headers());
    if (code == 429) *retry_after = std::max(0, after);
    if (code >= 500 && after >= 0) *retry_after = after;
    return StatusFromResponse(code, text, call.is_create);
  } catch (const std::exception& e) {
    Record(call, 0, start);
    return TransportError(e, call.verb + std::string(" ") + call.path);
  }
}

Result<std::string> RestKubeClientImpl::DoRaw(const Call& call) {
  Millis backoff(250);
  for (int attempt = 0;; ++attempt) {
    int retry_after = -1;
    Result<std::string> r = SendOnce(call, &retry_after);
    if (r.ok() || retry_after < 0 || attempt >= cfg_.max_retries) return r;
    // The server turned the request away before acting on it (429), or asked to be retried
    // later: wait as told (or back off) and send it again, as client-go does.
    Millis wait = retry_after > 0 ? Millis(std::min(retry_after, 30) * 1000) : backoff;
    backoff = std::min(backoff * 2, Millis(10000));
    if (metrics_ != nullptr) metrics_->Inc(kRestRetries, {{"verb", call.verb}});
    spdlog::debug("kube client: {} {}: {}; retrying in {} ms", call.verb, call.path,
                  r.status().message(), wait.count());
    time_->SleepFor(wait, std::stop_token());
  }
}

Result<Json> RestKubeClientImpl::DoJson(const Call& call) {
  auto text = DoRaw(call);
  if (!text.ok()) return text.status();
  try {
    return Json::parse(*text);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("response of ") + call.path + " is not JSON: " + e.what());
  }
}

Status RestKubeClientImpl::Watch(const GroupVersionResource& gvr, const std::string& ns,
                                 const WatchOptions& opts, const WatchHandler& handler,
                                 std::stop_token stop) {
  Query q{{"watch", "true"}};
  AddIf(&q, "labelSelector", opts.label_selector);
  AddIf(&q, "fieldSelector", opts.field_selector);
  AddIf(&q, "resourceVersion", opts.resource_version);
  if (opts.allow_bookmarks) q.emplace_back("allowWatchBookmarks", "true");
  if (opts.timeout_seconds > 0)
    q.emplace_back("timeoutSeconds", std::to_string(opts.timeout_seconds));
  Status st;
  http::http_request req = MakeRequest(http::methods::GET, ResourcePath(gvr, ns, ""), q, &st);
  if (!st.ok()) return st;
  pplx::cancellation_token_source cts;
  std::stop_callback on_stop(stop, [&cts] { cts.cancel(); });
  SteadyTime start = time_->Now();
  try {
    http::http_response resp = watch_client_.request(req, cts.get_token()).get();
    int code = resp.status_code();
    Record(Call{"WATCH", http::methods::GET, "", {}, nullptr, "", false, ResourceLabel(gvr)}, code,
           start);
    if (code != 200) {
      return StatusFromResponse(code, resp.extract_utf8string(true).get(), false);
    }
    auto buf = resp.body().streambuf();
    LineSplitter lines;
    std::string chunk;
    while (!stop.stop_requested()) {
      auto c = buf.bumpc().get();  // blocks for the next byte (or EOF / cancellation).
      if (c == std::char_traits<char>::eof()) break;
      chunk.assign(1, static_cast<char>(c));
      size_t avail = buf.in_avail();
      if (avail > 0) {
        chunk.resize(1 + avail);
        size_t got = buf.getn(reinterpret_cast<uint8_t*>(&chunk[1]), avail).get();
        chunk.resize(1 + got);
      }
      Status s = lines.Feed(
          chunk, [&](const std::string& line) { return DispatchWatchLine(line, handler); });
      if (s.code() == StatusCode::kFailedPrecondition) return Status::Ok();  // handler stopped.
      if (!s.ok()) return s;
    }
    return Status::Ok();
  } catch (const std::exception& e) {
    if (stop.stop_requested()) return Status::Ok();
    return TransportError(e, "WATCH " + gvr.GroupResource());
  }
}

}  // namespace

Result<std::unique_ptr<RestKubeClient>> RestKubeClient::Create(const RestConfig& cfg,
                                                               TimeSource* time,
                                                               MetricsRegistry* metrics) {
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
    return Status::Invalid("server: must be an http(s) URL, got \"" + cfg.server + "\"");
  }
  InitThreadPool();
  try {
    return std::unique_ptr<RestKubeClient>(new RestKubeClientImpl(cfg, time, metrics));
  } catch (const std::exception& e) {
    return Status::Invalid(std::string("server: ") + e.what());
  }
}

}  // namespace paratune::kube
