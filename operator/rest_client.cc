// RestKubeClient over cpprestsdk. All cpprestsdk and boost types stay in this file.
#include "operator/rest_client.h"

// cpprestsdk defines a macro U() that breaks fmt (spdlog) templates.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/http_client.h>
#include <cpprest/uri_builder.h>
#include <pplx/threadpool.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <mutex>

#include "operator/rest_request.h"
#include "operator/token_bucket.h"

namespace paratune::kube {

namespace http = web::http;
namespace client = web::http::client;

namespace {

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

class RestKubeClientImpl final : public RestKubeClient {
 public:
  RestKubeClientImpl(const RestConfig& cfg, TimeSource* time, MetricsRegistry* metrics)
      : cfg_(cfg),
        time_(time),
        metrics_(metrics),
        client_(utility::conversions::to_string_t(cfg.server),
                MakeConfig(cfg, cfg.timeout_seconds)),
        watch_client_(utility::conversions::to_string_t(cfg.server), MakeConfig(cfg, 900)),
        bucket_(cfg.qps, cfg.burst, time->Now()) {
    if (metrics_ != nullptr) {
      metrics_->DeclareHistogram(kRestLatency, "Request latency in seconds by verb and code",
                                 MetricsRegistry::LatencyBuckets());
      metrics_->DeclareCounter(kRestRequests, "Requests by verb and code");
    }
  }

  Result<Json> Get(const GroupVersionResource& gvr, const std::string& ns,
                   const std::string& name) override {
    return DoJson("GET", http::methods::GET, ResourcePath(gvr, ns, name), {}, nullptr, "", false);
  }

  Result<ObjectList> List(const GroupVersionResource& gvr, const std::string& ns,
                          const ListOptions& opts) override {
    Query q;
    AddIf(&q, "labelSelector", opts.label_selector);
    AddIf(&q, "fieldSelector", opts.field_selector);
    if (opts.limit > 0) q.emplace_back("limit", std::to_string(opts.limit));
    AddIf(&q, "continue", opts.continue_token);
    AddIf(&q, "resourceVersion", opts.resource_version);
    auto r = DoJson("LIST", http::methods::GET, ResourcePath(gvr, ns, ""), q, nullptr, "", false);
    if (!r.ok()) return r.status();
    return ParseList(gvr, *r);
  }

  Result<Json> Create(const GroupVersionResource& gvr, const std::string& ns, const Json& obj,
                      const WriteOptions& opts) override {
    std::string obj_ns = NamespaceOf(obj).empty() ? ns : NamespaceOf(obj);
    return DoJson("POST", http::methods::POST, ResourcePath(gvr, obj_ns, ""), WriteQuery(opts),
                  &obj, "application/json", true);
  }

  Result<Json> Update(const GroupVersionResource& gvr, const Json& obj,
                      const WriteOptions& opts) override {
    return DoJson("PUT", http::methods::PUT, ResourcePath(gvr, NamespaceOf(obj), NameOf(obj)),
                  WriteQuery(opts), &obj, "application/json", false);
  }

  Result<Json> UpdateStatus(const GroupVersionResource& gvr, const Json& obj,
                            const WriteOptions& opts) override {
    return DoJson("PUT", http::methods::PUT,
                  ResourcePath(gvr, NamespaceOf(obj), NameOf(obj), "status"), WriteQuery(opts),
                  &obj, "application/json", false);
  }

  Result<Json> Patch(const GroupVersionResource& gvr, const std::string& ns,
                     const std::string& name, PatchType type, const Json& patch,
                     const WriteOptions& opts, const std::string& subresource) override {
    WriteOptions wo = opts;
    if (type == PatchType::kApply && wo.field_manager.empty()) wo.field_manager = cfg_.user_agent;
    Query q = WriteQuery(wo);
    if (type == PatchType::kApply && wo.force) q.emplace_back("force", "true");
    return DoJson("PATCH", http::methods::PATCH, ResourcePath(gvr, ns, name, subresource), q,
                  &patch, PatchContentType(type), false);
  }

  Status Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                const DeleteOptions& opts) override {
    Json body = DeleteBody(opts);
    return DoJson("DELETE", http::methods::DEL, ResourcePath(gvr, ns, name), {}, &body,
                  "application/json", false)
        .status();
  }

