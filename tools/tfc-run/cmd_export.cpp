// tfc-run MODEL.so export CKPT -o W.safetensors: the parameters of a training checkpoint,
// alone, under the model's own names.
#include <cstdio>

#include "cli.hpp"
#include "weights.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc::run {
namespace {

int runExport(const Invocation& invocation) {
  const Args& args = invocation.args;
  if (args.positional.size() != 1) {
    return usageError(invocation.command,
                      args.positional.empty()
                          ? "missing the checkpoint to export (CKPT.safetensors)"
                          : "unexpected argument '" + args.positional[1] + "'");
  }
  if (!args.has("--output")) {
    return usageError(invocation.command,
                      "missing -o W.safetensors (where to write the parameters)");
  }
  const std::string& input = args.positional[0];
  const std::string output = args.get("--output");
  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  auto params = Params::create(*artifact);
  if (!params.ok()) return fail(params.status());
  Status status = loadWeightsNoting(input, *params, inferenceWeightsOptions(args));
  if (!status.ok()) return fail(status);
  return writeParameters(*artifact, *params, output);
}

}  // namespace

const Command kExportCommand = {
    "export",
    "write the parameters of a training checkpoint alone (weights for generate, call)",
    R"(usage: tfc-run MODEL.so export CKPT.safetensors -o W.safetensors [--allow-unexpected]

Reads a checkpoint that `tfc-run MODEL.so train --save` wrote (or plain weights) and writes
only the model's parameters, under the names the model gives them (Hugging Face's names for
the library's gpt2 and llama presets): no optimizer state, no step. A checkpoint of another
model is refused, naming both module hashes. The output is written atomically.

CKPT may also be a Hugging Face checkpoint directory (model.safetensors, or shards under
model.safetensors.index.json): the output is then its parameters in the model's dtypes, one
file that loads without conversion (and maps in place) from then on.

options:
  -o, --output FILE      the .safetensors file to write (required)
  --allow-unexpected     ignore tensors that are neither parameters nor checkpoint state

examples:
  tfc-run gpt2.so export ckpt.safetensors -o gpt2-trained.safetensors
  tfc-run gpt2.so generate --weights gpt2-trained.safetensors --prompt-tokens "1 2 3"
  tfc-run llama.so export ~/models/TinyLlama-1.1B -o tinyllama-f32.safetensors
)",
    true,
    {outputOption("--output", "-o"), {"--allow-unexpected", nullptr, false, false}},
    runExport,
    ValueKind::kInput,
    "the checkpoint",
};

}  // namespace tfc::run
