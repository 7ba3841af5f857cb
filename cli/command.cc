#include "cli/command.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>

namespace paratune::cli {

Result<Args> Args::Parse(const std::vector<std::string>& argv,
                         const std::vector<std::string>& switches) {
  Args a;
  auto is_switch = [&](const std::string& f) {
    return std::find(switches.begin(), switches.end(), f) != switches.end();
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (s.size() < 2 || s[0] != '-' || s == "--") {
      a.positional_.push_back(s);
      continue;
    }
    std::string flag = s;
    std::string value;
    bool has_value = false;
    if (auto eq = s.find('='); eq != std::string::npos && s.rfind("--", 0) == 0) {
      flag = s.substr(0, eq);
      value = s.substr(eq + 1);
      has_value = true;
    }
    if (flag == "--output") flag = "-o";
    if (flag == "--file") flag = "-f";
    if (!has_value && !is_switch(flag)) {
      if (i + 1 >= argv.size()) return Status::Invalid(flag + ": needs a value");
      value = argv[++i];
    }
    a.values_[flag].push_back(is_switch(flag) && !has_value ? "true" : value);
  }
  return a;
}

std::optional<std::string> Args::Get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::string Args::GetOr(const std::string& flag, const std::string& fallback) const {
  return Get(flag).value_or(fallback);
}

const std::vector<std::string>& Args::GetAll(const std::string& flag) const {
  static const std::vector<std::string> kEmpty;
  auto it = values_.find(flag);
  return it == values_.end() ? kEmpty : it->second;
}

std::vector<std::string> Args::FlagNames() const {
  std::vector<std::string> names;
  for (const auto& [flag, values] : values_) names.push_back(flag);
  return names;
}

Status CheckFlags(const Command& command, const Args& args) {
  auto declared = [&](const std::string& flag) {
    return flag == "-o" ||
           std::find(command.flags.begin(), command.flags.end(), flag) != command.flags.end() ||
           std::find(command.switches.begin(), command.switches.end(), flag) !=
               command.switches.end();
  };
  for (const std::string& flag : args.FlagNames()) {
    if (!declared(flag)) return Status::Invalid("unknown flag " + flag);
  }
  return Status::Ok();
}

std::string Usage(const Command& command) {
  std::string out = "usage: paratune " + command.name + " [-o json]";
  for (const auto& f : command.flags) out += " [" + f + " VALUE]";
  for (const auto& f : command.switches) out += " [" + f + "]";
  return out + "\n  " + command.summary;
}

bool Args::JsonOutput() const { return GetOr("-o", "") == "json"; }

Result<int64_t> Args::GetInt(const std::string& flag, int64_t fallback, int64_t min,
                             int64_t max) const {
  auto v = Get(flag);
  if (!v) return fallback;
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || ptr != v->data() + v->size()) {
    return Status::Invalid(flag + ": must be an integer, got \"" + *v + "\"");
  }
  if (out < min || out > max) {
    return Status::Invalid(flag + ": must be between " + std::to_string(min) + " and " +
                           std::to_string(max));
  }
  return out;
}

std::map<std::string, Command>& CommandRegistry() {
  static std::map<std::string, Command> registry;
  return registry;
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : fallback;
}

int ReportError(const std::string& command, const Status& status) {
  std::cerr << "paratune " << command << ": " << status.message() << "\n";
  bool bad_input =
      status.code() == StatusCode::kInvalidArgument || status.code() == StatusCode::kNotFound;
  return bad_input ? kExitBadInput : kExitFailure;
}

Status ApplyConfigSets(const std::vector<std::string>& sets, Config* config) {
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Invalid("--set " + s + ": expected key=value");
    }
    const ParamInfo* info = FindParameter(s.substr(0, eq));
    if (info == nullptr) {
      return Status::Invalid("--set " + s + ": unknown parameter \"" + s.substr(0, eq) + "\"");
    }
    auto value = ParseParamText(*info, s.substr(eq + 1), "--set " + s);
    if (!value.ok()) return value.status();
    (*config)[info->name] = *value;
  }
  return Status::Ok();
}

}  // namespace paratune::cli
