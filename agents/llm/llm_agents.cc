#include "agents/llm/llm_agents.h"

#include "agents/llm/redact.h"

namespace paratune::llm {
namespace {

using nlohmann::json;

// Calls the model for `role` and fills the exchange; returns the reply text on success.
std::optional<std::string> Call(ChatClient* client, Role role, const PromptContext& ctx,
                                RoleExchange& ex, Status& status) {
  ChatRequest req = BuildRoleRequest(role, ctx);
  ex.role = RoleName(role);
  ex.prompt = req.messages;
  auto reply = client->Complete(req);
  if (!reply.ok()) {
    status = reply.status();
    ex.error = Redact(reply.status().ToString(), ctx.secrets);
    ex.parse_result = "no reply: " + ex.error;
    return std::nullopt;
  }
  ex.reply = reply->text;
  ex.latency_ms = reply->latency.count();
  ex.prompt_tokens = reply->usage.prompt_tokens;
  ex.completion_tokens = reply->usage.completion_tokens;
  ex.http_status = reply->http_status;
  ex.attempts = reply->attempts;
  ex.structured = reply->structured;
  return reply->text;
}

template <typename T, typename Parser, typename Describe>
RoleOutcome<T> Run(ChatClient* client, Role role, const PromptContext& ctx, Parser parse,
                   Describe describe) {
  RoleOutcome<T> out;
  auto text = Call(client, role, ctx, out.exchange, out.status);
  if (!text) return out;
  auto parsed = parse(*text);
  if (!parsed.ok()) {
    out.status = parsed.status();
    out.exchange.parse_result = "rejected: " + parsed.status().message();
    return out;
  }
  out.exchange.ok = true;
  out.exchange.parse_result = "parsed: " + describe(*parsed);
  out.value = std::move(*parsed);
  return out;
}

}  // namespace

json RoleExchange::ToJson() const {
  json messages = json::array();
  for (const auto& m : prompt) messages.push_back({{"role", m.role}, {"content", m.content}});
  return {{"role", role},
          {"prompt", messages},
          {"reply", reply},
          {"ok", ok},
          {"parseResult", parse_result},
          {"error", error},
          {"latencyMs", latency_ms},
          {"promptTokens", prompt_tokens},
          {"completionTokens", completion_tokens},
          {"httpStatus", http_status},
          {"attempts", attempts},
          {"structured", structured}};
}

RoleExchange RoleExchange::FromJson(const json& j) {
  RoleExchange ex;
  if (!j.is_object()) return ex;
  ex.role = j.value("role", "");
  if (j.contains("prompt") && j["prompt"].is_array()) {
    for (const auto& m : j["prompt"]) {
      if (m.is_object()) ex.prompt.push_back({m.value("role", ""), m.value("content", "")});
    }
  }
  ex.reply = j.value("reply", "");
  ex.ok = j.value("ok", false);
  ex.parse_result = j.value("parseResult", "");
  ex.error = j.value("error", "");
  ex.latency_ms = j.value("latencyMs", int64_t{0});
  ex.prompt_tokens = j.value("promptTokens", int64_t{0});
  ex.completion_tokens = j.value("completionTokens", int64_t{0});
  ex.http_status = j.value("httpStatus", 0);
  ex.attempts = j.value("attempts", 0);
  ex.structured = j.value("structured", false);
  return ex;
}

std::vector<std::string> LlmAgents::DescribeChanges(const std::vector<SuggestedChange>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes) {
    std::string line = "Change " + c.parameter + " from " + (c.from.empty() ? "?" : c.from) +
                       " to " + c.to.ToString() + ".";
    if (!c.reason.empty()) line += " " + c.reason;
    out.push_back(line);
  }
  return out;
}

RoleOutcome<std::vector<SuggestedChange>> LlmAgents::Analyze(const PromptContext& ctx) {
  return Run<std::vector<SuggestedChange>>(
      client_, Role::kAnalyst, ctx, [](const std::string& t) { return ParseAnalystReply(t); },
      [](const std::vector<SuggestedChange>& v) {
        return std::to_string(v.size()) + " change(s), first: " + DescribeChanges(v)[0];
      });
}

RoleOutcome<Config> LlmAgents::Strategize(const PromptContext& ctx) {
  return Run<Config>(
      client_, Role::kStrategist, ctx, [](const std::string& t) { return ParseStrategistReply(t); },
      [](const Config& c) { return ConfigKey(c); });
}

RoleOutcome<FailureDiagnosis> LlmAgents::Diagnose(const PromptContext& ctx) {
  return Run<FailureDiagnosis>(
      client_, Role::kDiagnostician, ctx,
      [](const std::string& t) { return ParseDiagnosticianReply(t); },
      [](const FailureDiagnosis& d) { return d.category + ": " + d.summary; });
}

RoleOutcome<ProposerReply> LlmAgents::Propose(const PromptContext& ctx) {
  return Run<ProposerReply>(
      client_, Role::kProposer, ctx, [](const std::string& t) { return ParseProposerReply(t); },
      [](const ProposerReply& r) {
        std::string s = std::to_string(r.candidates.size()) + " candidate(s)";
        for (const auto& c : r.candidates) s += "; " + ConfigKey(c.config);
        if (!r.rejected.empty()) s += "; dropped: " + r.rejected[0];
        return s;
      });
}

}  // namespace paratune::llm
