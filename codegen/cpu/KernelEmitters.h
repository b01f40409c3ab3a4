//===- KernelEmitters.h - one CPU kernel per tfc op -------------*- C++ -*-===//
//
// A kernel is a private func.func on memrefs: the op's operand buffers, then its
// result buffers, all static, row-major, identity layout. The emitters below
// write the body of such a function at the builder's insertion point, in
// upstream dialects (linalg on memrefs, scf, arith, math, memref) or as a call
// of the hand-written kernel library (codegen/cpu/kernels/tfc_kernels.h) for
// matmul, attention and sampling. tfc-lower-to-kernels creates the functions
// and the calls; the standard MLIR -> LLVM pipeline lowers what they contain.
//
// Families live in their own files: ElementwiseKernels.cpp (pointwise ops with
// broadcasting, casts, dropout, iota), LibraryKernels.cpp (calls into the
// kernel library), and the rest as they are added.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_CPU_KERNELEMITTERS_H
#define TFC_CODEGEN_CPU_KERNELEMITTERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

namespace tfc::cpu {

/// Emits the body computing `op` into `results` from `operands` (memrefs in
/// the op's operand and result order). The terminator is added by the caller.
/// On an op it cannot lower, emits an error on `op` and fails.
mlir::LogicalResult emitKernelBody(mlir::OpBuilder &b, mlir::Operation *op,
                                   mlir::ValueRange operands,
                                   mlir::ValueRange results);

/// Writes `update` into `dest` at the position held by `position` (a 0-d i32
/// memref) along `dim`, reporting (not performing) an out-of-range write.
/// This is tfc.kv_cache_update without the copy of the old cache: the planner
/// updates a state buffer in place, or copies the cache into `dest` first.
mlir::LogicalResult emitKvCacheWrite(mlir::OpBuilder &b, mlir::Location loc,
                                     mlir::Value update, mlir::Value position,
                                     mlir::Value dest, int64_t dim);

// Families (each in its own file), dispatched by emitKernelBody. Each returns
// failure() without a diagnostic when `op` is not in its family.
mlir::FailureOr<bool> emitElementwiseKernel(mlir::OpBuilder &b,
                                            mlir::Operation *op,
                                            mlir::ValueRange operands,
                                            mlir::ValueRange results);
mlir::FailureOr<bool> emitLibraryKernel(mlir::OpBuilder &b, mlir::Operation *op,
                                        mlir::ValueRange operands,
                                        mlir::ValueRange results);
mlir::FailureOr<bool> emitRowKernel(mlir::OpBuilder &b, mlir::Operation *op,
                                    mlir::ValueRange operands,
                                    mlir::ValueRange results);
mlir::FailureOr<bool> emitDataMovementKernel(mlir::OpBuilder &b,
                                             mlir::Operation *op,
                                             mlir::ValueRange operands,
                                             mlir::ValueRange results);

//===----------------------------------------------------------------------===//
// Helpers shared by the emitters (KernelUtils.cpp)
//===----------------------------------------------------------------------===//

/// An index constant.
mlir::Value indexConst(mlir::OpBuilder &b, mlir::Location loc, int64_t v);

/// A float constant of `type` (f32, f16, bf16).
mlir::Value floatConst(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Type type, double v);

/// Declares (once per module) an external function `name` with the given
/// signature and returns its symbol; memref arguments become bare pointers
/// under the bare-pointer calling convention used for kernels.
mlir::func::FuncOp declareExternal(mlir::OpBuilder &b, mlir::Operation *anchor,
                                   llvm::StringRef name,
                                   mlir::FunctionType type);

/// Loads the value of a 0-d memref.
mlir::Value loadScalar(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value memref);

/// The data pointer of a memref as an !llvm.ptr, for calls into the kernel
/// library (whose declarations take pointers, whatever the buffer's shape).
mlir::Value pointerOf(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value memref);

/// Calls the kernel library's tfc_kernels_error(message).
void emitRuntimeError(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Operation *anchor, llvm::StringRef message);

} // namespace tfc::cpu

#endif // TFC_CODEGEN_CPU_KERNELEMITTERS_H
