//===- HostToLLVM.h - entries and kernels to the LLVM dialect ---*- C++ -*-===//
//
// The `llvm` phase every target shares: its host code (the entries, and on
// the CPU the kernels too) from memref, scf and arith to the LLVM dialect,
// with the bare-pointer calling convention of the artifact ABI. A target adds
// its own passes at the four points it needs (Target::buildLowerToLLVMPipeline).
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_TARGET_HOSTTOLLVM_H
#define TFC_CODEGEN_TARGET_HOSTTOLLVM_H

#include <functional>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace tfc {

struct HostToLLVMSteps {
  using Add = std::function<void(mlir::OpPassManager &)>;
  /// First, on memrefs and loops as codegen left them (the CPU: merging
  /// aliased arguments, splitting parallel loops over the threads).
  Add atStart;
  /// After structured control flow became blocks, before memrefs become
  /// LLVM (the CPU: math to polynomials, libm calls and intrinsics).
  Add afterControlFlow;
  /// After functions became LLVM functions (the CPU: math's intrinsics).
  Add afterFunctions;
  /// On the LLVM dialect, before the final canonicalization (the CPU:
  /// parallel launches through the runtime; CUDA: kernel launches).
  Add onLLVM;
};

/// Adds the shared lowering to `pm`, with `steps` at their points.
void buildHostToLLVMPipeline(mlir::OpPassManager &pm,
                             const HostToLLVMSteps &steps);

} // namespace tfc

#endif // TFC_CODEGEN_TARGET_HOSTTOLLVM_H
