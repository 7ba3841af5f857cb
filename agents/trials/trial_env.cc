#include "agents/trials/trial_env.h"

namespace paratune {

std::vector<TrialEnvVar> TrialEnvironment(const CampaignSpec& spec, const std::string& trial,
                                          int64_t iteration, const Config& config) {
  std::vector<TrialEnvVar> env;
  env.push_back({"PARATUNE_CAMPAIGN", spec.name});
  env.push_back({"PARATUNE_TRIAL", trial});
  env.push_back({"PARATUNE_ITERATION", std::to_string(iteration)});
  env.push_back({"PARATUNE_WORKLOAD", WorkloadJson(spec).dump()});
  for (const auto& [key, value] : config) {
    env.push_back({"PARATUNE_" + ParameterEnvName(key), value.ToString()});
  }
  return env;
}

std::vector<TrialEnvVar> LocalRendezvousEnvironment(int master_port, int jax_port,
                                                    int64_t procs_per_node) {
  const std::string loopback = "127.0.0.1";
  const std::string procs = std::to_string(procs_per_node < 1 ? 1 : procs_per_node);
  return {{"NODE_RANK", "0"},
          {"NNODES", "1"},
          {"WORLD_SIZE", procs},
          {"NPROC_PER_NODE", procs},
          {"MASTER_ADDR", loopback},
          {"MASTER_PORT", std::to_string(master_port)},
          {"JAX_COORDINATOR_ADDRESS", loopback + ":" + std::to_string(jax_port)},
          {"JAX_COORDINATOR_IP", loopback},
          {"JAX_COORDINATOR_PORT", std::to_string(jax_port)},
          {"JAX_PROCESS_COUNT", "1"},
          {"JAX_PROCESS_ID", "0"}};
}

std::string ExpandKubernetesVars(std::string_view s,
                                 const std::map<std::string, std::string>& env) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '$' || i + 1 >= s.size()) {
      out += s[i];
    } else if (s[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (s[i + 1] == '(') {
      const size_t close = s.find(')', i + 2);
      if (close == std::string_view::npos) {
        out.append(s.substr(i));
        break;
      }
      auto it = env.find(std::string(s.substr(i + 2, close - i - 2)));
      if (it != env.end()) {
        out += it->second;
      } else {
        out.append(s.substr(i, close - i + 1));
      }
      i = close;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace paratune
