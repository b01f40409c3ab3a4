// tfc-run MODEL.so call ENTRY: run one entry point on .npy inputs, write .npy outputs.
#include <sys/stat.h>
#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>

#include "cli.hpp"
#include "entry_inputs.hpp"
#include "print.hpp"
#include "weights.hpp"
#include "tfc/runtime/bound_entry.hpp"
#include "tfc/runtime/file.hpp"
#include "tfc/runtime/npy.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc::run {
namespace {

// The file name an output gets: its name, with anything but [A-Za-z0-9._-] replaced.
std::string outputFileName(const std::string& name) {
  std::string safe = name;
  for (char& c : safe) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  if (safe.empty() || safe[0] == '.') safe = "_" + safe;
  return safe + ".npy";
}

int runCall(const Invocation& invocation) {
  const Command* command = invocation.command;
  const Args& args = invocation.args;
  if (args.positional.empty()) {
    return usageError(command, "missing ENTRY (see the entries with: tfc-run " +
                                   invocation.model + " info)");
  }
  if (args.positional.size() > 1) {
    return usageError(command, "unexpected argument '" + args.positional[1] +
                                   "' (inputs are given as --in NAME=FILE.npy)");
  }
  const std::string& entryName = args.positional[0];
  if (args.has("--weights") && args.has("--init-seed")) {
    return usageError(command, "give either --weights or --init-seed, not both");
  }
  uint64_t initSeed = 0;
  if (args.has("--init-seed") && !parseUint64(args.get("--init-seed"), &initSeed)) {
    return usageError(command, "--init-seed '" + args.get("--init-seed") +
                                   "' is not a non-negative integer");
  }
  int64_t repeat = 0;
  if (args.has("--repeat") && (!parseInt64(args.get("--repeat"), &repeat) || repeat < 1 ||
                               repeat > 1000000)) {
    return usageError(command, "--repeat '" + args.get("--repeat") +
                                   "' is not a count between 1 and 1000000");
  }
  int64_t threads = 0;
  if (args.has("--threads") && (!parseInt64(args.get("--threads"), &threads) || threads < 0 ||
                                 threads > TFC_CONTEXT_MAX_THREADS)) {
    return usageError(command, "--threads '" + args.get("--threads") +
                                   "' is not a thread count (0 = all cores; at most " +
                                   std::to_string(TFC_CONTEXT_MAX_THREADS) + ")");
  }
  int32_t device = 0;
  if (std::string bad = parseDevice(args, &device); !bad.empty()) {
    return usageError(command, bad);
  }
  std::string outDir = args.get("--out-dir", ".");

  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  auto entryIndex = artifact->findEntry(entryName);
  if (!entryIndex.ok()) return fail(entryIndex.status());
  const tfc_entry_t& entry = artifact->entry(*entryIndex);
  std::string entryText = "entry '" + entryName + "'";

  // Everything that can be checked before running is checked before running.
  for (int32_t i = 0; i < entry.num_outputs; ++i) {
    if (tfc_dtype_npy_descr(static_cast<tfc_dtype_t>(entry.outputs[i].dtype)) == nullptr) {
      return fail(entryText + " output '" + entry.outputs[i].name + "' is " +
                  tfc_dtype_name(static_cast<tfc_dtype_t>(entry.outputs[i].dtype)) +
                  ", which .npy cannot store");
    }
  }
  if (entry.num_outputs > 0) {
    struct stat info;
    // Like `mkdir -p` for the last component: a missing output directory is
    // created; a path that exists but is not a directory is an error.
    if (::stat(outDir.c_str(), &info) != 0 && errno == ENOENT &&
        ::mkdir(outDir.c_str(), 0777) == 0)
      ::stat(outDir.c_str(), &info);
    if (::stat(outDir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      return fail("--out-dir " + outDir + ": not a directory");
    }
  }
  {
    // The dispatcher compared the options (checkPaths); the files written into --out-dir are
    // known only now, and must not replace an input (--in tokens=out/logits.npy) either.
    std::vector<NamedFile> inputs = {{"the model", invocation.model, ""},
                                     {"--weights", args.get("--weights"), ""},
                                     {"--state-in", args.get("--state-in"), ""}};
    for (const std::string& value : args.all("--in")) {
      size_t equals = value.find('=');
      if (equals == std::string::npos) continue;
      inputs.push_back({"--in " + value.substr(0, equals), value.substr(equals + 1), ""});
    }
    std::vector<NamedFile> outputs = {{"--state-out", args.get("--state-out"), "--state-in"},
                                      {"--weights-out", args.get("--weights-out"), "--weights"}};
    for (int32_t i = 0; i < entry.num_outputs; ++i) {
      outputs.push_back({std::string("the output '") + entry.outputs[i].name + "'",
                         outDir + "/" + outputFileName(entry.outputs[i].name), ""});
    }
    Status distinct = checkDistinctFiles(inputs, outputs);
    if (!distinct.ok()) return fail(distinct);
  }
  if (artifact->paramCount() > 0 && !args.has("--weights") && !args.has("--init-seed")) {
    return usageError(command, "missing --weights W.safetensors (or --init-seed S to use the "
                               "model's initializers)");
  }

  int exitCode = 0;
  std::optional<EntryInputs> read = readEntryInputs(command, args, entry, &exitCode);
  if (!read) return exitCode;
  if (std::vector<std::string> missing = read->missing(entry); !missing.empty()) {
    return usageError(command, entryText + " needs --in for: " + join(missing));
  }
  std::vector<HostTensor>& inputs = read->tensors;

  // Parameters, context, state.
  auto params = Params::create(*artifact);
  if (!params.ok()) return fail(params.status());
  Status status = args.has("--weights")
                      ? loadWeightsNoting(args.get("--weights"), *params, inferenceWeightsOptions(args))
                      : params->init(initSeed);
  if (!status.ok()) return fail(status);
  tfc_context_options_t options;
  tfc_context_options_initialize(&options);
  options.num_threads = static_cast<int32_t>(threads);
  options.device = device;
  auto context = Context::create(*artifact, *params, &options);
  if (!context.ok()) return fail(context.status());
  if (args.has("--state-in")) {
    status = context->loadStateSafetensors(args.get("--state-in"));
    if (!status.ok()) return fail(status);
  }

  // The entry reads the inputs where they are; its outputs are allocated once and every
  // call of --repeat writes them again.
  auto bound = BoundEntry::create(*artifact, entryName, BoundEntry::Inputs::kCallerProvided);
  if (!bound.ok()) return fail(bound.status());
  std::vector<TensorView> views;
  for (const HostTensor& tensor : inputs) views.push_back(tensor.view());
  bound->useInputs(views);
  status = bound->call(*context);
  if (!status.ok()) return fail(status);
  // --repeat N: the first call above is the warm-up; time N more on the same
  // inputs (state keeps changing for entries that write it) and report the
  // median and the minimum, as benchmarks want.
  if (repeat > 0) {
    std::vector<double> ms;
    for (int64_t r = 0; r < repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      status = bound->call(*context);
      if (!status.ok()) return fail(status);
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    print(stderr, "{}: {} calls after 1 warm-up: median {:.3f} ms, min {:.3f} ms\n", entryName,
          repeat, ms[ms.size() / 2], ms[0]);
    if (context->deviceBytes() > 0) {
      print(stderr, "{}: device memory {:.1f} MiB (parameters, state, arena, buffers)\n",
            entryName, static_cast<double>(context->deviceBytes()) / (1 << 20));
    }
  }

  for (int32_t i = 0; i < entry.num_outputs; ++i) {
    const HostTensor& output = bound->output(static_cast<size_t>(i));
    std::string path = outDir + "/" + outputFileName(entry.outputs[i].name);
    status = writeNpy(path, output.view());
    if (!status.ok()) return fail(status);
    print("wrote {} ({} {})", path, tfc_dtype_name(output.dtype()), formatShape(output.shape()));
    if (output.rank() == 0) print(" = {}", formatValues(output.view(), 1));
    print("\n");
  }
  if (args.has("--state-out")) {
    status = context->saveStateSafetensors(args.get("--state-out"));
    if (!status.ok()) return fail(status);
    print("wrote {} (state)\n", args.get("--state-out"));
  }
  if (args.has("--weights-out")) {
    status = context->download();
    if (status.ok()) status = params->saveSafetensors(args.get("--weights-out"));
    if (!status.ok()) return fail(status);
    print("wrote {} (parameters)\n", args.get("--weights-out"));
  }
  return 0;
}

}  // namespace

const Command kCallCommand = {
    "call",
    "run one entry point on .npy inputs and write its outputs as .npy",
    R"(usage: tfc-run MODEL.so call ENTRY (--weights W.safetensors|DIR | --init-seed S)
                          [--in NAME=FILE.npy | --in NAME=VALUE]... [--out-dir DIR]
                          [--state-in S.safetensors] [--state-out S.safetensors]
                          [--weights-out W.safetensors] [--threads N] [--device N] [--repeat N]

Calls entry point ENTRY once. Every input of the entry is given with --in, by name, as a
.npy file whose dtype and shape must match the entry's (see `tfc-run MODEL.so info`);
0-d inputs may also be given inline as a number, typed by the entry (`--in pos=5`,
`--in temperature=0.8`). Each output is written to DIR/NAME.npy, atomically.

The state (KV cache, optimizer moments) starts from its initializers, or from --state-in;
--state-out saves it after the call. Entries that update parameters in place (train_step)
can save them with --weights-out.

options:
  ENTRY                  the entry point to call (forward, loss, prefill, decode, ...)
  --weights FILE|DIR     parameters from a .safetensors file (names, dtypes and shapes
                         must match the model exactly), a training checkpoint of this
                         model (its state.* tensors are ignored, with a note), or a Hugging
                         Face checkpoint: a directory with model.safetensors or
                         model.safetensors.index.json and its shards, or the index itself
                         (F32/BF16/F16 converted to the model's dtype, a "transformer."-like
                         prefix dropped, buffers that are not parameters skipped, with notes)
  --allow-unexpected     ignore tensors of --weights that are not parameters of the model
  --mmap                 map --weights copy-on-write instead of copying them into this
                         process's memory (huge pages): processes loading one file share
                         its pages, at a slower decode
  --init-seed S          instead of --weights, initialize parameters with seed S
  --in NAME=FILE|VALUE   one input (repeat for each)
  --out-dir DIR          where to write NAME.npy for each output (default: .)
  --state-in FILE        start from this state instead of the initial one
  --state-out FILE       write the state after the call
  --weights-out FILE     write the parameters after the call
  --threads N            threads for parallel kernels (default 0 = all cores)
  --device N             the GPU that runs a CUDA artifact (default 0)
  --repeat N             after the call, time N more and print the median (benchmarks)

examples:
  tfc-run gpt2.so call forward --weights gpt2.safetensors --in tokens=tokens.npy --out-dir out
  tfc-run llama.so call forward --weights ~/models/TinyLlama-1.1B --in tokens=tokens.npy
  tfc-run gpt2.so call decode --weights gpt2.safetensors --in token=t.npy --in pos=5 \
      --state-in cache.safetensors --state-out cache.safetensors
  tfc-run tiny.so call train_step --weights w.safetensors --in tokens=batch.npy \
      --in targets=targets.npy --weights-out w.safetensors --out-dir out
  tfc-run inspect out/logits.npy --values 8
)",
    true,
    {inputOption("--weights"),
     {"--allow-unexpected", nullptr, false, false},
     {"--mmap", nullptr, false, false},
     {"--init-seed", nullptr, true, false},
     {"--in", "-i", true, true, ValueKind::kNamedInput},
     {"--out-dir", nullptr, true, false, ValueKind::kOutputDir},
     inputOption("--state-in"),
     // Both documented as updates in place (the help's decode and train_step examples).
     outputOption("--state-out", nullptr, "--state-in"),
     outputOption("--weights-out", nullptr, "--weights"),
     {"--threads", "-j", true, false},
     {"--device", nullptr, true, false},
     {"--repeat", nullptr, true, false}},
    runCall,
};

}  // namespace tfc::run
