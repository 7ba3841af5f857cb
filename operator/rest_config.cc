#include "operator/rest_config.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/base64.h"
#include "base/yaml.h"

namespace paratune::kube {

namespace {

using Json = nlohmann::json;

Result<std::string> ReadFile(const std::string& path, const std::string& field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(field + ": cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reads `name-data` (base64) or `name` (a file path relative to the kubeconfig's directory).
Status ReadPem(const Json& section, const std::string& name, const std::string& base_dir,
               const std::string& where, std::string* out) {
  if (section.contains(name + "-data") && section[name + "-data"].is_string()) {
    auto v = Base64Decode(section[name + "-data"].get<std::string>());
    if (!v.ok()) return v.status().WithPrefix(where + "." + name + "-data");
    *out = *v;
  } else if (section.contains(name) && section[name].is_string()) {
    std::string path = section[name].get<std::string>();
    if (!path.empty() && path[0] != '/') path = base_dir + "/" + path;
    auto v = ReadFile(path, where + "." + name);
    if (!v.ok()) return v.status();
    *out = *v;
  }
  return Status::Ok();
}

const Json* FindNamed(const Json& doc, const std::string& list, const std::string& name) {
  if (!doc.contains(list) || !doc[list].is_array()) return nullptr;
  for (const Json& e : doc[list]) {
    if (e.value("name", "") == name) return &e;
  }
  return nullptr;
}

Status ApplyUser(const Json& user, const std::string& base_dir, const std::string& where,
                 RestConfig* cfg) {
  cfg->token = user.value("token", "");
  if (user.contains("tokenFile")) {
    cfg->token_file = user["tokenFile"].get<std::string>();
  }
  PARATUNE_RETURN_IF_ERROR(
      ReadPem(user, "client-certificate", base_dir, where, &cfg->client_cert_pem));
  PARATUNE_RETURN_IF_ERROR(ReadPem(user, "client-key", base_dir, where, &cfg->client_key_pem));
  if (user.contains("exec") && user["exec"].is_object()) {
    const Json& exec = user["exec"];
    cfg->exec.command = exec.value("command", "");
    if (cfg->exec.command.empty()) return Status::Invalid(where + ".exec.command: required");
    for (const Json& a : exec.value("args", Json::array())) cfg->exec.args.push_back(a);
    for (const Json& e : exec.value("env", Json::array())) {
      cfg->exec.env.emplace_back(e.value("name", ""), e.value("value", ""));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<RestConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadFile(path, "kubeconfig");
  if (!text.ok()) return text.status();
  auto doc = YamlToJson(*text);
  if (!doc.ok()) return Status(doc.status().code(), path + ": " + doc.status().message());
  if (!doc->is_object()) return Status::Invalid(path + ": not a kubeconfig (a mapping)");
  std::string ctx_name = context.empty() ? doc->value("current-context", "") : context;
  if (ctx_name.empty()) return Status::Invalid(path + ": current-context: not set");
  const Json* ctx = FindNamed(*doc, "contexts", ctx_name);
  if (ctx == nullptr || !ctx->contains("context")) {
    return Status::NotFound(path + ": contexts: no context named \"" + ctx_name + "\"");
  }
  std::string cluster_name = (*ctx)["context"].value("cluster", "");
  std::string user_name = (*ctx)["context"].value("user", "");
  const Json* cluster = FindNamed(*doc, "clusters", cluster_name);
  if (cluster == nullptr || !cluster->contains("cluster")) {
    return Status::NotFound(path + ": clusters: no cluster named \"" + cluster_name + "\"");
  }
  std::string base_dir =
      path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  RestConfig cfg;
  const Json& c = (*cluster)["cluster"];
  cfg.server = c.value("server", "");
  if (cfg.server.empty())
    return Status::Invalid(path + ": clusters[" + cluster_name + "].server: required");
  cfg.insecure_skip_tls_verify = c.value("insecure-skip-tls-verify", false);
  PARATUNE_RETURN_IF_ERROR(
      ReadPem(c, "certificate-authority", base_dir, "clusters[" + cluster_name + "]", &cfg.ca_pem));
  if (!user_name.empty()) {
    const Json* user = FindNamed(*doc, "users", user_name);
    if (user == nullptr) {
      return Status::NotFound(path + ": users: no user named \"" + user_name + "\"");
    }
    if (user->contains("user") && (*user)["user"].is_object()) {
      PARATUNE_RETURN_IF_ERROR(
          ApplyUser((*user)["user"], base_dir, "users[" + user_name + "]", &cfg));
    }
  }
  return cfg;
}

Result<RestConfig> InClusterConfig(const ConfigEnvironment& env, const std::string& sa_dir) {
  if (env.service_host.empty() || env.service_port.empty()) {
    return Status::NotFound("in-cluster: KUBERNETES_SERVICE_HOST/PORT not set");
  }
  RestConfig cfg;
  std::string h = env.service_host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  cfg.server = "https://" + h + ":" + env.service_port;
  cfg.token_file = sa_dir + "/token";
  auto token = ReadFile(cfg.token_file, "in-cluster token");
  if (!token.ok()) return token.status();
  auto ca = ReadFile(sa_dir + "/ca.crt", "in-cluster ca.crt");
  if (ca.ok()) cfg.ca_pem = *ca;
  return cfg;
}

Result<RestConfig> DefaultConfig(const ConfigEnvironment& env) {
  if (!env.kubeconfig.empty()) {
    return LoadKubeconfig(env.kubeconfig.substr(0, env.kubeconfig.find(':')));
  }
  if (!env.home.empty()) {
    std::string path = env.home + "/.kube/config";
    if (std::ifstream(path)) return LoadKubeconfig(path);
  }
  return InClusterConfig(env);
}

namespace {
Result<std::string> RunExec(const ExecCredential& exec) {
  std::string cmd;
  for (const auto& [k, v] : exec.env) cmd += k + "='" + v + "' ";
  cmd += "'" + exec.command + "'";
  for (const std::string& a : exec.args) cmd += " '" + a + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return Status::Unavailable("exec plugin: cannot run " + exec.command);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  if (rc != 0)
    return Status(StatusCode::kUnauthenticated, "exec plugin " + exec.command + " failed");
  try {
    Json cred = Json::parse(out);
    return cred.at("status").at("token").get<std::string>();
  } catch (const std::exception& e) {
    return Status(StatusCode::kUnauthenticated,
                  "exec plugin " + exec.command + ": status.token: " + e.what());
  }
}
}  // namespace

Result<std::string> TokenSource::Current() {
  const RestConfig& cfg = cfg_;
  if (!cfg.exec.command.empty()) {
    std::lock_guard lock(mu_);
    if (exec_token_.empty() || clock_->Now() > exec_expiry_) {
      auto token = RunExec(cfg.exec);
      if (!token.ok()) return token;
      exec_token_ = *token;
      exec_expiry_ = clock_->Now() + kExecTokenLifetime;
    }
    return exec_token_;
  }
  if (!cfg.token_file.empty()) {
    auto t = ReadFile(cfg.token_file, "tokenFile");
    if (!t.ok()) return Status(StatusCode::kUnauthenticated, t.status().message());
    std::string token = *t;
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    return token;
  }
  return cfg.token;
}

}  // namespace paratune::kube
