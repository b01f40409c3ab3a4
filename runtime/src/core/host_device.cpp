#include "core/host_device.hpp"

#include <cstdint>
#include <string>

namespace tfc::internal {

HostDevice::HostDevice(const tfc_artifact_t& table, tfc_allocator_t allocator)
    : table_(table), allocator_(allocator), arenas_(static_cast<size_t>(table.num_entries)) {}

HostDevice::~HostDevice() {
  for (Buffer& arena : arenas_) freeBuffer(allocator_, arena);
}

uint64_t HostDevice::hostArenaBytes() const {
  uint64_t total = 0;
  for (const Buffer& arena : arenas_) total += arena.byteSize;
  return total;
}

Status HostDevice::call(const Call& c) {
  const tfc_entry_t& entry = table_.entries[c.index];
  Buffer& arena = arenas_[static_cast<size_t>(c.index)];
  if (entry.arena_bytes > 0 && arena.data == nullptr) {
    if (entry.arena_bytes > SIZE_MAX / 2) {
      return Status::error(TFC_OUT_OF_MEMORY, "it needs an arena of %llu bytes, more than this "
                           "machine can address",
                           static_cast<unsigned long long>(entry.arena_bytes));
    }
    TFC_ASSIGN_OR_RETURN(arena, allocateBuffer(allocator_, static_cast<size_t>(entry.arena_bytes),
                                               false, "its arena"));
  }
  inputPointers_.resize(c.numInputs);
  for (size_t i = 0; i < c.numInputs; ++i) inputPointers_[i] = c.inputs[i].data;
  outputPointers_.resize(c.numOutputs);
  for (size_t i = 0; i < c.numOutputs; ++i) outputPointers_[i] = c.outputs[i].data;
  const int32_t result =
      entry.call(c.host, c.params->data(), c.state->data(), inputPointers_.data(),
                 outputPointers_.data(), arena.data);
  if (result != 0) {
    return Status::error(TFC_INTERNAL, "failed (returned %d) without reporting an error",
                         result);
  }
  return Status();
}

}  // namespace tfc::internal
