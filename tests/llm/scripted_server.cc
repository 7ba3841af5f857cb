#include "scripted_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace paratune::llm::testing {

ScriptedReply ScriptedReply::Chat(const std::string& text, int prompt_tokens,
                                  int completion_tokens) {
  nlohmann::json body = {{"id", "chatcmpl-test"},
                         {"object", "chat.completion"},
                         {"model", "scripted"},
                         {"choices",
                          {{{"index", 0},
                            {"message", {{"role", "assistant"}, {"content", text}}},
                            {"finish_reason", "stop"}}}},
                         {"usage",
                          {{"prompt_tokens", prompt_tokens},
                           {"completion_tokens", completion_tokens},
                           {"total_tokens", prompt_tokens + completion_tokens}}}};
  return {200, body.dump(), {}, std::chrono::milliseconds(0)};
}

ScriptedReply ScriptedReply::Error(int status, const std::string& message,
                                   const std::string& retry_after) {
  ScriptedReply r{status, nlohmann::json{{"error", {{"message", message}}}}.dump(), {}, {}};
  if (!retry_after.empty()) r.headers.push_back({"Retry-After", retry_after});
  return r;
}

std::unique_ptr<ScriptedServer> ScriptedServer::Start() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return nullptr;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<ScriptedServer> s(new ScriptedServer(fd, ntohs(addr.sin_port)));
  s->thread_ = std::thread([raw = s.get()] { raw->Serve(); });
  return s;
}

ScriptedServer::ScriptedServer(int fd, int port) : fd_(fd), port_(port) {}

ScriptedServer::~ScriptedServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
}

void ScriptedServer::Push(ScriptedReply reply) {
  std::lock_guard<std::mutex> lock(mu_);
  script_.push_back(std::move(reply));
}

void ScriptedServer::SetHandler(Handler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(handler);
}

std::vector<ReceivedRequest> ScriptedServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

void ScriptedServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int conn = ::accept(fd_, nullptr, nullptr);
    if (conn < 0) continue;
    HandleConnection(conn);
    ::close(conn);
  }
}

namespace {

// Reads one request (headers + Content-Length body); false on a closed or broken connection.
bool ReadRequest(int conn, ReceivedRequest& req) {
  std::string data;
  char buf[8192];
  size_t header_end = std::string::npos;
  size_t content_length = 0;
  for (;;) {
    if (header_end != std::string::npos && data.size() >= header_end + 4 + content_length) break;
    ssize_t n = ::recv(conn, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    data.append(buf, static_cast<size_t>(n));
    if (header_end == std::string::npos &&
        (header_end = data.find("\r\n\r\n")) != std::string::npos) {
      size_t line_end = data.find("\r\n");
      std::string first = data.substr(0, line_end);
      req.method = first.substr(0, first.find(' '));
      req.path = first.substr(first.find(' ') + 1);
      req.path = req.path.substr(0, req.path.find(' '));
      size_t pos = line_end + 2;
      while (pos < header_end) {
        size_t e = data.find("\r\n", pos);
        std::string line = data.substr(pos, e - pos);
        size_t colon = line.find(':');
        if (colon != std::string::npos) {
          std::string name = line.substr(0, colon);
          std::transform(name.begin(), name.end(), name.begin(), ::tolower);
          std::string value = line.substr(colon + 1);
          value.erase(0, value.find_first_not_of(' '));
          req.headers[name] = value;
        }
        pos = e + 2;
      }
      if (req.headers.count("content-length")) {
        content_length = std::stoul(req.headers["content-length"]);
      }
    }
  }
  req.body = data.substr(header_end + 4, content_length);
  return true;
}

}  // namespace

void ScriptedServer::HandleConnection(int conn) {
  ReceivedRequest req;
  if (!ReadRequest(conn, req)) return;
  ScriptedReply reply;
  {
    std::lock_guard<std::mutex> lock(mu_);
    received_.push_back(req);
    if (!script_.empty()) {
      reply = script_.front();
      script_.pop_front();
    } else if (handler_) {
      Handler h = handler_;
      reply = h(req);
    } else {
      reply = ScriptedReply::Error(500, "no scripted reply left");
    }
  }
  auto deadline = std::chrono::steady_clock::now() + reply.delay;
  while (!stop_ && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " Scripted\r\n" +
                    "Content-Type: application/json\r\nConnection: close\r\n" +
                    "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
  for (const auto& [k, v] : reply.headers) out += k + ": " + v + "\r\n";
  out += "\r\n" + reply.body;
  size_t sent = 0;
  while (sent < out.size()) {
    ssize_t n = ::send(conn, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace paratune::llm::testing
