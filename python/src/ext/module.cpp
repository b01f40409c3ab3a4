// The extension module tfc._tfc; the package tfc (src/tfc/__init__.py) re-exports it.
#include "common.hpp"

PYBIND11_MODULE(_tfc, m) {
  m.doc() = "Bindings of the tfc runtime: load compiled models, call them with NumPy arrays.";
  m.attr("ABI_VERSION") = TFC_ARTIFACT_ABI_VERSION;
  tfc::python::bindModel(m);
  tfc::python::bindTokenizer(m);
}
