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

bool isFloat(Value v) { return llvm::isa<FloatType>(v.getType()); }

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = floatConst(b, loc, x.getType(), 1.0);
  Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, x));
  return b.create<arith::DivFOp>(loc, one, b.create<arith::AddFOp>(loc, one, e));
}

} // namespace

Value castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromF = llvm::dyn_cast<FloatType>(from);
  auto toF = llvm::dyn_cast<FloatType>(to);
  if (fromF && toF)
    return fromF.getWidth() < toF.getWidth()
               ? b.create<arith::ExtFOp>(loc, to, v).getResult()
               : b.create<arith::TruncFOp>(loc, to, v).getResult();
  if (fromF)
    return b.create<arith::FPToSIOp>(loc, to, v);
  if (toF)
    return b.create<arith::SIToFPOp>(loc, to, v);
  return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
             ? b.create<arith::ExtSIOp>(loc, to, v).getResult()
             : b.create<arith::TruncIOp>(loc, to, v).getResult();
}

PointwiseScalarFn pointwiseScalarFn(Operation *op) {
  auto binary = [&](auto floatFn, auto intFn) -> PointwiseScalarFn {
    return [floatFn, intFn](OpBuilder &nb, Location l, ValueRange a) -> Value {
      if (isFloat(a[0]))
        return floatFn(nb, l, a[0], a[1]);
      return intFn(nb, l, a[0], a[1]);
    };
  };
  auto unary = [&](auto fn) -> PointwiseScalarFn {
    return [fn](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return fn(nb, l, a[0]);
    };
  };
#define TFC_BIN(F, I)                                                          \
  binary(                                                                      \
      [](OpBuilder &nb, Location l, Value x, Value y) -> Value {               \
        return nb.create<F>(l, x, y);                                          \
      },                                                                       \
      [](OpBuilder &nb, Location l, Value x, Value y) -> Value {               \
        return nb.create<I>(l, x, y);                                          \
      })
#define TFC_UN(F)                                                              \
  unary([](OpBuilder &nb, Location l, Value x) -> Value {                      \
    return nb.create<F>(l, x);                                                 \
  })

  return llvm::TypeSwitch<Operation *, PointwiseScalarFn>(op)
      .Case([&](AddOp) { return TFC_BIN(arith::AddFOp, arith::AddIOp); })
      .Case([&](SubOp) { return TFC_BIN(arith::SubFOp, arith::SubIOp); })
      .Case([&](MulOp) { return TFC_BIN(arith::MulFOp, arith::MulIOp); })
      .Case([&](DivOp) { return TFC_BIN(arith::DivFOp, arith::DivSIOp); })
      .Case([&](MaxOp) { return TFC_BIN(arith::MaximumFOp, arith::MaxSIOp); })
      .Case([&](MinOp) { return TFC_BIN(arith::MinimumFOp, arith::MinSIOp); })
      .Case([&](PowOp) { return TFC_BIN(math::PowFOp, math::IPowIOp); })
      .Case([&](ExpOp) { return TFC_UN(math::ExpOp); })
      .Case([&](LogOp) { return TFC_UN(math::LogOp); })
      .Case([&](SqrtOp) { return TFC_UN(math::SqrtOp); })
      .Case([&](RsqrtOp) {
        // 1 / sqrt(x): math.rsqrt has no scalar lowering to LLVM in MLIR 19.
        return unary([](OpBuilder &nb, Location l, Value x) -> Value {
          return nb.create<arith::DivFOp>(l, floatConst(nb, l, x.getType(), 1.0),
                                          nb.create<math::SqrtOp>(l, x));
        });
      })
      .Case([&](TanhOp) { return TFC_UN(math::TanhOp); })
      .Case([&](SinOp) { return TFC_UN(math::SinOp); })
      .Case([&](CosOp) { return TFC_UN(math::CosOp); })
      .Case([&](SigmoidOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          return sigmoid(nb, l, x);
        });
      })
      .Case([&](NegOp) {
        return unary([](OpBuilder &nb, Location l, Value x) -> Value {
          if (isFloat(x))
            return nb.create<arith::NegFOp>(l, x);
          Value zero = nb.create<arith::ConstantOp>(
              l, nb.getIntegerAttr(x.getType(), 0));
          return nb.create<arith::SubIOp>(l, zero, x);
        });
      })
      .Case([&](AbsOp) {
        return unary([](OpBuilder &nb, Location l, Value x) -> Value {
          if (isFloat(x))
            return nb.create<math::AbsFOp>(l, x);
          // x < 0 ? -x : x; math.absi has no lowering to LLVM in MLIR 19.
          Value zero = nb.create<arith::ConstantOp>(
              l, nb.getIntegerAttr(x.getType(), 0));
          Value negative =
              nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, x, zero);
          return nb.create<arith::SelectOp>(
              l, negative, nb.create<arith::SubIOp>(l, zero, x), x);
        });
      })
      .Case([&](StepOp) {
        return unary([](OpBuilder &nb, Location l, Value x) -> Value {
          Value zero = floatConst(nb, l, x.getType(), 0.0);
          Value positive =
              nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGT, x, zero);
          return nb.create<arith::SelectOp>(
              l, positive, floatConst(nb, l, x.getType(), 1.0), zero);
        });
      })
      .Case([&](ReluOp) {
        return unary([](OpBuilder &nb, Location l, Value x) -> Value {
          Value zero = floatConst(nb, l, x.getType(), 0.0);
          // maximumf propagates NaN, as PyTorch's relu does.
          return nb.create<arith::MaximumFOp>(l, x, zero);
        });
      })
      .Case([&](SiluOp) {
        return unary([](OpBuilder &nb, Location l, Value x) -> Value {
          return nb.create<arith::MulFOp>(l, x, sigmoid(nb, l, x));
        });
      })
      .Case([&](GeluOp gelu) {
        bool tanhApprox = gelu.getApproximate() == GeluApproximation::Tanh;
        return unary([tanhApprox](OpBuilder &nb, Location l, Value x) -> Value {
          Type t = x.getType();
          Value half = floatConst(nb, l, t, 0.5);
          Value one = floatConst(nb, l, t, 1.0);
          Value inner;
          if (tanhApprox) {
            // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            Value x3 = nb.create<arith::MulFOp>(
                l, x, nb.create<arith::MulFOp>(l, x, x));
            Value poly = nb.create<arith::AddFOp>(
                l, x,
                nb.create<arith::MulFOp>(l, floatConst(nb, l, t, 0.044715),
                                         x3));
            inner = nb.create<math::TanhOp>(
                l, nb.create<arith::MulFOp>(
                       l, floatConst(nb, l, t, std::sqrt(2.0 / M_PI)), poly));
          } else {
            // 0.5 x (1 + erf(x / sqrt(2)))
            inner = nb.create<math::ErfOp>(
                l, nb.create<arith::MulFOp>(
                       l, x, floatConst(nb, l, t, 1.0 / std::sqrt(2.0))));
          }
          return nb.create<arith::MulFOp>(
              l, nb.create<arith::MulFOp>(l, half, x),
              nb.create<arith::AddFOp>(l, one, inner));
        });
      })
      .Case([&](LeakyReluOp leaky) {
        double alpha = leaky.getAlpha().convertToDouble();
        return unary([alpha](OpBuilder &nb, Location l, Value x) -> Value {
          Value zero = floatConst(nb, l, x.getType(), 0.0);
          Value scaled = nb.create<arith::MulFOp>(
              l, x, floatConst(nb, l, x.getType(), alpha));
          Value positive = nb.create<arith::CmpFOp>(
              l, arith::CmpFPredicate::OGT, x, zero);
          return nb.create<arith::SelectOp>(l, positive, x, scaled);
        });
      })
      .Default([](Operation *) { return PointwiseScalarFn(); });
#undef TFC_BIN
#undef TFC_UN
}

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
