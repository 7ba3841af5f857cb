// paratune: the command line (contract section 6). Dispatches to the registered subcommands.
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace {

void PrintHelp() {
  std::cout
      << "paratune: tune how large models are trained.\n\nUsage: paratune <command> [flags]\n\n"
         "Commands:\n";
  for (const auto& [name, cmd] : paratune::cli::CommandRegistry()) {
    std::cout << "  " << name << std::string(name.size() < 12 ? 12 - name.size() : 1, ' ')
              << cmd.summary << "\n";
  }
  std::cout << "\nEvery command takes -o json. Exit status: 0 ok, 2 bad input, 1 otherwise.\n";
}

}  // namespace

int main(int argc, char** argv) {
  using paratune::cli::CommandRegistry;
  if (argc < 2 || std::string(argv[1]) == "help" || std::string(argv[1]) == "--help" ||
      std::string(argv[1]) == "-h") {
    PrintHelp();
    return argc < 2 ? paratune::cli::kExitBadInput : paratune::cli::kExitOk;
  }
  std::string name = argv[1];
  auto it = CommandRegistry().find(name);
  if (it == CommandRegistry().end()) {
    std::cerr << "paratune: unknown command \"" << name << "\" (see paratune help)\n";
    return paratune::cli::kExitBadInput;
  }
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::cout << "paratune " << name << ": " << it->second.summary << "\n";
    return paratune::cli::kExitOk;
  }
  auto args = paratune::cli::Args::Parse(std::vector<std::string>(argv + 2, argv + argc),
                                         it->second.switches);
  paratune::Status valid = args.ok() ? paratune::cli::CheckFlags(it->second, *args) : args.status();
  if (!valid.ok()) {
    int code = paratune::cli::ReportError(name, valid);
    std::cerr << paratune::cli::Usage(it->second) << "\n";
    return code;
  }
  return it->second.run(*args);
}
