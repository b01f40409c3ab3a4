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
// broadcasting, casts), LibraryKernels.cpp (calls into the kernel library),
// RowKernels.cpp (reductions, norms, softmax, cross-entropy, argmax) and
// DataMovementKernels.cpp (gathers, slices, transposes, caches, iota, rotary,
// dropout).
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_CPU_KERNELEMITTERS_H
#define TFC_CODEGEN_CPU_KERNELEMITTERS_H

#include "codegen/scalar/ScalarOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <functional>

namespace tfc::cpu {

// The scalar semantics of pointwise ops are shared by every target.
using scalar::castScalar;
using scalar::computeType;
using scalar::evaluateBody;
using scalar::floatConst;
using scalar::narrow;
using scalar::pointwiseScalarFn;
using scalar::PointwiseScalarFn;
using scalar::widen;

/// Emits the body computing `op` into `results` from `operands` (memrefs in
/// the op's operand and result order). The terminator is added by the caller.
/// On an op it cannot lower, emits an error on `op` and fails.
mlir::LogicalResult emitKernelBody(mlir::OpBuilder &b, mlir::Operation *op,
                                   mlir::ValueRange operands,
                                   mlir::ValueRange results);

/// Replaces the tensor-level body of planned kernel `kernel` (its op between
/// to_tensor of the operand buffers and materialize_in_destination into the
/// result buffers, as plan::readTensorKernel reads it: `op`, `operands`,
/// `results`) with CPU code (EmitKernels.cpp). The CUDA target uses it too,
/// for the kernels that run on the host: calls into the communicator.
mlir::LogicalResult emitHostKernel(mlir::func::FuncOp kernel,
                                   mlir::Operation *op,
                                   llvm::ArrayRef<mlir::Value> operands,
                                   llvm::ArrayRef<mlir::Value> results);

/// Writes `update` into `dest` at the position held by `position` (a 0-d i32
/// memref) along `dim`, reporting (not performing) an out-of-range write.
/// This is tfc.kv_cache_update without the copy of the old cache: the planner
/// updates a state buffer in place, or copies the cache into `dest` first.
mlir::LogicalResult emitKvCacheWrite(mlir::OpBuilder &b, mlir::Location loc,
                                     mlir::Value update, mlir::Value position,
                                     mlir::Value dest, int64_t dim);

/// tfc.kv_cache_update with `blocks` (a paged cache) written in place into
/// the pool `dest`: the kernel library's tfc_k_paged_kv_write, which reports
/// an out-of-range position or block as a run-time error.
void emitPagedKvWrite(mlir::OpBuilder &b, mlir::Operation *op,
                      mlir::Value update, mlir::Value position,
                      mlir::Value blocks, mlir::Value dest);

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

/// A tfc.fused op: one loop nest for its whole body (FusedKernels.cpp).
mlir::FailureOr<bool> emitFusedKernel(mlir::OpBuilder &b, mlir::Operation *op,
                                      mlir::ValueRange operands,
                                      mlir::ValueRange results);

/// The activations the kernel library applies in a linear's epilogue (the
/// codes of tfc_k_linear_ex_f32).
enum class LinearActivation : int32_t {
  None = 0,
  GeluTanh = 1,
  Relu = 2,
  Silu = 3,
  LeakyRelu = 4, // slope: emitLinearCall's activationParam
};

/// y = act(x @ weight + bias) + residual through the kernel library, the
/// epilogue applied to each output tile while it is in cache
/// (LibraryKernels.cpp). `bias` and `residual` may be null; activationParam
/// is LeakyRelu's alpha (unused by the other activations).
void emitLinearCall(mlir::OpBuilder &b, mlir::Operation *op, mlir::Value x,
                    mlir::Value weight, mlir::Value bias, mlir::Value residual,
                    mlir::Value y, bool transposeWeight,
                    LinearActivation activation, float activationParam = 0.f);

/// layer_norm, rms_norm, softmax or log_softmax (`op`, over the last
/// dimension) of one row of n elements of the flat f32 buffer `rows`,
/// starting at `base`, written back in place (RowKernels.cpp): the end of a
/// fused "row" kernel, whose prologue has just written the row there.
/// `weight` and `bias` are the norm's 1-D operands, or null.
mlir::LogicalResult emitRowOpInPlace(mlir::OpBuilder &b, mlir::Operation *op,
                                     mlir::Value rows, mlir::Value base,
                                     int64_t n, mlir::Value weight,
                                     mlir::Value bias);

/// How a reduction folds its values.
enum class ReduceKind { Sum, Mean, Max };

/// The value of the reduction's input at `indices` (one per input
/// dimension), in the compute type.
using ElementAt = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange indices)>;

