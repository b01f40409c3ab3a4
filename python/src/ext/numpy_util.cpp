// Dtypes, shapes and arrays between the runtime and NumPy.
#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"

namespace tfc::python {

namespace {

py::module_ numpy() { return py::module_::import("numpy"); }

std::string str(py::handle object) { return py::str(object).cast<std::string>(); }

bool exactKind(char kind) { return kind == 'i' || kind == 'u' || kind == 'b'; }

// |value| (not a NumPy array) as an array of |want|, under the rules of inputArray().
py::array convertValue(py::handle value, const py::dtype& want, const std::string& subject) {
  std::string typeName = str(py::type::handle_of(value).attr("__name__"));
  py::array source;
  try {
    source = numpy().attr("asarray")(value);
  } catch (py::error_already_set& error) {
    throw py::value_error(subject + ": a " + typeName + " cannot become an array (" +
                          error.what() + ")");
  }
  char kind = source.dtype().kind();
  if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') {
    throw py::value_error(subject + " is a " + typeName + " of dtype " + str(source.dtype()) +
                          ", expected numbers of dtype " + str(want));
  }
  if (!numpy().attr("can_cast")(source.dtype(), want, "same_kind").cast<bool>()) {
    throw py::value_error(subject + " is a " + typeName + " of dtype " + str(source.dtype()) +
                          ", which does not convert to " + str(want) +
                          " without changing its kind; pass a NumPy array of dtype " +
                          str(want));
  }
  py::array converted = source.attr("astype")(want);
  if (exactKind(want.kind()) &&
      !numpy().attr("array_equal")(converted, source).cast<bool>()) {
    throw py::value_error(subject + ": " + str(value).substr(0, 80) + " does not fit in " +
                          str(want));
  }
  return converted;
}

}  // namespace

py::dtype numpyDtype(tfc_dtype_t dtype) {
  if (dtype == TFC_DTYPE_BF16) {
    py::module_ mlDtypes;
    try {
      mlDtypes = py::module_::import("ml_dtypes");
    } catch (py::error_already_set&) {
      PyErr_SetString(PyExc_NotImplementedError,
                      "NumPy has no bfloat16: install the ml_dtypes package to pass bf16 "
                      "tensors as arrays");
      throw py::error_already_set();
    }
    return py::dtype::from_args(mlDtypes.attr("bfloat16"));
  }
  const char* descr = tfc_dtype_npy_descr(dtype);
  if (descr == nullptr) {
    throw std::runtime_error("tfc: dtype " + std::to_string(static_cast<int>(dtype)) +
                             " has no NumPy equivalent");
  }
  return py::dtype(descr);
}

std::string dtypeName(tfc_dtype_t dtype) {
  switch (dtype) {
    case TFC_DTYPE_F32: return "float32";
    case TFC_DTYPE_F16: return "float16";
    case TFC_DTYPE_BF16: return "bfloat16";
    case TFC_DTYPE_F64: return "float64";
    case TFC_DTYPE_I32: return "int32";
    case TFC_DTYPE_I64: return "int64";
    case TFC_DTYPE_U8: return "uint8";
    case TFC_DTYPE_I8: return "int8";
    case TFC_DTYPE_U16: return "uint16";
    case TFC_DTYPE_U32: return "uint32";
    case TFC_DTYPE_BOOL: return "bool";
    case TFC_DTYPE_I16: return "int16";
    case TFC_DTYPE_U64: return "uint64";
    default: return "invalid";
  }
}

py::tuple shapeTuple(const int64_t* shape, int32_t rank) {
  py::tuple result(static_cast<size_t>(rank));
  for (int32_t i = 0; i < rank; ++i) result[static_cast<size_t>(i)] = py::int_(shape[i]);
  return result;
}

