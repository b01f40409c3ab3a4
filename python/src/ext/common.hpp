// What the binding's translation units share: runtime errors as Python exceptions, dtypes
// and shapes as NumPy's, and the checked conversion of Python values into input arrays.
#ifndef TFC_PYTHON_COMMON_HPP_
#define TFC_PYTHON_COMMON_HPP_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc::python {

namespace py = pybind11;

// Raises the Python exception for the error |status| (never OK), with the runtime's message:
//   INVALID_ARGUMENT            ValueError
//   NOT_FOUND                   FileNotFoundError when one of |paths| does not exist (the
//                               first such path is the exception's filename), else ValueError
//                               (a name that is not there: entry, parameter, tensor)
//   IO_ERROR                    OSError
//   OUT_OF_MEMORY               MemoryError
//   UNIMPLEMENTED               NotImplementedError
//   others                      RuntimeError (DATA_LOSS, FAILED_PRECONDITION, INTERNAL)
[[noreturn]] void throwStatus(const Status& status,
                              std::initializer_list<std::string> paths = {});

inline void check(const Status& status, std::initializer_list<std::string> paths = {}) {
  if (!status.ok()) throwStatus(status, paths);
}

template <typename T>
T valueOrThrow(StatusOr<T> result, std::initializer_list<std::string> paths = {}) {
  if (!result.ok()) throwStatus(result.status(), paths);
  return std::move(result).value();
}

// 'name', as the runtime quotes names in its messages.
std::string quote(const std::string& name);

// The NumPy dtype of |dtype|. BF16 needs the ml_dtypes package (NumPy has no bfloat16);
// without it this raises NotImplementedError.
py::dtype numpyDtype(tfc_dtype_t dtype);
// NumPy's name of |dtype| ("float32", "int32", "bfloat16"), for reprs and messages.
std::string dtypeName(tfc_dtype_t dtype);

// (2, 8) as a Python tuple, and as text in NumPy's spelling: "(2, 8)", "(5,)", "()".
py::tuple shapeTuple(const int64_t* shape, int32_t rank);
std::string formatShape(const int64_t* shape, int32_t rank);

// A NumPy array aliasing |ref|'s memory (no copy), writable, that keeps |owner| (the Python
// object owning the memory) alive.
py::array aliasingArray(const tfc_tensor_ref_t& ref, py::handle owner);

// A C-contiguous, aligned array of exactly |desc|'s dtype and shape holding |value|, for
// reading by the runtime. |subject| names the input in messages ("m.so: entry 'forward'
// input 'tokens'"). The rules (python/README.md, "Inputs"):
//   - a NumPy array must have the dtype already (ValueError otherwise: arrays are never
//     cast implicitly); it is passed without a copy when C-contiguous and aligned, else
//     copied into a contiguous array;
//   - anything else (Python numbers, lists, NumPy scalars) is converted when NumPy can do it
//     within the same kind (int -> int32, float -> float32, not float -> int32) and, for
//     integer and bool dtypes, without changing a value; ValueError otherwise;
//   - the shape must equal |desc|'s (ValueError otherwise; no broadcasting).
py::array inputArray(py::handle value, const tfc_tensor_desc_t& desc,
                     const std::string& subject);

// The bytes of |text|: a str as UTF-8, bytes-like objects as they are; ValueError, starting
// with |subject|, for anything else, and for a str that is not text (a lone surrogate such
// as "\ud800", which has no UTF-8 form).
std::string textBytes(py::handle text, const std::string& subject);

// A path argument as the runtime takes it: str, bytes or any os.PathLike (pathlib.Path),
// through os.fspath and the file system encoding, as open() does. TypeError for other
// types; ValueError naming |what| (the argument, "Artifact: path") for a NUL character or a
// str that has no bytes in the file system encoding (a lone surrogate).
std::string fsPath(py::handle value, const std::string& what);

// |ids| (a sequence or 1-D array of integers) as int32 token ids; ValueError, starting with
// |subject|, for other shapes, non-integers and values outside int32.
std::vector<int32_t> tokenIds(py::handle ids, const std::string& subject);

// A fresh NumPy array (owning its memory, uninitialized) of |desc|'s dtype and shape.
py::array newArray(const tfc_tensor_desc_t& desc);

// A tfc_tensor_ref_t over |array|, which must be C-contiguous and outlive the ref; |shape|
// receives the dimensions the ref points to.
tfc_tensor_ref_t tensorRefOf(const py::array& array, tfc_dtype_t dtype,
                             std::vector<int64_t>& shape);

// The module's parts, defined in their own files.
void bindModel(py::module_& m);
void bindTokenizer(py::module_& m);

}  // namespace tfc::python

#endif  // TFC_PYTHON_COMMON_HPP_
