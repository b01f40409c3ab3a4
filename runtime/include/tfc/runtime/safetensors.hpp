// Reading and writing Hugging Face safetensors files.
//
// Format: an 8-byte little-endian header length N, N bytes of JSON header, then the data
// section. The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end]} (offsets relative to the data section) plus an optional "__metadata__" object of
// string values. See https://github.com/huggingface/safetensors.
//
// The reader trusts nothing: it checks the header length (at most 100 MB and within the
// file), parses the JSON strictly (no trailing data, no duplicate names, no unknown keys),
// and checks each tensor's dtype, dimensions, size (with overflow checks), offsets, that
// no two tensors overlap and, as the reference implementation does, that the data section
// ends exactly where the last tensor ends (trailing bytes are refused). Every error is a
// Status whose message names the file and the problem. Unlike the reference
// implementation, gaps between tensors are accepted.
#ifndef TFC_RUNTIME_SAFETENSORS_HPP_
#define TFC_RUNTIME_SAFETENSORS_HPP_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tensor.hpp"

namespace tfc {

// The largest header the reader accepts, as in the reference implementation.
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// writeSafetensors starts the data section, and every tensor whose byte size is a multiple
// of this, at a file offset that is a multiple of it, so that a reader may use the tensor
// in place from a mapping of the file (the runtime maps parameters aligned so:
// TFC_ARENA_ALIGNMENT).
constexpr size_t kSafetensorsWriteAlignment = 64;

// One tensor of a safetensors file.
struct SafetensorsTensorInfo {
  std::string name;
  tfc_dtype_t dtype = TFC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  // [dataBegin, dataEnd) relative to the start of the data section.
  uint64_t dataBegin = 0;
  uint64_t dataEnd = 0;
  // Offset of the first byte from the start of the file.
  uint64_t fileOffset = 0;
  size_t byteSize = 0;
  // The bytes, inside the file's mapping; valid while the SafetensorsFile lives. Aligned to
  // the element size only if the writer aligned it (files from writeSafetensors and from
  // Hugging Face's library are), so copy or use memcpy when in doubt.
  const uint8_t* data = nullptr;

  TensorView view() const { return TensorView{dtype, shape, data, byteSize}; }
};

struct SafetensorsOpenOptions {
  // Map the file read-only instead of reading it into memory. Falls back to reading when
  // the file cannot be mapped.
  bool allowMmap = true;
};

// A validated safetensors file, held in memory (mapped or read). Move-only; tensor data
// pointers stay valid across moves.
class SafetensorsFile {
 public:
  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // Reads and validates the file at |path|.
  static StatusOr<SafetensorsFile> open(const std::string& path,
                                        const SafetensorsOpenOptions& options = {});

  // Validates |size| bytes at |bytes| as a safetensors file, without copying them: the
  // bytes must outlive the result. |name| stands for the file in messages.
  static StatusOr<SafetensorsFile> parse(const void* bytes, size_t size, std::string name);

  // The name given to open() or parse().
  const std::string& path() const { return path_; }
  // All tensors, sorted by name.
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  // The "__metadata__" entries (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // True if the bytes are memory-mapped rather than read into memory.
  bool isMapped() const { return mapped_; }

  // Returns the tensor called |name|, or nullptr.
  const SafetensorsTensorInfo* find(std::string_view name) const;
  // Returns a view of the tensor called |name|; NOT_FOUND names the file and the tensor.
  StatusOr<TensorView> get(std::string_view name) const;
  // Returns an aligned copy of the tensor called |name|.
  StatusOr<HostTensor> load(std::string_view name) const;

 private:
  SafetensorsFile() = default;

  std::string path_;
  std::shared_ptr<const void> owner_;  // keeps the bytes alive
  bool mapped_ = false;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Validates |size| bytes as a safetensors file; see SafetensorsFile::parse().
inline StatusOr<SafetensorsFile> parseSafetensors(const void* bytes, size_t size,
                                                  std::string name) {
  return SafetensorsFile::parse(bytes, size, std::move(name));
}

// A tensor to write, with its name.
struct NamedTensorView {
  std::string name;
  TensorView tensor;
};

// Writes |tensors| and |metadata| to a safetensors file at |path|, atomically: the file
// appears complete or not at all, and an existing file is replaced only on success.
// The header lists "__metadata__" (when not empty) and then the tensors sorted by name, and
// is padded with spaces so that the data section starts at a multiple of
// kSafetensorsWriteAlignment bytes. The data section has no gaps: first the tensors whose
// byte size is a multiple of kSafetensorsWriteAlignment (each then starts at such a
// multiple), then the others; each group by decreasing element size, then name, so that
// every tensor is aligned to its element size.
// Fails with INVALID_ARGUMENT for an empty, duplicate, reserved ("__metadata__") or
// non-UTF-8 name, an invalid dtype, a negative dimension, a rank above kMaxRank, or a view
// whose byteSize does not match its dtype and shape.
Status writeSafetensors(const std::string& path, const std::vector<NamedTensorView>& tensors,
                        const std::map<std::string, std::string>& metadata = {});

// Convenience overload for owned tensors.
Status writeSafetensors(const std::string& path, const std::map<std::string, HostTensor>& tensors,
                        const std::map<std::string, std::string>& metadata = {});

}  // namespace tfc

#endif  // TFC_RUNTIME_SAFETENSORS_HPP_
