//===- KernelLibrary.cpp - the CUDA kernel library, embedded --------------===//
#include "codegen/cuda/KernelLibrary.h"

#include "llvm/ADT/STLExtras.h"

#include <string>

namespace tfc::cuda {
namespace {

// {name, text} per header, generated from the files at build time.
const KernelHeader kHeaders[] = {
#include "codegen/cuda/kernels/KernelHeaders.inc"
};

// NVRTC has no C library headers, and artifact_abi.h includes <stdint.h> for
// its structs (the kernels use only its enums): the fixed-width types as the
// device sees them (LP64, as the host NVRTC runs on). Never written to the dump
// dir, where a host compiler's own <stdint.h> is the right one.
constexpr const char *kNvrtcStdint = R"cuda(#pragma once
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;
)cuda";

} // namespace

llvm::ArrayRef<KernelHeader> kernelHeaders() { return kHeaders; }

llvm::StringRef kernelSourcePreamble() {
  return "#include \"tfc/prelude.cuh\"\n";
}

const NvrtcHeaders &nvrtcHeaders() {
  static const NvrtcHeaders headers = [] {
    NvrtcHeaders h;
    // Each header under two names: "tfc/prelude.cuh", as a kernel includes
    // it, and "prelude.cuh", as a sibling header includes it. NVRTC matches
    // include names literally, where a host compiler looks next to the
    // including file first; with both, the same text compiles in either.
    static std::vector<std::string> qualified;
    qualified.reserve(kernelHeaders().size());
    for (const KernelHeader &header : kernelHeaders())
      qualified.push_back(kKernelHeaderDir.str() + "/" + header.name);
    for (auto [i, header] : llvm::enumerate(kernelHeaders())) {
      h.texts.push_back(header.text);
      h.names.push_back(qualified[i].c_str());
      h.texts.push_back(header.text);
      h.names.push_back(header.name);
    }
    h.texts.push_back(kNvrtcStdint);
    h.names.push_back("stdint.h");
    return h;
  }();
  return headers;
}

} // namespace tfc::cuda