/// For every kept index, folds `valueAt` over the reduced dimensions of
/// `inputShape` and stores into `output` (RowKernels.cpp). Accumulates in
/// the compute type of `inputElem`.
void emitReduceLoops(mlir::OpBuilder &b, mlir::Location loc, ReduceKind kind,
                     llvm::ArrayRef<int64_t> dims, bool keepdim,
                     llvm::ArrayRef<int64_t> inputShape, mlir::Type inputElem,
                     ElementAt valueAt, mlir::Value output);

//===----------------------------------------------------------------------===//
// Helpers shared by the emitters (KernelUtils.cpp)
//===----------------------------------------------------------------------===//

/// An index constant.
mlir::Value indexConst(mlir::OpBuilder &b, mlir::Location loc, int64_t v);

/// Declares (once per module) an external function `name` with the given
/// signature and returns its symbol; memref arguments become bare pointers
/// under the bare-pointer calling convention used for kernels. `anchor` is the
/// module or any op inside it.
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

/// Calls the kernel library's tfc_kernels_error(message); the entry reports
/// the error after the call. `anchor` is the module or any op inside it; the
/// builder may point into a block not yet attached to an op (an scf.if branch
/// being built).
void emitRuntimeError(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Operation *anchor, llvm::StringRef message);

/// The map from an iteration space of `outShape` to an operand of `shape`
/// under NumPy broadcasting (aligned from the right; a size-1 operand
/// dimension reads index 0).
mlir::AffineMap broadcastMap(mlir::MLIRContext *ctx,
                             llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> outShape);

/// `memref` viewed as 1-D (memref.collapse_shape; a 0-d memref becomes
/// memref<1x...>), so that kernels can address it with one flat index.
mlir::Value flatten(mlir::OpBuilder &b, mlir::Location loc, mlir::Value memref);

/// Copies `src` into `dst` (same shape, any strided layout) element by
/// element. Unlike memref.copy this needs no runtime support for strided
/// layouts: it lowers to loops.
void copyElements(mlir::OpBuilder &b, mlir::Location loc, mlir::Value src,
                  mlir::Value dst);

/// The body of a loop: the builder, the location and the induction variable.
using LoopBody =
    llvm::function_ref<void(mlir::OpBuilder &, mlir::Location, mlir::Value)>;
/// The body of a loop carrying values: returns the values for the next
/// iteration (as many as `inits`).
using ReductionBody = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder &, mlir::Location, mlir::Value, mlir::ValueRange)>;

/// scf.for %i = 0 to `count` step 1 { body(%i) }.
void forRange(mlir::OpBuilder &b, mlir::Location loc, int64_t count,
              LoopBody body);

/// scf.parallel %i = 0 to `count` { body(%i) }: as forRange, for iterations
/// that are independent (each writes only its own elements), which
/// tfc-cpu-parallel-loops may split over threads.
void parallelRange(mlir::OpBuilder &b, mlir::Location loc, int64_t count,
                   LoopBody body);

/// scf.for %i = `start` to `count` carrying `inits`; returns the final values.
llvm::SmallVector<mlir::Value> reduceRange(mlir::OpBuilder &b,
                                           mlir::Location loc, int64_t start,
                                           int64_t count,
                                           mlir::ValueRange inits,
                                           ReductionBody body);

/// A dimension `dim` of a row-major `shape` splits the flat index space into
/// [outer, size, inner]: element (o, j, i) is at o*size*inner + j*inner + i.
/// The elements of one "line" along `dim` are base + j * inner.
struct DimSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
DimSplit splitAtDim(llvm::ArrayRef<int64_t> shape, int64_t dim);

/// Calls body(base) for every line along the split dimension, where `base` is
/// the flat index of the line's first element. Lines are independent
/// (parallel loops): the body must write only its own line.
void forEachLine(mlir::OpBuilder &b, mlir::Location loc, const DimSplit &split,
                 LoopBody body);

/// base + j * stride, in index arithmetic.
mlir::Value lineIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value base,
                      mlir::Value j, int64_t stride);

/// The element type of a memref value.
mlir::Type elementTypeOf(mlir::Value memref);

/// The shape of a memref value.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value memref);

} // namespace tfc::cpu

#endif // TFC_CODEGEN_CPU_KERNELEMITTERS_H
