//===- CudaSource.h - CUDA C++ for the kernels of the planned program -*- C++ -*-===//
//
// Writes one `extern "C" __global__` function per kernel of the planned
// program, from the kernel's op on tensors (what tfc-lower-to-kernels leaves)
// and the buffer types it reads and writes. Pointwise ops and fused pointwise
// groups are printed from the scalar functions every target shares
// (codegen/scalar), so they compute what the CPU computes. Floats compute in
// f32; bf16 is stored as its 16 bits and converted on load and store.
//
// Launch contract (for the runtime): a kernel keeps no state between calls.
// Most kernels are 1-D grid-stride loops over `threads` work items, correct
// for any grid and block size; a tiled kernel (the tensor-core products of
// kernels/gemm.cuh) names its exact launch shape instead.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_CUDA_CUDASOURCE_H
#define TFC_CODEGEN_CUDA_CUDASOURCE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <array>
#include <optional>
#include <string>

namespace tfc::cuda {

struct KernelSource {
  /// The kernel's CUDA C++, compiled after `#include "tfc/prelude.cuh"`
  /// (KernelLibrary.h).
  std::string code;
  /// Work items of the grid-stride loop: the launch needs at least one
  /// thread, and gains nothing past this many.
  int64_t threads = 0;
  /// A tiled kernel's exact launch: blocks, threads a block and dynamic
  /// shared bytes (tfc_device_launch_t). Unset for grid-stride kernels.
  struct Shape {
    std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
    int64_t sharedBytes = 0;
  };
  std::optional<Shape> launch;
  /// A matrix product that the host may run with its library (cuBLASLt)
  /// instead of this kernel (tfc_device_matmul_t in artifact_abi.h; the
  /// kernel's arguments are then A, B, the bias if any, and C). Unset where
  /// the kernel alone runs it (a GEMV, an operand broadcast in part).
  struct LibraryProduct {
    int32_t aType = 0, bType = 0, cType = 0, biasType = 0; // TFC_ABI_*
    bool transA = false, transB = false, tf32 = false;
    int64_t batch = 1, m = 0, n = 0, k = 0, strideA = 0, strideB = 0;
  };
  std::optional<LibraryProduct> product;
  /// Set when the op has a tiled kernel that this shape or type cannot take:
  /// why this one runs instead (tfc --report lists it).
  std::string fallback;
};

/// What the user chose for the kernels' numerics.
struct EmitOptions {
  /// f32 products on tensor cores through TF32 (`tfc --cuda-tf32`); exact
  /// f32 otherwise.
  bool tf32 = false;
};

/// The CUDA C++ of kernel `name` computing `op` from buffers of
/// `operandTypes` into buffers of `resultTypes` (the kernel's arguments, in
/// that order). An op or type the CUDA target has no kernel for yet is
/// reported at the op's location.
mlir::FailureOr<KernelSource>
emitKernelSource(llvm::StringRef name, mlir::Operation *op,
                 llvm::ArrayRef<mlir::MemRefType> operandTypes,
                 llvm::ArrayRef<mlir::MemRefType> resultTypes,
                 const EmitOptions &options = {});

} // namespace tfc::cuda

#endif // TFC_CODEGEN_CUDA_CUDASOURCE_H
