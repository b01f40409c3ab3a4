//===- ElementwiseKernels.cpp - pointwise ops as linalg.generic -----------===//
//
// Every pointwise op becomes one linalg.generic on memrefs whose indexing maps
// encode NumPy broadcasting (a size-1 operand dimension reads index 0).
// 16-bit floats compute in f32 and round once at the store.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/KernelEmitters.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace tfc::cpu {
namespace {

using ScalarFn =
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange args)>;

/// out[i] = fn(in0[bcast(i)], in1[bcast(i)], ...). Half-precision floats are
/// widened to f32 for `fn` when `widen` is set.
void emitPointwise(OpBuilder &b, Location loc, ValueRange inputs, Value output,
                   ScalarFn fn, bool widen = true) {
  auto outType = llvm::cast<MemRefType>(output.getType());
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(
        ctx, llvm::cast<MemRefType>(in.getType()).getShape(),
        outType.getShape()));
  maps.push_back(AffineMap::getMultiDimIdentityMap(outType.getRank(), ctx));
  SmallVector<utils::IteratorType> iterators(outType.getRank(),
                                             utils::IteratorType::parallel);
  b.create<linalg::GenericOp>(
      loc, inputs, ValueRange{output}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> ins(args.drop_back());
        Type outElem = args.back().getType();
        bool half = widen && (outElem.isF16() || outElem.isBF16());
        if (half)
          for (Value &v : ins)
            if (llvm::isa<FloatType>(v.getType()))
              v = nb.create<arith::ExtFOp>(nloc, nb.getF32Type(), v);
        Value r = fn(nb, nloc, ins);
        if (half && r.getType() != outElem)
          r = nb.create<arith::TruncFOp>(nloc, outElem, r);
        nb.create<linalg::YieldOp>(nloc, r);
      });
}

} // namespace

FailureOr<bool> emitElementwiseKernel(OpBuilder &b, Operation *op,
                                      ValueRange operands, ValueRange results) {
  Location loc = op->getLoc();
  if (llvm::isa<CastOp>(op)) {
    Type to = llvm::cast<MemRefType>(results[0].getType()).getElementType();
    emitPointwise(
        b, loc, operands, results[0],
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return castScalar(nb, l, a[0], to);
        },
        /*widen=*/false);
    return true;
  }
  PointwiseScalarFn fn = pointwiseScalarFn(op);
  if (!fn)
    return failure();
  emitPointwise(b, loc, operands, results[0], fn);
  return true;
}

} // namespace tfc::cpu
