#include "agents/llm/openai_client.h"

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>
#include <mutex>
#include <random>

#include "agents/llm/endpoint_policy.h"
#include "agents/llm/openai_wire.h"
#include "agents/llm/redact.h"
#include "base/tls_library.h"

namespace paratune::llm {

namespace http = web::http;

struct OpenAiChatClient::Impl {
  std::unique_ptr<http::client::http_client> client;
  std::mutex random_mu;
  std::mt19937_64 rng{std::random_device{}()};
};

// What one HTTP attempt produced: a status code and body, or a transport error.
struct OpenAiChatClient::Attempt {
  int http_status = 0;  // 0: no response (transport error)
  std::string body;
  std::string retry_after;
  bool timed_out = false;
  std::string transport_error;
  bool too_large = false;  // the body passed max_response_bytes (and was dropped)
};

namespace {

// Before main, before any TLS connection (base/tls_library.h).
[[maybe_unused]] const bool kTlsKeptUntilExit = [] {
  KeepTlsLibraryUntilExit();
  return true;
}();

bool IsHttpUrl(const std::string& url) {
  return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}

// Reads the reply body into *out, at most `limit` bytes: false (and *out cleared) when the
// server announces or sends more. Memory stays bounded by the limit plus one chunk.
bool ReadBounded(http::http_response& resp, size_t limit, std::string* out) {
  out->clear();
  const auto announced = resp.headers().content_length();
  if (announced > limit) return false;
  concurrency::streams::container_buffer<std::string> buf;
  auto body = resp.body();
  constexpr size_t kChunk = 64 << 10;
  for (;;) {
    const size_t n = body.read(buf, kChunk).get();
    if (n == 0) break;
    if (buf.collection().size() > limit) {
      out->clear();
      return false;
    }
  }
  *out = buf.collection();
  return true;
}

std::string ChatUrl(std::string endpoint) {
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  const std::string suffix = "/chat/completions";
  if (endpoint.size() < suffix.size() ||
      endpoint.compare(endpoint.size() - suffix.size(), suffix.size(), suffix) != 0) {
    endpoint += suffix;
  }
  return endpoint;
}

http::client::http_client_config ClientConfig(const ChatClientOptions& o) {
  http::client::http_client_config config;
  config.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(o.timeout));
  config.set_validate_certificates(!o.insecure_skip_verify);
  if (!o.ca_file.empty()) {
    std::string ca = o.ca_file;
    config.set_ssl_context_callback([ca](boost::asio::ssl::context& ctx) {
      boost::system::error_code ec;
      ctx.load_verify_file(ca, ec);  // a bad file leaves the system store; the handshake fails
    });
  }
  return config;
}

}  // namespace

OpenAiChatClient::OpenAiChatClient(ChatClientOptions options, std::string url,
                                   std::unique_ptr<Impl> impl)
    : options_(std::move(options)), url_(std::move(url)), impl_(std::move(impl)) {}

OpenAiChatClient::~OpenAiChatClient() = default;

Result<std::unique_ptr<OpenAiChatClient>> OpenAiChatClient::Create(ChatClientOptions options) {
  if (!IsHttpUrl(options.endpoint)) {
    return Status::Invalid("spec.agents.llm.endpoint: must be an http:// or https:// URL, got \"" +
                           Redact(options.endpoint, {options.api_key}) + "\"");
  }
  PARATUNE_RETURN_IF_ERROR(CheckKeyTransport(options.endpoint, !options.api_key.empty()));
  if (options.model.empty()) return Status::Invalid("spec.agents.llm.model: must be set");
  if (options.max_retries < 0) return Status::Invalid("llm max_retries: must be >= 0");
  if (options.timeout.count() <= 0) return Status::Invalid("llm timeout: must be > 0");
  std::string url = ChatUrl(options.endpoint);
  auto impl = std::make_unique<Impl>();
  try {
    impl->client = std::make_unique<http::client::http_client>(
        web::uri(utility::conversions::to_string_t(url)), ClientConfig(options));
  } catch (const std::exception& e) {
    return Status::Invalid("spec.agents.llm.endpoint: " + Redact(e.what(), {options.api_key}));
  }
  if (options.clock == nullptr) options.clock = RealTimeSource::Get();
  Impl* raw = impl.get();
  if (!options.random) {
    options.random = [raw] {
      std::lock_guard<std::mutex> lock(raw->random_mu);
      return std::uniform_real_distribution<double>(0.0, 1.0)(raw->rng);
    };
  }
  return std::unique_ptr<OpenAiChatClient>(
      new OpenAiChatClient(std::move(options), std::move(url), std::move(impl)));
}

