//===- ScalarOps.h - the scalar function of every pointwise op --*- C++ -*-===//
//
// What each pointwise tfc op computes on one element, built as arith/math on
// scalars at an OpBuilder's insertion point. Shared by every target, so that
// an op means the same thing everywhere: the CPU target wraps these in
// linalg.generic bodies, the CUDA target prints them as CUDA C. Floats
// compute in f32 (16-bit floats are widened on load and rounded once at the
// store); integers in their own type.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_SCALAR_SCALAROPS_H
#define TFC_CODEGEN_SCALAR_SCALAROPS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace tfc::scalar {

/// The scalar function of a pointwise op: its arguments and result are in the
/// compute type. Null for ops that are not pointwise; tfc.cast is castScalar.
using PointwiseScalarFn = std::function<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;
PointwiseScalarFn pointwiseScalarFn(mlir::Operation *op);

/// Converts a scalar to `to` (float <-> float, float <-> signed int,
/// int <-> int), as tfc.cast does.
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                       mlir::Type to);

/// A float constant of `type` (f32, f16, bf16).
mlir::Value floatConst(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Type type, double v);

/// The type arithmetic is done in: f32 for every float type, the element
/// type itself for integers.
mlir::Type computeType(mlir::Type elementType);

/// Widens a 16-bit float to f32; other values are returned unchanged.
mlir::Value widen(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);

/// Rounds an f32 (from `widen`) back to the float type `to`; unchanged when
/// the types already agree.
mlir::Value narrow(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                   mlir::Type to);

/// Evaluates the ops of a tfc.fused body (up to, not including, `stop`) on
/// scalars: splat constants, broadcast_to (the operand was loaded broadcast
/// already), casts and pointwise ops. `env` maps the block arguments to their
/// scalars (in the compute type) on entry and every value of the body to its
/// scalar on exit. Fails with an error on an op that has no scalar function.
mlir::LogicalResult evaluateBody(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Block &body, mlir::Operation *stop,
                                 llvm::DenseMap<mlir::Value, mlir::Value> &env);

} // namespace tfc::scalar

#endif // TFC_CODEGEN_SCALAR_SCALAROPS_H
