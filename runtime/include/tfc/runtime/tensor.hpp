// Host tensors: a non-owning TensorView and an owning, 64-byte-aligned HostTensor, shared
// by the safetensors and .npy readers and writers.
//
// Thread-safety: both are plain values; concurrent reads are fine, writes need the
// caller's synchronization.
#ifndef TFC_RUNTIME_TENSOR_HPP_
#define TFC_RUNTIME_TENSOR_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tfc/runtime/dtype.h"
#include "tfc/runtime/status.hpp"

namespace tfc {

// The most dimensions a tensor may have. Readers refuse files with more, so that a hostile
// header cannot make them allocate gigabytes of dimensions.
constexpr size_t kMaxRank = 64;

// The alignment of HostTensor storage: a cache line, enough for any SIMD load.
constexpr size_t kHostTensorAlignment = 64;

// Computes the byte size of a dense tensor of |dtype| and |shape|. Returns false when the
// dtype is invalid, a dimension is negative, or the size overflows uint64_t.
bool computeByteSize(tfc_dtype_t dtype, const std::vector<int64_t>& shape, uint64_t* outBytes);

// Formats |shape| as "[768, 2304]" ("[]" for a scalar), for messages.
std::string formatShape(const std::vector<int64_t>& shape);

// A borrowed, dense, row-major tensor: the bytes stay owned by someone else (a HostTensor,
// a mapped file) and must outlive the view.
struct TensorView {
  tfc_dtype_t dtype = TFC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // not necessarily aligned to the element size
  size_t byteSize = 0;
};

// An owning, dense, row-major host tensor whose storage is aligned to kHostTensorAlignment.
// Move-only, because copies of weights should be deliberate: use clone().
class HostTensor {
 public:
  // An empty tensor of dtype INVALID; only useful as a placeholder to assign to.
  HostTensor() = default;
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  // Allocates a zero-filled tensor. Fails with INVALID_ARGUMENT for an invalid dtype, a
  // negative dimension, a rank above kMaxRank or an overflowing size, and with
  // OUT_OF_MEMORY when the allocation fails.
  static StatusOr<HostTensor> allocate(tfc_dtype_t dtype, std::vector<int64_t> shape);

  // Copies |view| into a new tensor; the view's byteSize must match its dtype and shape.
  static StatusOr<HostTensor> copyFrom(const TensorView& view);

  // Returns a deep copy.
  StatusOr<HostTensor> clone() const { return copyFrom(view()); }

  tfc_dtype_t dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  // The number of elements (1 for a scalar, 0 when any dimension is 0).
  int64_t numElements() const;
  size_t byteSize() const { return byteSize_; }

  const void* data() const { return storage_.get(); }
  void* mutableData() { return storage_.get(); }
  // Typed access; T must match the element size of dtype().
  template <typename T>
  const T* dataAs() const { return reinterpret_cast<const T*>(storage_.get()); }
  template <typename T>
  T* mutableDataAs() { return reinterpret_cast<T*>(storage_.get()); }

  TensorView view() const { return TensorView{dtype_, shape_, storage_.get(), byteSize_}; }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };

  tfc_dtype_t dtype_ = TFC_DTYPE_INVALID;
  std::vector<int64_t> shape_;
  size_t byteSize_ = 0;
  std::unique_ptr<uint8_t[], FreeDeleter> storage_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_TENSOR_HPP_
