#include "operator/probe_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace paratune::kube {

HttpProbeServer::HttpProbeServer(std::map<std::string, Handler> routes)
    : routes_(std::move(routes)) {}

HttpProbeServer::~HttpProbeServer() { Stop(); }

Status HttpProbeServer::Start(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return Status::Invalid("probe address: want host:port");
  std::string host = address.substr(0, colon);
  int port = std::atoi(address.substr(colon + 1).c_str());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (host.empty() || host == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &addr.sin_addr) !=
             1) {
    return Status::Invalid("probe address: bad host \"" + host + "\"");
  }
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 16) != 0) {
    std::string err = std::strerror(errno);
    close(listen_fd_);
    listen_fd_ = -1;
    return Status::Unavailable("probe server: cannot listen on " + address + ": " + err);
  }
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_.store(ntohs(addr.sin_port));
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void HttpProbeServer::Stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

void HttpProbeServer::Serve() {
  while (!stopping_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    HandleConnection(fd);
    close(fd);
  }
}

void HttpProbeServer::HandleConnection(int fd) {
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string req;
  char buf[2048];
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < 16384) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    req.append(buf, static_cast<size_t>(n));
  }
  ProbeResponse resp{404, "not found\n"};
  size_t sp1 = req.find(' '), sp2 = req.find(' ', sp1 + 1);
  if (sp1 != std::string::npos && sp2 != std::string::npos) {
    std::string path = req.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    auto it = routes_.find(path);
    if (it != routes_.end()) resp = it->second();
  }
  std::string out = "HTTP/1.0 " + std::to_string(resp.code) +
                    (resp.code == 200 ? " OK" : " Error") +
                    "\r\nContent-Type: " + resp.content_type +
                    "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                    "\r\nConnection: close\r\n\r\n" + resp.body;
  size_t sent = 0;
  while (sent < out.size()) {
    ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace paratune::kube
