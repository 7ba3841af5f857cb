#include "hack/kubelet-sim/log_server.h"

#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "hack/kubelet-sim/pod_runner.h"

namespace paratune::kubelet {

namespace {
std::string QueryValue(const std::string& query, const std::string& key) {
  std::istringstream ss(query);
  std::string kv;
  while (std::getline(ss, kv, '&')) {
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
  }
  return "";
}

std::string TailLines(const std::string& log, long n) {
  if (n <= 0) return log;
  size_t pos = log.size();
  if (pos > 0 && log[pos - 1] == '\n') --pos;
  long lines = 0;
  while (pos > 0) {
    if (log[pos - 1] == '\n' && ++lines == n) break;
    --pos;
  }
  return log.substr(pos);
}
}  // namespace

LogServer::~LogServer() { Stop(); }

Status LogServer::Start(int port, const std::string& cert_file, const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    SSL_CTX_free(ctx);
    return Status::Invalid("kubelet TLS: cannot load " + cert_file + " / " + key_file);
  }
  ctx_ = ctx;
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd_, 16) != 0) {
    return Status::Unavailable("kubelet log server: port " + std::to_string(port) + " busy");
  }
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void LogServer::Stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (ctx_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
  ctx_ = nullptr;
}

void LogServer::Serve() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = false;
  }
  std::vector<std::thread> workers;
  for (int i = 0; i < kWorkers; ++i) workers.emplace_back([this] { Work(); });
  while (!stopping_.load()) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (accepted_.size() < kMaxQueued) {
        accepted_.push_back(conn);
        conn = -1;
      }
    }
    if (conn >= 0) {
      close(conn);  // overloaded: the API server reports the error to the reader
      continue;
    }
    cv_.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers) w.join();
}

void LogServer::Work() {
  for (;;) {
    int conn = -1;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return draining_ || !accepted_.empty(); });
      if (accepted_.empty()) return;  // draining, nothing left
      conn = accepted_.front();
      accepted_.pop_front();
    }
    ServeConnection(conn);
  }
}

void LogServer::ServeConnection(int conn) {
  timeval tv{5, 0};
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));  // a reader that stalls
  SSL* ssl = SSL_new(static_cast<SSL_CTX*>(ctx_));
  SSL_set_fd(ssl, conn);
  if (SSL_accept(ssl) == 1) Handle(ssl);
  SSL_shutdown(ssl);
  SSL_free(ssl);
  close(conn);
}

void LogServer::Handle(void* handle) {
  SSL* ssl = static_cast<SSL*>(handle);
  std::string req;
  char buf[4096];
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < 65536) {
    int n = SSL_read(ssl, buf, sizeof(buf));
    if (n <= 0) break;
    req.append(buf, static_cast<size_t>(n));
  }
  std::string target = req.substr(req.find(' ') + 1);
  target = target.substr(0, target.find(' '));
  std::string path = target.substr(0, target.find('?'));
  std::string query =
      target.find('?') == std::string::npos ? "" : target.substr(target.find('?') + 1);
  int code = 404;
  std::string body = "not found\n";
  const std::string prefix = "/containerLogs/";
  if (path.rfind(prefix, 0) == 0) {
    std::vector<std::string> parts;
    std::istringstream ss(path.substr(prefix.size()));
    std::string part;
    while (std::getline(ss, part, '/')) parts.push_back(part);
    std::string file = parts.size() == 3 ? path_of_(parts[0], parts[1], parts[2]) : "";
    std::ifstream in(file, std::ios::binary);
    if (!file.empty() && in) {
      std::ostringstream content;
      content << in.rdbuf();
      body = TailLines(content.str(), std::atol(QueryValue(query, "tailLines").c_str()));
      long limit = std::atol(QueryValue(query, "limitBytes").c_str());
      if (limit > 0 && static_cast<long>(body.size()) > limit) body.resize(limit);
      code = 200;
    }
  }
  std::string out =
      "HTTP/1.1 " + std::to_string(code) + (code == 200 ? " OK" : " Not Found") +
      "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + body;
  SSL_write(ssl, out.data(), static_cast<int>(out.size()));
}

}  // namespace paratune::kubelet