  Result<std::string> GetPodLog(const std::string& ns, const std::string& name,
                                const PodLogOptions& opts) override {
    Query q;
    AddIf(&q, "container", opts.container);
    if (opts.tail_lines > 0) q.emplace_back("tailLines", std::to_string(opts.tail_lines));
    if (opts.limit_bytes > 0) q.emplace_back("limitBytes", std::to_string(opts.limit_bytes));
    if (opts.previous) q.emplace_back("previous", "true");
    return DoRaw("GET", http::methods::GET, ResourcePath(resources::kPods, ns, name, "log"), q,
                 nullptr, "", false);
  }

  Status Watch(const GroupVersionResource& gvr, const std::string& ns, const WatchOptions& opts,
               const WatchHandler& handler, std::stop_token stop) override;

  int64_t request_count() const override { return requests_.load(); }

 private:
  using Query = std::vector<std::pair<std::string, std::string>>;
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
  void Record(const char* verb, int code, SteadyTime start);
  Result<std::string> DoRaw(const char* verb, const http::method& method, const std::string& path,
                            const Query& query, const Json* body, const std::string& ctype,
                            bool is_create);
  Result<Json> DoJson(const char* verb, const http::method& method, const std::string& path,
                      const Query& query, const Json* body, const std::string& ctype,
                      bool is_create);

  RestConfig cfg_;
  TimeSource* time_;
  MetricsRegistry* metrics_;
  client::http_client client_;
  client::http_client watch_client_;
  std::mutex bucket_mu_;
  TokenBucket bucket_;  // guarded by bucket_mu_
  std::atomic<int64_t> requests_{0};
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
  auto token = CurrentToken(cfg_);
  if (!token.ok()) {
    *status = token.status();
  } else if (!token->empty()) {
    req.headers().add("Authorization", "Bearer " + *token);
  }
  return req;
}

void RestKubeClientImpl::RateLimit() {
  Millis wait;
  {
    std::lock_guard lock(bucket_mu_);
    wait = bucket_.Reserve(time_->Now());
  }
  if (wait > Millis(0)) time_->SleepFor(wait, std::stop_token());
}

void RestKubeClientImpl::Record(const char* verb, int code, SteadyTime start) {
  if (metrics_ == nullptr) return;
  double secs = std::chrono::duration<double>(time_->Now() - start).count();
  Labels labels{{"verb", verb}, {"code", code == 0 ? "<error>" : std::to_string(code)}};
  metrics_->Observe(kRestLatency, labels, secs);
  metrics_->Inc(kRestRequests, labels);
}

Result<std::string> RestKubeClientImpl::DoRaw(const char* verb, const http::method& method,
                                              const std::string& path, const Query& query,
                                              const Json* body, const std::string& ctype,
                                              bool is_create) {
  RateLimit();
  requests_++;
  Status st;
  http::http_request req = MakeRequest(method, path, query, &st);
  if (!st.ok()) return st;
  // Replace invalid UTF-8 rather than throw: log text ends up in status fields.
  if (body != nullptr) {
    req.set_body(body->dump(-1, ' ', false, Json::error_handler_t::replace), ctype);
  }
  SteadyTime start = time_->Now();
  try {
    http::http_response resp = client_.request(req).get();
    std::string text = resp.extract_utf8string(true).get();
    int code = resp.status_code();
    Record(verb, code, start);
    if (code >= 200 && code < 300) return text;
    return StatusFromResponse(code, text, is_create);
  } catch (const std::exception& e) {
    Record(verb, 0, start);
    return TransportError(e, verb + std::string(" ") + path);
  }
}

Result<Json> RestKubeClientImpl::DoJson(const char* verb, const http::method& method,
                                        const std::string& path, const Query& query,
                                        const Json* body, const std::string& ctype,
                                        bool is_create) {
  auto text = DoRaw(verb, method, path, query, body, ctype, is_create);
  if (!text.ok()) return text.status();
  try {
    return Json::parse(*text);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("response of ") + path + " is not JSON: " + e.what());
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
    Record("WATCH", code, start);
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
