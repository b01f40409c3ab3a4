//===- KernelLibrary.h - the CUDA kernel library, embedded ------*- C++ -*-===//
//
// The device code that generated kernels include: codegen/cuda/kernels/*.cuh
// and the device contract runtime/include/tfc/artifact_abi.h, embedded into
// the compiler at build time (codegen/cuda/kernels/embed.cmake). Every kernel
// source starts with kernelSourcePreamble(); NVRTC gets the headers in memory
// (nvrtcHeaders) and `--dump-ir=DIR` writes them to DIR/tfc/, so that a dumped
// kernel compiles as it did in NVRTC, also as host C++ (no -I needed: its
// includes are relative to the file that includes them).
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_CUDA_KERNELLIBRARY_H
#define TFC_CODEGEN_CUDA_KERNELLIBRARY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <vector>

namespace tfc::cuda {

/// One embedded header: its file name in the library's folder tfc/
/// ("prelude.cuh", "artifact_abi.h") and its text, byte for byte the file's.
struct KernelHeader {
  const char *name;
  const char *text;
};

/// Every header of the library, in file-name order (artifact_abi.h last).
llvm::ArrayRef<KernelHeader> kernelHeaders();

/// The folder the headers are included from: `#include "tfc/prelude.cuh"`.
constexpr llvm::StringLiteral kKernelHeaderDir = "tfc";

/// The first line of every kernel's source: the prelude's include.
llvm::StringRef kernelSourcePreamble();

/// The headers as nvrtcCreateProgram takes them (texts and include names, the
/// same length, pointing at static storage).
struct NvrtcHeaders {
  std::vector<const char *> texts, names;
};
const NvrtcHeaders &nvrtcHeaders();

} // namespace tfc::cuda

#endif // TFC_CODEGEN_CUDA_KERNELLIBRARY_H
