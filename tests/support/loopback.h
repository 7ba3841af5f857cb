// Loopback TCP helpers for the tests that run servers on this machine (the local control plane,
// the simulated kubelet's log endpoint, the operator's probe server). Header-only: each test
// binary includes it.
#ifndef PARATUNE_TESTS_SUPPORT_LOOPBACK_H_
#define PARATUNE_TESTS_SUPPORT_LOOPBACK_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace paratune::testing {

inline sockaddr_in LoopbackAddress(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// A port on 127.0.0.1 that was free a moment ago; -1 when none could be had.
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = LoopbackAddress(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// A TCP connection to 127.0.0.1:port (the caller closes it); -1 when refused.
inline int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = LoopbackAddress(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace paratune::testing

#endif  // PARATUNE_TESTS_SUPPORT_LOOPBACK_H_
