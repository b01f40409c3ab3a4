// tfc-run: the command-line runner for models compiled by tfc. A thin main over the
// runtime (runtime/include/tfc/runtime/runtime.hpp); each subcommand lives in cmd_*.cpp.
//
//   tfc-run MODEL.so info | init | call | generate ...   commands on a model
//   tfc-run inspect FILE... | tokenize ... | machine   commands without a model
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "print.hpp"
#include "tfc/artifact_abi.h"

namespace tfc::run {
namespace {

const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> kCommands = {
      &kInfoCommand,    &kInitCommand,  &kCallCommand,    &kProfileCommand,
      &kGenerateCommand, &kServeCommand, &kTrainCommand,   &kExportCommand,
      &kInspectCommand, &kTokenizeCommand, &kMachineCommand};
  return kCommands;
}

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

int unknownCommand(const std::string& name, const std::string& model) {
  std::string suggestion = closest(name, commandNames());
  std::string where = model.empty() ? "" : " (after the model " + model + ")";
  return usageError(nullptr, "unknown command '" + name + "'" + where + "; commands: " +
                                 join(commandNames()) +
                                 (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
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
  // Results go to standard output (generate's text, call's summary): a full disk or a
  // closed pipe there must not end in success with the output cut short.
  return tfc::run::finishMain(tfc::run::main(argc, argv));
}
