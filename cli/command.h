// The paratune CLI's subcommands. Each lives in its own cli/<name>.cc and registers itself with
// PARATUNE_COMMAND, so adding one touches no other file. Contract section 6: every command takes
// `-o json`; exit 0 on success, 2 on bad input (one line naming the field), 1 otherwise.
#ifndef PARATUNE_CLI_COMMAND_H_
#define PARATUNE_CLI_COMMAND_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "base/status.h"

namespace paratune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// Parsed command line: `--flag value`, `--flag=value`, `-f value`, bare `--switch`, positionals.
// Repeated flags (`--set a=1 --set b=2`) keep every value in order.
class Args {
 public:
  // `switches` are flags that take no value (e.g. "--exhaustive", "--fast").
  static Result<Args> Parse(const std::vector<std::string>& argv,
                            const std::vector<std::string>& switches);

  bool Has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::optional<std::string> Get(const std::string& flag) const;
  std::string GetOr(const std::string& flag, const std::string& fallback) const;
  const std::vector<std::string>& GetAll(const std::string& flag) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // Every flag given, in sorted order (`--output` and `--file` appear as `-o` and `-f`).
  std::vector<std::string> FlagNames() const;
  // True for `-o json` / `--output json`.
  bool JsonOutput() const;
  // Integer flag with bounds; bad text gives an error naming the flag.
  Result<int64_t> GetInt(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

struct Command {
  std::string name;
  std::string summary;                // one line for `paratune help`
  std::vector<std::string> switches;  // flags without a value
  std::function<int(const Args&)> run;
  // Flags that take a value. Anything that is neither here, in `switches`, nor `-o` is refused
  // before `run` (exit 2 naming the flag): a typo must not silently give a wrong answer.
  std::vector<std::string> flags;
};

// Why `args` cannot be given to `command`: the first flag it does not declare. OK otherwise.
Status CheckFlags(const Command& command, const Args& args);

// "usage: paratune NAME ..." with the command's summary and its flags, for error messages.
std::string Usage(const Command& command);

// Registered commands by name.
std::map<std::string, Command>& CommandRegistry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { CommandRegistry()[c.name] = std::move(c); }
};

// The environment variable `name`, or `fallback` when it is unset or empty. Only the CLI and
// the operator's main read the environment; everything below takes what they pass.
std::string EnvOr(const char* name, const std::string& fallback);

// Applies `--set key=value` flags to `config`: any known parameter with a well-formed value,
// inside the campaign's search space or not (a log or a failure may come from any
// configuration). kInvalidArgument naming the flag for a missing `=`, an unknown key or a
// malformed value; `config` may then hold the sets before the bad one.
Status ApplyConfigSets(const std::vector<std::string>& sets, Config* config);

// Prints "paratune <cmd>: <message>" to stderr and returns the exit code for the status
// (2 for kInvalidArgument/kNotFound, 1 otherwise).
int ReportError(const std::string& command, const Status& status);

}  // namespace paratune::cli

#define PARATUNE_COMMAND_CONCAT2(a, b) a##b
#define PARATUNE_COMMAND_CONCAT(a, b) PARATUNE_COMMAND_CONCAT2(a, b)
#define PARATUNE_COMMAND(...)                                       \
  static ::paratune::cli::CommandRegistrar PARATUNE_COMMAND_CONCAT( \
      kRegistrar_, __LINE__)(::paratune::cli::Command{__VA_ARGS__})

#endif  // PARATUNE_CLI_COMMAND_H_