std::string formatShape(const int64_t* shape, int32_t rank) {
  std::string text = "(";
  for (int32_t i = 0; i < rank; ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + (rank == 1 ? ",)" : ")");
}

py::array aliasingArray(const tfc_tensor_ref_t& ref, py::handle owner) {
  std::vector<py::ssize_t> shape(ref.shape, ref.shape + ref.rank);
  // A base that is not an array makes pybind11 wrap the pointer, writable, without a copy.
  return py::array(numpyDtype(ref.dtype), shape, {}, ref.data, owner);
}

py::array inputArray(py::handle value, const tfc_tensor_desc_t& desc,
                     const std::string& subject) {
  auto dtype = static_cast<tfc_dtype_t>(desc.dtype);
  py::dtype want = numpyDtype(dtype);
  py::array array;
  if (py::isinstance<py::array>(value)) {
    array = py::reinterpret_borrow<py::array>(value);
    if (!array.dtype().equal(want)) {
      throw py::value_error(subject + " has dtype " + str(array.dtype()) + ", expected " +
                            dtypeName(dtype) + " (arrays are not cast implicitly: pass " +
                            "x.astype(numpy." + dtypeName(dtype) + "))");
    }
  } else {
    array = convertValue(value, want, subject);
  }
  bool same = array.ndim() == desc.rank;
  for (int32_t i = 0; same && i < desc.rank; ++i) same = array.shape(i) == desc.shape[i];
  if (!same) {
    std::vector<int64_t> given(array.shape(), array.shape() + array.ndim());
    throw py::value_error(subject + " has shape " +
                          formatShape(given.data(), static_cast<int32_t>(given.size())) +
                          ", expected " + formatShape(desc.shape, desc.rank));
  }
  // The same object when already C-contiguous and aligned (no copy), else a copy that is.
  return numpy().attr("require")(array, py::none(), "CA");
}

py::array newArray(const tfc_tensor_desc_t& desc) {
  std::vector<py::ssize_t> shape(desc.shape, desc.shape + desc.rank);
  return py::array(numpyDtype(static_cast<tfc_dtype_t>(desc.dtype)), shape);
}

namespace {

// "U+D800 at index 3": the first character of |text| that has no UTF-8 form.
std::string firstSurrogate(py::handle text) {
  const Py_ssize_t length = PyUnicode_GetLength(text.ptr());
  for (Py_ssize_t i = 0; i < length; ++i) {
    Py_UCS4 c = PyUnicode_ReadChar(text.ptr(), i);
    if (c >= 0xD800 && c <= 0xDFFF) {
      char buffer[48];
      std::snprintf(buffer, sizeof(buffer), "U+%04X at index %zd", static_cast<unsigned>(c), i);
      return buffer;
    }
  }
  return "a character without a UTF-8 form";
}

}  // namespace

std::string textBytes(py::handle text, const std::string& subject) {
  if (py::isinstance<py::str>(text)) {
    // Not text.cast<std::string>(): for a lone surrogate it fails with pybind11's "Unable to
    // cast" error, which names neither the argument nor the character.
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
    if (utf8 == nullptr) {
      PyErr_Clear();
      throw py::value_error(subject + " is not valid text: it holds the lone surrogate " +
                            firstSurrogate(text) +
                            ", which has no UTF-8 form (pass bytes, or text decoded without "
                            "errors='surrogateescape' or 'surrogatepass')");
    }
    return std::string(utf8, static_cast<size_t>(size));
  }
  if (py::isinstance<py::bytes>(text) || py::isinstance<py::bytearray>(text) ||
      py::isinstance<py::memoryview>(text)) {
    return py::bytes(py::reinterpret_borrow<py::object>(text)).cast<std::string>();
  }
  throw py::value_error(subject + " must be str or bytes, got " +
                        str(py::type::handle_of(text).attr("__name__")));
}

std::vector<int32_t> tokenIds(py::handle ids, const std::string& subject) {
  py::array array = numpy().attr("asarray")(ids);
  if (array.ndim() != 1 && !(array.ndim() == 0 && array.size() == 0)) {
    throw py::value_error(subject + " must be one-dimensional, got shape " +
                          str(array.attr("shape")));
  }
  char kind = array.dtype().kind();
  if (array.size() > 0 && kind != 'i' && kind != 'u') {
    throw py::value_error(subject + " must be integers, got dtype " + str(array.dtype()));
  }
  py::array_t<int64_t, py::array::c_style | py::array::forcecast> wide(array);
  std::vector<int32_t> result;
  result.reserve(static_cast<size_t>(wide.size()));
  for (py::ssize_t i = 0; i < wide.size(); ++i) {
    int64_t id = wide.data()[i];
    if (id < INT32_MIN || id > INT32_MAX) {
      throw py::value_error(subject + ": id " + std::to_string(id) + " at position " +
                            std::to_string(i) + " is out of range");
    }
    result.push_back(static_cast<int32_t>(id));
  }
  return result;
}

tfc_tensor_ref_t tensorRefOf(const py::array& array, tfc_dtype_t dtype,
                             std::vector<int64_t>& shape) {
  shape.assign(array.shape(), array.shape() + array.ndim());
  tfc_tensor_ref_t ref{};
  ref.dtype = dtype;
  ref.rank = static_cast<int32_t>(shape.size());
  ref.shape = shape.data();
  // The runtime only reads inputs; the const_cast serves the C struct's one pointer type.
  ref.data = const_cast<void*>(array.data());
  ref.byte_size = static_cast<size_t>(array.nbytes());
  return ref;
}

}  // namespace tfc::python

namespace tfc::python {

std::string fsPath(py::handle value, const std::string& what) {
  py::object path = py::reinterpret_steal<py::object>(PyOS_FSPath(value.ptr()));
  if (!path) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      throw py::type_error(what + " must be str, bytes or os.PathLike (pathlib.Path), not " +
                           str(py::type::handle_of(value).attr("__name__")));
    }
    throw py::error_already_set();
  }
  std::string bytes;
  if (py::isinstance<py::bytes>(path)) {
    bytes = path.cast<std::string>();
  } else {
    // The file system encoding with surrogateescape, as open() encodes a str path.
    py::object encoded = py::reinterpret_steal<py::object>(PyUnicode_EncodeFSDefault(path.ptr()));
    if (!encoded) {
      PyErr_Clear();
      throw py::value_error(what + " " + str(py::repr(path)) +
                            " is not a file name: it holds the lone surrogate " +
                            firstSurrogate(path) + ", which the file system encoding cannot "
                            "represent");
    }
    bytes = encoded.cast<std::string>();
  }
  if (bytes.find('\0') != std::string::npos) {
    throw py::value_error(what + " " + str(py::repr(path)) +
                          " is not a file name: it holds a NUL character");
  }
  return bytes;
}

}  // namespace tfc::python
