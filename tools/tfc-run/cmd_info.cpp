// tfc-run MODEL.so info: what a compiled model contains.
#include <cstring>
#include "cli.hpp"
#include "print.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc::run {
namespace {

std::string shapeText(const tfc_tensor_desc_t& desc) { return formatShape(shapeOf(desc)); }
std::string dtypeText(const tfc_tensor_desc_t& desc) {
  return tfc_dtype_name(static_cast<tfc_dtype_t>(desc.dtype));
}

uint64_t elementCount(const tfc_tensor_desc_t& desc) {
  uint64_t count = 1;
  for (int32_t d = 0; d < desc.rank; ++d) count *= static_cast<uint64_t>(desc.shape[d]);
  return count;
}

int runInfo(const Invocation& invocation) {
  if (!invocation.args.positional.empty()) {
    return usageError(invocation.command,
                      "unexpected argument '" + invocation.args.positional[0] + "'");
  }
  bool verbose = invocation.args.has("--verbose");
  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());

  print("model:     {}\n", invocation.model);
  print("target:    {}\n", artifact->target());
  const tfc_artifact_t* table = tfc_artifact_table(artifact->get());
  if (table->device == TFC_DEVICE_CUDA) {
    print("device:    CUDA {}: {} kernels ({} cubin, {} PTX for newer GPUs)\n",
          table->device_arch, table->num_device_kernels, formatBytes(table->device_image_bytes),
          formatBytes(table->device_ptx ? std::strlen(table->device_ptx) : 0));
  } else {
    print("device:    cpu\n");
  }
  print("compiler:  {}\n", artifact->compilerVersion());
  print("hash:      {}\n", artifact->moduleHash());
  std::string metadata(artifact->metadataJson());
  if (!metadata.empty()) print("metadata:  {}\n", metadata);

  print("\nentries ({}):\n", artifact->entryCount());
  for (int32_t e = 0; e < artifact->entryCount(); ++e) {
    const tfc_entry_t& entry = artifact->entry(e);
    print("  {}  (arena {}, {} kernel launch{})\n", entry.name, formatBytes(entry.arena_bytes),
          entry.num_kernels, entry.num_kernels == 1 ? "" : "es");
    std::vector<std::vector<std::string>> rows;
    for (int32_t i = 0; i < entry.num_inputs; ++i) {
      rows.push_back({"in", entry.inputs[i].name, dtypeText(entry.inputs[i]),
                      shapeText(entry.inputs[i])});
    }
    for (int32_t i = 0; i < entry.num_outputs; ++i) {
      rows.push_back({"out", entry.outputs[i].name, dtypeText(entry.outputs[i]),
                      shapeText(entry.outputs[i])});
    }
    if (rows.empty()) rows.push_back({"(no inputs or outputs)"});
    printTable(rows, "    ");
  }

  uint64_t paramBytes = 0, paramElements = 0;
  int32_t frozen = 0;
  for (int32_t i = 0; i < artifact->paramCount(); ++i) {
    paramBytes += tfc_tensor_desc_byte_size(&artifact->param(i));
    paramElements += elementCount(artifact->param(i));
    if (artifact->param(i).flags & TFC_TENSOR_FROZEN) ++frozen;
  }
  print("\nparameters: {} tensors, {} elements, {}{}\n", artifact->paramCount(), paramElements,
        formatBytes(paramBytes), frozen > 0 ? fmt::format(" ({} frozen)", frozen) : "");
  if (verbose) {
    std::vector<std::vector<std::string>> rows;
    for (int32_t i = 0; i < artifact->paramCount(); ++i) {
      const tfc_tensor_desc_t& desc = artifact->param(i);
      rows.push_back({desc.name, dtypeText(desc), shapeText(desc),
                      formatBytes(tfc_tensor_desc_byte_size(&desc)), desc.init,
                      (desc.flags & TFC_TENSOR_FROZEN) ? "frozen" : ""});
    }
    printTable(rows, "  ");
  } else if (artifact->paramCount() > 0) {
    print("  (list them with --verbose)\n");
  }

  uint64_t stateBytes = 0;
  for (int32_t i = 0; i < artifact->stateCount(); ++i) {
    stateBytes += tfc_tensor_desc_byte_size(&artifact->state(i));
  }
  print("\nstate: {} tensors, {}\n", artifact->stateCount(), formatBytes(stateBytes));
  std::vector<std::vector<std::string>> rows;
  for (int32_t i = 0; i < artifact->stateCount(); ++i) {
    const tfc_tensor_desc_t& desc = artifact->state(i);
    rows.push_back({desc.name, dtypeText(desc), shapeText(desc),
                    formatBytes(tfc_tensor_desc_byte_size(&desc)), desc.init});
  }
  printTable(rows, "  ");
  return 0;
}

}  // namespace

const Command kInfoCommand = {
    "info",
    "show a model's target, entries, parameters and state",
    R"(usage: tfc-run MODEL.so info [--verbose]

Prints what a compiled model contains: its target, the compiler that built it, the hash of
the source module, its metadata, each entry point with its inputs and outputs (name, dtype,
shape) and scratch arena size, the parameters (count and total size; the full list with
their initializers with --verbose) and the module state (KV caches, optimizer moments).

options:
  --verbose    list every parameter: name, dtype, shape, bytes, initializer

examples:
  tfc-run gpt2.so info
  tfc-run gpt2.so info --verbose | grep attn
)",
    true,
    {{"--verbose", "-v", false, false}},
    runInfo,
};

}  // namespace tfc::run
