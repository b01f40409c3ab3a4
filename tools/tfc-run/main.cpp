// tfc-run: the command-line runner for models compiled by tfc. A thin main over the
// runtime (runtime/include/tfc/runtime/runtime.hpp); each subcommand lives in cmd_*.cpp.
//
//   tfc-run MODEL.so info | init | call | generate ...   commands on a model
//   tfc-run inspect FILE... | tokenize ... | machine   commands without a model
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "print.hpp"
#include "tfc/artifact_abi.h"

namespace tfc::run {
namespace {

void printOverview(FILE* out) {
  print(out,
        "usage: tfc-run MODEL.so COMMAND [options]\n"
        "       tfc-run inspect FILE...\n"
        "       tfc-run tokenize --tokenizer DIR|bytes IN.txt... -o train.bin\n"
        "       tfc-run machine [--threads N]\n"
        "       tfc-run COMMAND --help\n"
        "\n"
        "Runs models compiled by tfc (tfc model.mlir -o model.so) on this machine.\n"
        "\n"
        "commands:\n");
  for (const Command* command : commands()) {
    print(out, "  {:<15} {}\n", command->name, command->summary);
  }
  print(out,
        "\n"
        "examples:\n"
        "  tfc-run gpt2.so info\n"
        "  tfc-run gpt2.so init --seed 1 -o init.safetensors\n"
        "  tfc-run gpt2.so call forward --weights gpt2.safetensors --in tokens=t.npy\n"
        "  tfc-run gpt2.so generate --weights gpt2.safetensors --prompt-tokens \"1 2 3\" "
        "--max-new-tokens 16\n"
        "  tfc-run gpt2.so train --init-seed 0 --data train.bin --steps 1000 "
        "--save ckpt.safetensors\n"
        "  tfc-run inspect gpt2.safetensors\n"
        "  tfc-run tokenize --tokenizer bytes input.txt -o train.bin --val-fraction 0.1\n"
        "\n"
        "Errors print 'tfc-run: error: ...' and exit with 1 (2 for usage errors).\n"
        "tfc-run reads artifacts of ABI version {}.\n",
        TFC_ARTIFACT_ABI_VERSION);
}

const Command* findCommand(const std::string& name) {
  for (const Command* command : commands()) {
    if (name == command->name) return command;
  }
  return nullptr;
}

std::vector<std::string> commandNames() {
  std::vector<std::string> names;
  for (const Command* command : commands()) names.push_back(command->name);
  return names;
}

bool wantsHelp(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") return true;
    if (arg == "--") break;
  }
  return false;
}

int unknownCommand(const std::string& name, const std::string& model) {
  std::string suggestion = closest(name, commandNames());
  std::string where = model.empty() ? "" : " (after the model " + model + ")";
  return usageError(nullptr, "unknown command '" + name + "'" + where + "; commands: " +
                                 join(commandNames()) +
                                 (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
}

int runCommand(const Command& command, const std::string& model,
               const std::vector<std::string>& rest) {
  if (wantsHelp(rest)) {
    std::fputs(command.help, stdout);
    return 0;
  }
  Invocation invocation{&command, model, {}};
  if (!parseArgs(command, rest, &invocation.args)) return kExitUsage;
  // Here, for every command, so that none can forget them: empty paths, and outputs that
  // would overwrite an input or each other.
  if (int code = checkPaths(invocation); code != 0) return code;
  // The runtime reports errors as statuses, but an allocation the system refuses (an input
  // larger than memory, a ulimit -v) or a thread it cannot start throws from the standard
  // library: an error and exit 1, never an abort.
  try {
    return command.run(invocation);
  } catch (const std::bad_alloc&) {
    print(stderr, "tfc-run: error: out of memory while running '{}' (input too large for "
                  "this machine's memory or its limit, ulimit -v)\n", command.name);
  } catch (const std::length_error& error) {
    print(stderr, "tfc-run: error: out of memory while running '{}': {} is too large\n",
          command.name, error.what());
  } catch (const std::system_error& error) {
    print(stderr, "tfc-run: error: the system refused a resource while running '{}': {}\n",
          command.name, error.what());
  }
  return kExitFailure;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    printOverview(stderr);
    return kExitUsage;
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    if (first == "help" && args.size() > 1) {
      const Command* command = findCommand(args[1]);
      if (command == nullptr) return unknownCommand(args[1], "");
      std::fputs(command->help, stdout);
      return 0;
    }
    printOverview(stdout);
    return 0;
  }
  if (first == "--version") {
    print("tfc-run 0.1.0 (artifact ABI version {})\n", TFC_ARTIFACT_ABI_VERSION);
    return 0;
  }
  // `tfc-run COMMAND ...`: commands without a model, or --help of any command.
  if (const Command* command = findCommand(first)) {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (!command->needsModel) return runCommand(*command, "", rest);
    if (wantsHelp(rest)) return runCommand(*command, "", rest);
    return usageError(command, std::string("'") + command->name +
                                   "' needs a model first: tfc-run MODEL.so " + command->name);
  }
  if (first.size() > 1 && first[0] == '-') {
    return usageError(nullptr, "unknown option '" + first + "' (the model comes first: "
                               "tfc-run MODEL.so COMMAND)");
  }
  // `tfc-run MODEL.so COMMAND ...`
  const std::string& model = first;
  if (args.size() < 2) {
    return usageError(nullptr, "missing command after " + model + " (commands: " +
                                   join(commandNames()) + ")");
  }
  const Command* command = findCommand(args[1]);
  if (command == nullptr) return unknownCommand(args[1], model);
  if (!command->needsModel) {
    return usageError(command, std::string("'") + command->name +
                                   "' takes no model: tfc-run " + command->name + " FILE");
  }
  return runCommand(*command, model, std::vector<std::string>(args.begin() + 2, args.end()));
}

}  // namespace
}  // namespace tfc::run

int main(int argc, char** argv) {
  int code = tfc::run::main(argc, argv);
  // Results go to standard output (generate's text, call's summary): a full disk or a
  // closed pipe there must not end in success with the output cut short.
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int error = errno;
    tfc::run::print(stderr, "tfc-run: error: cannot write standard output: {}\n",
                    error != 0 ? std::strerror(error) : "write error");
    if (code == 0) code = tfc::run::kExitFailure;
  }
  return code;
}
