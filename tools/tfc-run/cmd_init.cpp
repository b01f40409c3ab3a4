// tfc-run MODEL.so init: write freshly initialized parameters.
#include <cstdio>

#include "cli.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc::run {
namespace {

int runInit(const Invocation& invocation) {
  const Args& args = invocation.args;
  if (!args.positional.empty()) {
    return usageError(invocation.command, "unexpected argument '" + args.positional[0] + "'");
  }
  if (!args.has("--output")) {
    return usageError(invocation.command, "missing -o FILE.safetensors (where to write the weights)");
  }
  uint64_t seed = 0;
  if (args.has("--seed") && !parseUint64(args.get("--seed"), &seed)) {
    return usageError(invocation.command,
                      "--seed '" + args.get("--seed") + "' is not a non-negative integer");
  }
  std::string output = args.get("--output");
  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  auto params = Params::create(*artifact);
  if (!params.ok()) return fail(params.status());
  Status status = params->init(seed);
  if (!status.ok()) return fail(status);
  return writeParameters(*artifact, *params, output,
                         " (seed " + std::to_string(seed) + ")");
}

}  // namespace

const Command kInitCommand = {
    "init",
    "initialize parameters from their initializers into a .safetensors file",
    R"(usage: tfc-run MODEL.so init [--seed S] -o W.safetensors

Fills every parameter from the initializer recorded in the model (zeros, ones, constant(v),
normal(mean, std), uniform(lo, hi), orthogonal(gain)) and writes them all to a safetensors
file, named as the model names them. The values depend only on the seed (default 0), so the
same seed gives the same file. The file is written atomically: it appears complete or not
at all, and an existing file is replaced only on success.

options:
  -o, --output FILE   the .safetensors file to write (required)
  --seed S            random seed, a non-negative integer (default 0)

examples:
  tfc-run gpt2.so init -o gpt2-init.safetensors
  tfc-run gpt2.so init --seed 7 -o run7/weights.safetensors
  tfc-run inspect gpt2-init.safetensors
)",
    true,
    {outputOption("--output", "-o"), {"--seed", nullptr, true, false}},
    runInit,
};

}  // namespace tfc::run
