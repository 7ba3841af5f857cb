#include "agents/engines/engine_factory.h"

#include <fstream>
#include <sstream>

#include "agents/engines/baseline_engines.h"
#include "agents/engines/builtin_engine.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/llm/openai_client.h"
#include "agents/llm/replay_client.h"
#include "base/strings.h"

namespace paratune {

namespace {

Result<std::unique_ptr<llm::ChatClient>> ReplayClientFrom(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("--llm-replay: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Invalid("--llm-replay: " + path + " is not JSON");
  auto log = RecordedReplies(j, "--llm-replay");
  if (!log.ok()) return log.status();
  return std::unique_ptr<llm::ChatClient>(new llm::ReplayChatClient(std::move(*log)));
}

std::shared_ptr<const KnowledgeBase> DefaultKnowledge(const std::string& dir) {
  auto kb = KnowledgeBase::LoadDefault(dir);
  if (!kb.ok()) kb = KnowledgeBase::LoadEmbedded();
  return kb.ok() ? std::shared_ptr<const KnowledgeBase>(std::move(*kb)) : nullptr;
}

Result<std::unique_ptr<StrategyEngine>> MakeLlmEngine(const EngineFactoryOptions& o,
                                                      const CampaignSpec& spec, MessagePool* pool) {
  const LlmEngineMode mode =
      spec.agents.engine == "llm" ? LlmEngineMode::kLlm : LlmEngineMode::kHybrid;
  LlmEngineDeps deps;
  deps.pool = pool;
  deps.seed = o.seed;
  if (!o.overrides.replay_from.empty()) {
    auto replay = ReplayClientFrom(o.overrides.replay_from);
    if (!replay.ok()) return replay.status();
    deps.client = std::move(*replay);
    return std::unique_ptr<StrategyEngine>(new LlmEngine(mode, std::move(deps)));
  }
  if (o.endpoints) {
    PARATUNE_RETURN_IF_ERROR(llm::CheckEndpointAllowed(spec.agents.llm_endpoint, *o.endpoints));
  }
  std::string key;
  if (o.api_key) {
    auto k = o.api_key(spec);
    if (!k.ok()) return k.status();
    key = std::move(*k);
  }
  auto cfg = LlmEngineConfigFor(
      spec, o.overrides, key, o.overrides.api_key.empty() ? nullptr : o.overrides.api_key.c_str());
  if (!cfg.ok()) return cfg.status();
  llm::ChatClientOptions co = cfg->ChatOptions();
  if (o.max_response_bytes) co.max_response_bytes = *o.max_response_bytes;
  co.include_error_body = o.include_error_body;
  co.clock = o.clock;
  auto chat = llm::OpenAiChatClient::Create(co);
  if (!chat.ok()) return chat.status();
  deps.client = std::move(*chat);
  deps.budget = cfg->budget;
  if (!cfg->api_key.empty()) deps.secrets.push_back(cfg->api_key);
  deps.knowledge = o.knowledge ? o.knowledge(spec) : DefaultKnowledge(o.overrides.knowledge_dir);
  return std::unique_ptr<StrategyEngine>(new LlmEngine(mode, std::move(deps)));
}

}  // namespace

EngineFactory MakeEngineFactory(EngineFactoryOptions options) {
  return [o = std::move(options)](const CampaignSpec& spec,
                                  MessagePool* pool) -> Result<std::unique_ptr<StrategyEngine>> {
    if (spec.agents.engine == "llm" || spec.agents.engine == "hybrid") {
      return MakeLlmEngine(o, spec, pool);
    }
    EngineOptions eo;
    eo.spec = &spec;
    eo.seed = o.seed;
    eo.pool = pool;
    return CreateStrategyEngine(spec.agents.engine, eo);
  };
}

CampaignSpec WithEngine(const CampaignSpec& spec, const std::string& name) {
  CampaignSpec out = spec;
  out.agents.engine = name;
  return out;
}

Result<std::unique_ptr<StrategyEngine>> CreateStrategyEngine(const std::string& name,
                                                             const EngineOptions& options) {
  if (name == "builtin") return std::unique_ptr<StrategyEngine>(new BuiltinEngine(options.seed));
  if (name == "random") {
    return std::unique_ptr<StrategyEngine>(new RandomSearchEngine(options.seed));
  }
  if (name == "grid") return std::unique_ptr<StrategyEngine>(new GridSearchEngine());
  if (name == "greedy") return std::unique_ptr<StrategyEngine>(new GreedyEngine());
  if (name == "llm" || name == "hybrid") {
    return Status::Invalid("strategy: engine \"" + name +
                           "\" needs a model client: build it with MakeEngineFactory "
                           "(agents/engines/engine_factory.h)");
  }
  return Status::Invalid("strategy: unknown engine \"" + name +
                         "\" (known: " + Join(StrategyEngineNames(), ", ") + ")");
}

std::vector<std::string> StrategyEngineNames() {
  return {"builtin", "greedy", "grid", "hybrid", "llm", "random"};
}

}  // namespace paratune