OpenAiChatClient::Attempt OpenAiChatClient::Post(const ChatRequest& request, bool with_schema) {
  Attempt a;
  try {
    http::http_request req(http::methods::POST);
    if (!options_.api_key.empty()) {
      req.headers().add(U("Authorization"), U("Bearer ") + options_.api_key);
    }
    req.headers().add(U("Accept"), U("application/json"));
    req.set_body(BuildChatBody(request, options_.model, with_schema).dump(), "application/json");
    http::http_response resp = impl_->client->request(req).get();
    a.http_status = resp.status_code();
    if (resp.headers().has(U("Retry-After"))) a.retry_after = resp.headers()[U("Retry-After")];
    a.too_large = !ReadBounded(resp, options_.max_response_bytes, &a.body);
  } catch (const http::http_exception& e) {
    a.http_status = 0;
    a.timed_out = e.error_code() == std::errc::timed_out;
    a.transport_error = Redact(e.what(), {options_.api_key});
  } catch (const std::exception& e) {
    a.http_status = 0;
    a.transport_error = Redact(e.what(), {options_.api_key});
  }
  return a;
}

Result<ChatReply> OpenAiChatClient::Complete(const ChatRequest& request) {
  const auto start = options_.clock->Now();
  bool with_schema = request.json_schema.has_value() && !schema_unsupported_.load();
  Status last;
  int attempts = 0;
  for (int retry = 0; retry <= options_.max_retries; ++retry) {
    Attempt a = Post(request, with_schema);
    ++attempts;
    if (with_schema && RejectsStructuredOutput(a.http_status, a.body)) {
      schema_unsupported_ = true;  // ask once more, without the schema, at no retry cost
      with_schema = false;
      a = Post(request, with_schema);
      ++attempts;
    }
    if (a.too_large) {
      return Status(StatusCode::kResourceExhausted,
                    "LLM endpoint " + url_ + ": reply larger than " +
                        std::to_string(options_.max_response_bytes) + " bytes (HTTP " +
                        std::to_string(a.http_status) + ")");
    }
    if (a.http_status >= 200 && a.http_status < 300) {
      auto reply = ParseChatBody(a.body);
      if (!reply.ok()) return reply.status().WithPrefix("LLM endpoint " + url_);
      reply->latency =
          std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock->Now() - start);
      reply->http_status = a.http_status;
      reply->attempts = attempts;
      reply->structured = with_schema;
      return reply;
    }
    std::optional<std::chrono::milliseconds> server_delay;
    if (a.http_status == 0) {
      last = a.timed_out ? Status::Deadline("LLM call to " + url_ + " timed out after " +
                                            std::to_string(options_.timeout.count()) + " ms")
                         : Status::Unavailable("LLM endpoint " + url_ + ": " + a.transport_error);
      if (a.timed_out && !options_.retry_on_timeout) return last;
    } else {
      last =
          StatusForHttp(a.http_status, options_.include_error_body ? a.body : "", options_.api_key);
      if (!IsRetryableHttp(a.http_status)) return last;
      server_delay =
          ParseRetryAfter(a.retry_after, options_.clock->SystemNow(), options_.backoff_cap);
    }
    if (retry == options_.max_retries) break;
    options_.clock->SleepFor(server_delay.value_or(
        BackoffDelay(retry, options_.backoff_base, options_.backoff_cap, options_.random())));
  }
  return Status(last.code(), last.message() + " (after " + std::to_string(attempts) + " attempts)");
}

}  // namespace paratune::llm
