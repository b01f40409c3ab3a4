// libFuzzer target: builds an artifact table (tfc_artifact_t with its tensor descriptions,
// shapes, strings, init specs and entries) from the fuzzer's bytes and runs the runtime's
// validation of it, as tfc_artifact_open does after dlopen (validateArtifactTable), then
// the C API's queries on tables that pass. Any crash, sanitizer report or abort is a bug;
// refusals must come back as a Status naming the artifact.
//
// The table is consistent with the ABI's memory contract (a count never exceeds its
// array, a shape has `rank` entries when 0 <= rank <= 8 and a string is NUL-terminated),
// since the runtime cannot check pointers into a loaded library; everything else (counts,
// null pointers, ranks beyond 8, dimensions, dtypes, names, init specs, header fields) is
// the fuzzer's. A rank above 8 gets a shape of 8 entries: the validator must look at the
// rank before it reads the shape.
//   ninja -C build-fuzz fuzz-artifact-table && build-fuzz/fuzz-artifact-table runtime/fuzz/corpus/artifact_table
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "core/runtime_internal.hpp"
#include "tfc/artifact_abi.h"
#include "tfc/runtime/runtime.h"

namespace {

int32_t dummyEntry(const tfc_host_api_t*, void* const*, void* const*, void* const*,
                   void* const*, void*) {
  return 0;
}

// Owns everything the table points at.
struct Arena {
  std::deque<std::string> strings;
  std::deque<std::vector<int64_t>> shapes;
  std::deque<std::vector<tfc_tensor_desc_t>> descs;
  std::deque<std::vector<tfc_kernel_desc_t>> kernels;
  std::vector<tfc_entry_t> entries;
};

const char* fuzzString(FuzzedDataProvider& in, Arena& arena, const char* const* likely,
                       size_t likelyCount) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return nullptr;
    case 1:
      if (likelyCount > 0) {
        return likely[in.ConsumeIntegralInRange<size_t>(0, likelyCount - 1)];
      }
      [[fallthrough]];
    default:
      arena.strings.push_back(in.ConsumeRandomLengthString(48));
      return arena.strings.back().c_str();
  }
}

