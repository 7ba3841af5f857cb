// A scripted OpenAI-compatible HTTP server for tests: binds 127.0.0.1 on a free port, answers
// each POST with the next scripted reply (or a handler's), and records what it received. One
// connection at a time, "Connection: close" on every reply. Test-only.
#ifndef PARATUNE_TESTS_LLM_SCRIPTED_SERVER_H_
#define PARATUNE_TESTS_LLM_SCRIPTED_SERVER_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace paratune::llm::testing {

struct ScriptedReply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds delay{0};  // before answering (a slow model)

  // A well-formed chat-completions reply carrying `text` and usage.
  static ScriptedReply Chat(const std::string& text, int prompt_tokens = 120,
                            int completion_tokens = 40);
  static ScriptedReply Error(int status, const std::string& message,
                             const std::string& retry_after = "");
};

struct ReceivedRequest {
  std::string method, path;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class ScriptedServer {
 public:
  using Handler = std::function<ScriptedReply(const ReceivedRequest&)>;
  // Binds and starts serving; nullptr when the socket cannot be bound.
  static std::unique_ptr<ScriptedServer> Start();
  ~ScriptedServer();

  // Replies are used in order; when none is queued the handler answers (500 when none).
  void Push(ScriptedReply reply);
  void SetHandler(Handler handler);
  std::vector<ReceivedRequest> requests() const;
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

 private:
  ScriptedServer(int fd, int port);
  void Serve();
  void HandleConnection(int conn);

  int fd_;
  int port_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::deque<ScriptedReply> script_;       // guarded by mu_
  Handler handler_;                        // guarded by mu_
  std::vector<ReceivedRequest> received_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace paratune::llm::testing

#endif  // PARATUNE_TESTS_LLM_SCRIPTED_SERVER_H_
