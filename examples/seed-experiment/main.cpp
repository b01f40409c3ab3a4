// tfc-seed-experiment MODEL.so [options]: the seed article's experiment (seed_experiment.cpp)
// as a program of its own, with tfc-run's command-line behaviour: --help, usage errors
// (exit 2), errors (exit 1), outputs checked against inputs before anything is written.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "print.hpp"
#include "seed_experiment.hpp"
#include "tfc/artifact_abi.h"

int main(int argc, char** argv) {
  using namespace tfc::run;
  const Command& command = kSeedExperimentCommand;
  setProgram("tfc-seed-experiment", &command);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(command.help, stderr);
    return kExitUsage;
  }
  if (args[0] == "--version") {
    print("tfc-seed-experiment 0.1.0 (artifact ABI version {})\n", TFC_ARTIFACT_ABI_VERSION);
    return finishMain(0);
  }
  if (wantsHelp(args)) return finishMain(runCommand(command, "", args));
  if (args[0].size() > 1 && args[0][0] == '-') {
    return usageError(&command, "unknown option '" + args[0] +
                                    "' (the model comes first: tfc-seed-experiment MODEL.so)");
  }
  return finishMain(
      runCommand(command, args[0], std::vector<std::string>(args.begin() + 1, args.end())));
}
