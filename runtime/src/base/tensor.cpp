#include "tfc/runtime/tensor.hpp"

#include "tfc/runtime/runtime.h"

#include <cstdlib>
#include <cstring>

namespace tfc {

bool computeByteSize(tfc_dtype_t dtype, const std::vector<int64_t>& shape, uint64_t* outBytes) {
  uint64_t bytes = tfc_dtype_size(dtype);
  if (bytes == 0) return false;
  for (int64_t dim : shape) {
    if (dim < 0) return false;
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) return false;
  }
  *outBytes = bytes;
  return true;
}

std::string formatShape(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  text += "]";
  return text;
}

void HostTensor::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

int64_t HostTensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape_) count *= dim;  // cannot overflow: byteSize_ was checked
  return count;
}

StatusOr<HostTensor> HostTensor::allocate(tfc_dtype_t dtype, std::vector<int64_t> shape) {
  if (!tfc_dtype_is_valid(dtype)) {
    return Status::error(TFC_INVALID_ARGUMENT, "cannot allocate a tensor of invalid dtype %d",
                         static_cast<int>(dtype));
  }
  if (shape.size() > kMaxRank) {
    return Status::error(TFC_INVALID_ARGUMENT, "cannot allocate a tensor of rank %zu (limit %zu)",
                         shape.size(), kMaxRank);
  }
  uint64_t bytes = 0;
  if (!computeByteSize(dtype, shape, &bytes) || bytes > SIZE_MAX - kHostTensorAlignment) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "cannot allocate a tensor of dtype %s and shape %s: negative dimension "
                         "or size overflow",
                         tfc_dtype_name(dtype), formatShape(shape).c_str());
  }
  // Round up so that the allocation is never empty (data() is then never null) and whole
  // cache lines can be read past the end by vectorized code.
  size_t allocationSize =
      (static_cast<size_t>(bytes) + kHostTensorAlignment) & ~(kHostTensorAlignment - 1);
  void* memory = nullptr;
  if (posix_memalign(&memory, kHostTensorAlignment, allocationSize) != 0) {
    return Status::error(TFC_OUT_OF_MEMORY, "cannot allocate %zu bytes for a tensor of shape %s",
                         allocationSize, formatShape(shape).c_str());
  }
  std::memset(memory, 0, allocationSize);
  HostTensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.byteSize_ = static_cast<size_t>(bytes);
  tensor.storage_.reset(static_cast<uint8_t*>(memory));
  return tensor;
}

StatusOr<HostTensor> HostTensor::copyFrom(const TensorView& view) {
  uint64_t bytes = 0;
  if (!computeByteSize(view.dtype, view.shape, &bytes) || bytes != view.byteSize) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "tensor view of dtype %s and shape %s has %zu bytes, which does not "
                         "match its dtype and shape",
                         tfc_dtype_name(view.dtype), formatShape(view.shape).c_str(),
                         view.byteSize);
  }
  if (view.byteSize > 0 && view.data == nullptr) {
    return Status(TFC_INVALID_ARGUMENT, "tensor view has a null data pointer");
  }
  TFC_ASSIGN_OR_RETURN(HostTensor tensor, allocate(view.dtype, view.shape));
  if (view.byteSize > 0) std::memcpy(tensor.mutableData(), view.data, view.byteSize);
  return tensor;
}

}  // namespace tfc

extern "C" uint64_t tfc_tensor_desc_byte_size(const tfc_tensor_desc_t* desc) {
  if (desc == nullptr || desc->rank < 0 || (desc->rank > 0 && desc->shape == nullptr)) return 0;
  uint64_t bytes = 0;
  const std::vector<int64_t> shape(desc->shape, desc->shape + desc->rank);
  if (!tfc::computeByteSize(static_cast<tfc_dtype_t>(desc->dtype), shape, &bytes)) return 0;
  return bytes;
}
