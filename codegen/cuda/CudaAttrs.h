//===- CudaAttrs.h - attributes of the CUDA target's kernels ----*- C++ -*-===//
#ifndef TFC_CODEGEN_CUDA_CUDAATTRS_H
#define TFC_CODEGEN_CUDA_CUDAATTRS_H

#include "llvm/ADT/StringRef.h"

namespace tfc::cuda::attr {

/// On a kernel: its CUDA C++ (an extern "C" __global__ function of the
/// kernel's name), compiled after the prelude.
constexpr llvm::StringLiteral kSource = "tfc.cuda.source";
/// On a kernel: the work items of its grid-stride loop.
constexpr llvm::StringLiteral kThreads = "tfc.cuda.threads";
/// On a tiled kernel instead: its launch shape, seven i64s: grid x, y, z,
/// block x, y, z and dynamic shared bytes (tfc_device_launch_t).
constexpr llvm::StringLiteral kLaunch = "tfc.cuda.launch";

/// On a product kernel that the host may run with its library instead
/// (tfc_host_api_t.device_matmul): the fields of tfc_device_matmul_t in
/// order, fourteen i64s (a_type, b_type, c_type, bias_type, trans_a,
/// trans_b, tf32, reserved, batch, m, n, k, stride_a, stride_b). The
/// kernel's arguments are A, B, the bias when bias_type is not 0, and C.
constexpr llvm::StringLiteral kLibraryProduct = "tfc.cuda.library_product";

/// On a kernel of an op that has a tiled kernel but took the one-thread-an-
/// item one: why (the shape or type the tiled kernel cannot take), for
/// `tfc --report`.
constexpr llvm::StringLiteral kFallback = "tfc.cuda.fallback";

/// On a kernel that ptxas spilled registers of to local memory: the bytes
/// of its spill stores and loads (absent when none).
constexpr llvm::StringLiteral kSpillBytes = "tfc.cuda.spill_bytes";

} // namespace tfc::cuda::attr

#endif // TFC_CODEGEN_CUDA_CUDAATTRS_H
