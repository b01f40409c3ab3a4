//===- KernelForm.h - the kernels of the planned program --------*- C++ -*-===//
//
// After tfc-lower-to-kernels, a kernel is a private func.func on memrefs
// marked `tfc.kernel` whose body is one tfc op on tensors: each operand read
// from an argument buffer with bufferization.to_tensor, each result written
// into an argument buffer with bufferization.materialize_in_destination. This
// is the contract between the target-neutral planner and each target's
// codegen phase; readTensorKernel is how a target reads it.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_PLAN_KERNELFORM_H
#define TFC_CODEGEN_PLAN_KERNELFORM_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace tfc::plan {

/// One kernel in the target-neutral form: the op it computes, the buffers
/// (arguments of the kernel) its operands are read from, and the buffers
/// its results are written to. An in-place update reads and writes the same
/// buffer.
struct TensorKernel {
  mlir::Operation *op = nullptr;
  llvm::SmallVector<mlir::Value> operands, results;
};

/// The kernels of `module` that have a body (a target's codegen phase
/// writes their code; declarations are done already).
llvm::SmallVector<mlir::func::FuncOp> kernelsWithBodies(mlir::ModuleOp module);

/// Reads `kernel`. std::nullopt when it already holds a target's code (no
/// to_tensor or materialize_in_destination); failure, with an error naming
/// the kernel, when its body is neither.
mlir::FailureOr<std::optional<TensorKernel>>
readTensorKernel(mlir::func::FuncOp kernel);

} // namespace tfc::plan

#endif // TFC_CODEGEN_PLAN_KERNELFORM_H
