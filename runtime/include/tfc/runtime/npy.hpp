// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Format: the magic "\x93NUMPY", a major and minor version byte, a little-endian header
// length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0), a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw elements. See
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html.
//
// Supported: the dtypes listed in dtype.h, little-endian, C order. Refused with a message:
// Fortran order, big-endian data, structured and object dtypes, bfloat16 (NumPy has no
// such type), a data size that is not exactly shape * itemsize, and anything malformed.
#ifndef TFC_RUNTIME_NPY_HPP_
#define TFC_RUNTIME_NPY_HPP_

#include <cstddef>
#include <string>

#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tensor.hpp"

namespace tfc {

// The largest .npy header the reader accepts. NumPy's own reader refuses headers above
// 10000 bytes by default; a header for kMaxRank dimensions is far below this.
constexpr size_t kNpyMaxHeaderBytes = 1 << 20;

// Reads the .npy file at |path| into a new tensor.
StatusOr<HostTensor> readNpy(const std::string& path);

// Parses |size| bytes at |bytes| as a .npy file into a new tensor. |name| stands for the
// file in messages.
StatusOr<HostTensor> parseNpy(const void* bytes, size_t size, const std::string& name);

// Writes |tensor| to |path| as a version 1.0 .npy file (2.0 if the header needed more than
// 65535 bytes), atomically: the file appears complete or not at all, and an existing file
// is replaced only on success. The header is padded so that the data starts at a multiple
// of 64 bytes, as NumPy does. Fails with INVALID_ARGUMENT for BF16 (no .npy spelling), an
// invalid dtype, a rank above kMaxRank or a view whose byteSize does not match.
Status writeNpy(const std::string& path, const TensorView& tensor);

}  // namespace tfc

#endif  // TFC_RUNTIME_NPY_HPP_
