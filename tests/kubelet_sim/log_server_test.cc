// The simulated kubelet's /containerLogs endpoint (hack/kubelet-sim/log_server.h) serves reads
// concurrently, as a kubelet does. It used to serve one connection at a time: a client that
// connected and never spoke held every other log read of every simulated node for its 5 s socket
// timeout, and at 200 campaigns a log read waited 3.3 s at the median (bench/RESULTS.md).
#include "hack/kubelet-sim/log_server.h"

// cpprest's U() macro would clash with GoogleTest's templates.
#define _TURN_OFF_PLATFORM_STRING

#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/loopback.h"

namespace paratune::kubelet {
namespace {

namespace fs = std::filesystem;
using paratune::testing::ConnectLoopback;
using paratune::testing::FreePort;
using web::http::methods;
using web::http::client::http_client;
using web::http::client::http_client_config;

TEST(KubeletLogServerTest, AStalledConnectionDoesNotHoldUpOtherLogReads) {
  char tmpl[] = "/tmp/paratune-logserver-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  const std::string gen =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(gen.c_str()), 0) << "the openssl command makes the test's certificate";
  std::ofstream(dir / "trainer.log") << "line 1\nline 2\nline 3\nline 4\nline 5\n";
  LogServer server([&](const std::string& ns, const std::string& pod, const std::string& c) {
    return ns == "ns" && pod == "trial-0" && c == "trainer" ? (dir / "trainer.log").string()
                                                            : std::string();
  });
  const int port = FreePort();
  ASSERT_GT(port, 0);
  ASSERT_TRUE(server.Start(port, cert, key).ok());
  const int stalled = ConnectLoopback(port);  // a reader that never sends a byte
  ASSERT_GE(stalled, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // accepted first

  http_client_config cfg;
  cfg.set_validate_certificates(false);
  cfg.set_timeout(std::chrono::seconds(20));
  http_client client("https://127.0.0.1:" + std::to_string(port), cfg);
  const auto start = std::chrono::steady_clock::now();
  auto resp = client.request(methods::GET, "/containerLogs/ns/trial-0/trainer?tailLines=2").get();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(resp.status_code(), 200);
  EXPECT_EQ(resp.extract_string().get(), "line 4\nline 5\n");
  // The stalled connection holds its worker for its 5 s receive timeout; one thread for all
  // made this read wait that long.
  EXPECT_LT(waited, std::chrono::seconds(3)) << "served while the stalled connection is open";
  auto missing = client.request(methods::GET, "/containerLogs/ns/other/trainer").get();
  EXPECT_EQ(missing.status_code(), 404);
  close(stalled);
  server.Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace paratune::kubelet
