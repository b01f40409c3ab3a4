// Helpers shared by the artifact, params and context code: allocation, names, binding
// tensors from safetensors files, and checks of host tensors against descriptions.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include <sys/mman.h>

#include "base/file_util.hpp"
#include "core/runtime_internal.hpp"

namespace {

// A buffer of at least one huge page (weights, arenas, optimizer state, the KV cache) starts
// on a huge-page boundary and is advised to use huge pages: Linux's transparent huge pages
// are commonly given only on advice ("madvise" mode). A stream through 2 MiB pages takes no
// TLB miss every 4 KiB and the hardware prefetcher does not stop at each 4 KiB boundary; on
// the 2-core Zen 4 of docs/performance.md a plain read stream goes from 17-32 GB/s to 25-49
// GB/s and the 49 products of a gpt2-124m decode pass (one thread) from 26-29 ms to 21.6-24
// ms. Only advice: where it is refused or unsupported the pages are ordinary ones.
constexpr size_t kHugePageBytes = size_t{2} << 20;

void* systemAllocate(void* /*self*/, size_t byteSize, size_t alignment) {
  void* memory = nullptr;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  const bool huge = byteSize >= kHugePageBytes;
  if (huge && alignment < kHugePageBytes) alignment = kHugePageBytes;
  if (posix_memalign(&memory, alignment, byteSize == 0 ? 1 : byteSize) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  if (huge) (void)::madvise(memory, byteSize, MADV_HUGEPAGE);
#endif
  return memory;
}

void systemDeallocate(void* /*self*/, void* pointer) { std::free(pointer); }

}  // namespace

extern "C" {

tfc_allocator_t tfc_allocator_system(void) {
  tfc_allocator_t allocator;
  allocator.self = nullptr;
  allocator.allocate = systemAllocate;
  allocator.deallocate = systemDeallocate;
  return allocator;
}

}  // extern "C"

namespace tfc::internal {

StatusOr<Buffer> allocateBuffer(const tfc_allocator_t& allocator, size_t bytes, bool zero,
                                const char* what) {
  Buffer buffer;
  buffer.byteSize = bytes;
  // Round up to whole alignment units so that vector code may read a full line at the end.
  size_t rounded = (std::max<size_t>(bytes, 1) + TFC_ARENA_ALIGNMENT - 1) &
                   ~static_cast<size_t>(TFC_ARENA_ALIGNMENT - 1);
  if (rounded < bytes) {
    return Status::error(TFC_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s", bytes, what);
  }
  buffer.data = allocator.allocate(allocator.self, rounded, TFC_ARENA_ALIGNMENT);
  if (buffer.data == nullptr) {
    return Status::error(TFC_OUT_OF_MEMORY, "cannot allocate %zu bytes (%.2f GiB) for %s", bytes,
                         static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0), what);
  }
  if (reinterpret_cast<uintptr_t>(buffer.data) % TFC_ARENA_ALIGNMENT != 0) {
    allocator.deallocate(allocator.self, buffer.data);
    return Status::error(TFC_INTERNAL, "the allocator returned memory not aligned to %u bytes",
                         TFC_ARENA_ALIGNMENT);
  }
  if (zero) std::memset(buffer.data, 0, rounded);
  return buffer;
}

void freeBuffer(const tfc_allocator_t& allocator, Buffer& buffer) {
  if (buffer.data != nullptr) allocator.deallocate(allocator.self, buffer.data);
  buffer.data = nullptr;
  buffer.byteSize = 0;
}

std::vector<int64_t> descShape(const tfc_tensor_desc_t& desc) {
  if (desc.rank <= 0 || desc.shape == nullptr) return {};
  return std::vector<int64_t>(desc.shape, desc.shape + desc.rank);
}

namespace {
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string closestName(std::string_view name, const std::vector<std::string_view>& candidates) {
  size_t best = SIZE_MAX;
  std::string_view bestName;
  size_t limit = std::max<size_t>(2, name.size() / 3);
  for (std::string_view candidate : candidates) {
    if (name.size() > 1000 || candidate.size() > 1000) continue;
    size_t distance = editDistance(name, candidate);
    if (distance < best) {
      best = distance;
      bestName = candidate;
    }
  }
  if (best > limit || best >= name.size()) return "";
  return std::string(bestName);
}

Status parseInits(const std::string& path, const char* what, const tfc_tensor_desc_t* descs,
                  int32_t count, std::vector<InitSpec>* out) {
  out->clear();
  for (int32_t i = 0; i < count; ++i) {
    auto spec = parseInitSpec(descs[i].init, static_cast<tfc_dtype_t>(descs[i].dtype),
                              descShape(descs[i]));
    if (!spec.ok()) {
      return Status::error(TFC_DATA_LOSS, "%s: %s %s: %s", path.c_str(), what,
                           quoteForMessage(descs[i].name).c_str(), spec.status().message());
    }
    out->push_back(*spec);
  }
  return Status();
}

Status bindFromSafetensors(const SafetensorsFile& file, const tfc_tensor_desc_t* descs,
                           int32_t count, std::vector<Buffer>& buffers, const char* what,
                           bool allowMissing, bool allowUnexpected) {
  TFC_ASSIGN_OR_RETURN(std::vector<const SafetensorsTensorInfo*> sources,
                       matchSafetensors(file, descs, count, what, allowMissing, allowUnexpected));
  for (size_t i = 0; i < sources.size(); ++i) {
    const SafetensorsTensorInfo* info = sources[i];
    if (info != nullptr && info->byteSize > 0) {
      std::memcpy(buffers[i].data, info->data, info->byteSize);
    }
  }
  return Status();
}

Status saveToSafetensors(const std::string& path, const tfc_tensor_desc_t* descs, int32_t count,
                         const std::vector<Buffer>& buffers, const std::string& modelHash) {
  std::vector<NamedTensorView> tensors;
  tensors.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    const Buffer& buffer = buffers[static_cast<size_t>(i)];
    tensors.push_back(NamedTensorView{
        descs[i].name, TensorView{static_cast<tfc_dtype_t>(descs[i].dtype), descShape(descs[i]),
                                  buffer.data, buffer.byteSize}});
  }
  std::map<std::string, std::string> metadata = {{"format", "pt"}};
  if (!modelHash.empty()) metadata["tfc_module_hash"] = modelHash;
  return writeSafetensors(path, tensors, metadata);
}

Status checkTensorRef(const tfc_tensor_ref_t& ref, const tfc_tensor_desc_t& desc,
                      const std::string& subject) {
  std::vector<int64_t> expected = descShape(desc);
  auto expectedDtype = static_cast<tfc_dtype_t>(desc.dtype);
  if (ref.rank < 0 || (ref.rank > 0 && ref.shape == nullptr) ||
      static_cast<size_t>(ref.rank) > kMaxRank) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s has an invalid rank (%d) or a null shape",
                         subject.c_str(), ref.rank);
  }
  std::vector<int64_t> given =
      ref.rank > 0 ? std::vector<int64_t>(ref.shape, ref.shape + ref.rank) : std::vector<int64_t>();
  if (ref.dtype != expectedDtype) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s has dtype %s, expected %s", subject.c_str(),
                         tfc_dtype_name(ref.dtype), tfc_dtype_name(expectedDtype));
  }
  if (given != expected) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s has shape %s, expected %s", subject.c_str(),
                         formatShape(given).c_str(), formatShape(expected).c_str());
  }
  uint64_t bytes = tfc_tensor_desc_byte_size(&desc);
  if (ref.byte_size != bytes) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s has byte_size %zu, but %s %s needs %llu",
                         subject.c_str(), ref.byte_size, tfc_dtype_name(expectedDtype),
                         formatShape(expected).c_str(), static_cast<unsigned long long>(bytes));
  }
  if (ref.data == nullptr && bytes > 0) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s has a null data pointer", subject.c_str());
  }
  return Status();
}

}  // namespace tfc::internal