const tfc_tensor_desc_t* fuzzDescs(FuzzedDataProvider& in, Arena& arena, int32_t* count) {
  static const char* const kNames[] = {"wte", "wpe", "tokens", "pos", "logits", "", "wte"};
  static const char* const kInits[] = {"zeros", "ones", "normal(0.0, 0.02)", "uniform(-1, 1)",
                                       "constant(0.5)", "orthogonal(1.0)", "normal(0, -1)", ""};
  int32_t size = in.ConsumeIntegralInRange<int32_t>(0, 4);
  std::vector<tfc_tensor_desc_t> descs(static_cast<size_t>(size));
  for (tfc_tensor_desc_t& desc : descs) {
    desc.name = fuzzString(in, arena, kNames, sizeof(kNames) / sizeof(kNames[0]));
    desc.dtype = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, 6)
                                  : in.ConsumeIntegral<int32_t>();
    desc.rank = in.ConsumeIntegralInRange<int32_t>(-2, 10);
    if (desc.rank > 0 && in.ConsumeIntegralInRange<int>(0, 15) != 0) {
      std::vector<int64_t> shape(static_cast<size_t>(desc.rank > 8 ? 8 : desc.rank));
      for (int64_t& dim : shape) {
        dim = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-1, 64)
                               : in.ConsumeIntegral<int64_t>();
      }
      arena.shapes.push_back(std::move(shape));
      desc.shape = arena.shapes.back().data();
    } else {
      desc.shape = nullptr;
    }
    desc.init = fuzzString(in, arena, kInits, sizeof(kInits) / sizeof(kInits[0]));
    desc.flags = in.ConsumeIntegral<uint32_t>();
    desc.reserved = 0;
  }
  // Mostly the array's length; sometimes negative, sometimes a null array with a count.
  *count = size;
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: *count = -in.ConsumeIntegralInRange<int32_t>(1, INT32_MAX); break;
    case 1:
      *count = in.ConsumeIntegralInRange<int32_t>(1, 8);
      return nullptr;
    default: break;
  }
  if (descs.empty()) return nullptr;
  arena.descs.push_back(std::move(descs));
  return arena.descs.back().data();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Arena arena;
  tfc_artifact_t table;
  std::memset(&table, 0, sizeof(table));
  table.magic = in.ConsumeIntegralInRange<int>(0, 7) ? TFC_ARTIFACT_MAGIC : in.ConsumeIntegral<uint32_t>();
  table.abi_version =
      in.ConsumeIntegralInRange<int>(0, 7) ? TFC_ARTIFACT_ABI_VERSION : in.ConsumeIntegral<uint32_t>();
  table.struct_size = in.ConsumeIntegralInRange<int>(0, 7) ? sizeof(tfc_artifact_t)
                                                           : in.ConsumeIntegral<uint32_t>();
  static const char* const kText[] = {"x86_64-unknown-linux-gnu", "tfc 0.1.0", "0123abcd",
                                      "{\"model\": \"gpt2\", \"config\": {\"n_ctx\": 64}}"};
  table.target = fuzzString(in, arena, kText, 4);
  table.compiler_version = fuzzString(in, arena, kText, 4);
  table.module_hash = fuzzString(in, arena, kText, 4);
  table.metadata_json = fuzzString(in, arena, kText, 4);
  table.params = fuzzDescs(in, arena, &table.num_params);
  table.state = fuzzDescs(in, arena, &table.num_state);
  int32_t entries = in.ConsumeIntegralInRange<int32_t>(0, 4);
  static const char* const kEntries[] = {"forward", "decode", "prefill", "train_step", ""};
  for (int32_t i = 0; i < entries; ++i) {
    tfc_entry_t entry;
    std::memset(&entry, 0, sizeof(entry));
    entry.name = fuzzString(in, arena, kEntries, 5);
    entry.inputs = fuzzDescs(in, arena, &entry.num_inputs);
    entry.outputs = fuzzDescs(in, arena, &entry.num_outputs);
    entry.arena_bytes = in.ConsumeIntegral<uint64_t>();
    entry.call = in.ConsumeIntegralInRange<int>(0, 7) ? dummyEntry : nullptr;
    // The optional kernel table: absent, or launches whose count may disagree with it
    // only upward of the validator's limit (a table is as long as num_kernels says).
    if (in.ConsumeBool()) {
      static const char* const kKernels[] = {"k0_add", "fused.linear: linear, gelu", ""};
      std::vector<tfc_kernel_desc_t>& kernels = arena.kernels.emplace_back();
      kernels.resize(in.ConsumeIntegralInRange<size_t>(0, 3));
      for (tfc_kernel_desc_t& k : kernels) {
        k.name = fuzzString(in, arena, kKernels, 3);
        k.ops = fuzzString(in, arena, kKernels, 3);
        k.flops = in.ConsumeIntegral<uint64_t>();
      }
      entry.kernels = kernels.empty() ? nullptr : kernels.data();
      entry.num_kernels = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? (uint64_t(1) << 40)
                                                                      : kernels.size();
    }
    arena.entries.push_back(entry);
  }
  table.num_entries = entries;
  table.entries = arena.entries.empty() ? nullptr : arena.entries.data();
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) table.num_entries = -1;

  std::vector<tfc::internal::InitSpec> paramInits, stateInits;
  tfc::Status status = tfc::internal::validateArtifactTable("fuzz.so", &table, &paramInits,
                                                            &stateInits);
  if (!status.ok()) {
    if (std::strstr(status.message(), "fuzz.so") == nullptr) std::abort();
    return 0;
  }
  if (paramInits.size() != static_cast<size_t>(table.num_params) ||
      stateInits.size() != static_cast<size_t>(table.num_state)) {
    std::abort();
  }
  // The queries of the C API on the accepted table (as after tfc_artifact_open).
  tfc_loaded_artifact_s artifact;
  artifact.path = "fuzz.so";
  artifact.table = &table;
  if (tfc_artifact_metadata_json(&artifact) == nullptr) std::abort();
  for (int32_t i = 0; i < tfc_artifact_param_count(&artifact); ++i) {
    const tfc_tensor_desc_t* desc = tfc_artifact_param(&artifact, i);
    int32_t index = -1;
    tfc_status_t found = tfc_artifact_find_param(&artifact, desc->name, &index);
    if (found != nullptr || index != i) std::abort();
    if (tfc::internal::descShape(*desc).size() != static_cast<size_t>(desc->rank)) std::abort();
  }
  for (int32_t i = 0; i < tfc_artifact_entry_count(&artifact); ++i) {
    int32_t index = -1;
    tfc_status_t found = tfc_artifact_find_entry(&artifact, tfc_artifact_entry(&artifact, i)->name,
                                                 &index);
    if (found != nullptr || index != i) std::abort();
  }
  int32_t index = 0;
  tfc_status_t missing = tfc_artifact_find_entry(&artifact, "no such entry", &index);
  if (missing == nullptr) {
    bool named = false;
    for (int32_t i = 0; i < table.num_entries; ++i) {
      named |= std::strcmp(table.entries[i].name, "no such entry") == 0;
    }
    if (!named) std::abort();
  } else {
    tfc_status_free(missing);
  }
  return 0;
}
