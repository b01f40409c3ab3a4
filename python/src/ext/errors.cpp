// Runtime statuses as Python exceptions (the mapping is in common.hpp).
#include <sys/stat.h>

#include <cerrno>

#include "common.hpp"

namespace tfc::python {

namespace {

bool pathExists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

[[noreturn]] void raise(PyObject* type, py::object value) {
  PyErr_SetObject(type, value.ptr());
  throw py::error_already_set();
}

}  // namespace

void throwStatus(const Status& status, std::initializer_list<std::string> paths) {
  std::string message = status.message();
  switch (status.code()) {
    case TFC_INVALID_ARGUMENT:
      throw py::value_error(message);
    case TFC_NOT_FOUND:
      for (const std::string& path : paths) {
        // "" too: Artifact('') names no file, as open('') says.
        if (!pathExists(path)) {
          // OSError(errno, strerror, filename): .errno and .filename as open() sets them.
          raise(PyExc_FileNotFoundError, py::make_tuple(ENOENT, message, path));
        }
      }
      throw py::value_error(message);
    case TFC_IO_ERROR:
      raise(PyExc_OSError, py::str(message));
    case TFC_OUT_OF_MEMORY:
      raise(PyExc_MemoryError, py::str(message));
    case TFC_UNIMPLEMENTED:
      raise(PyExc_NotImplementedError, py::str(message));
    default:
      throw std::runtime_error(message);  // pybind11 raises RuntimeError
  }
}

std::string quote(const std::string& name) { return "'" + name + "'"; }

}  // namespace tfc::python
