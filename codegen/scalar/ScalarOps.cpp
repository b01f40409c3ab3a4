//===- ScalarOps.cpp - the scalar function of every pointwise op ----------===//
//
// What a pointwise op computes on one element, as arith/math on scalars. Every
// target builds its pointwise kernels from these functions (the CPU inside
// linalg.generic bodies, CUDA by printing them as CUDA C), so an op means the
// same thing on every target.
//
//===----------------------------------------------------------------------===//
#include "codegen/scalar/ScalarOps.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace tfc::scalar {
namespace {

bool isFloat(Value v) { return llvm::isa<FloatType>(v.getType()); }

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = floatConst(b, loc, x.getType(), 1.0);
  Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, x));
  return b.create<arith::DivFOp>(loc, one, b.create<arith::AddFOp>(loc, one, e));
}

} // namespace

Value floatConst(OpBuilder &b, Location loc, Type type, double v) {
  return b.create<arith::ConstantOp>(loc, b.getFloatAttr(type, v));
}

Type computeType(Type elementType) {
  if (llvm::isa<FloatType>(elementType))
    return Float32Type::get(elementType.getContext());
  return elementType;
}

Value widen(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  if (t.isF16() || t.isBF16())
    return b.create<arith::ExtFOp>(loc, b.getF32Type(), v);
  return v;
}

Value narrow(OpBuilder &b, Location loc, Value v, Type to) {
  if (v.getType() == to)
    return v;
  return b.create<arith::TruncFOp>(loc, to, v);
}

Value castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromF = llvm::dyn_cast<FloatType>(from);
  auto toF = llvm::dyn_cast<FloatType>(to);
  // bf16 <-> f16: neither holds the other (bf16 has the range, f16 the
  // precision), so go through f32, which holds both exactly: one rounding.
  if (fromF && toF && fromF.getWidth() == toF.getWidth())
    return b.create<arith::TruncFOp>(
        loc, to, b.create<arith::ExtFOp>(loc, b.getF32Type(), v));
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

namespace {

/// A splat constant of the body as a scalar in the compute type.
Value splatScalar(OpBuilder &b, Location loc, ConstantOp c) {
  auto dense = llvm::cast<DenseElementsAttr>(c.getValue());
  Type elem = dense.getElementType();
  if (auto f = llvm::dyn_cast<FloatType>(elem))
    return floatConst(b, loc, computeType(elem),
                      dense.getSplatValue<APFloat>().convertToDouble());
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(elem, dense.getSplatValue<APInt>()));
}

} // namespace

/// Evaluates the body's ops (up to, not including, `stop`) on scalars. `env`
/// maps the block arguments to their scalars on entry and every value of the
/// body to its scalar on exit.
LogicalResult evaluateBody(OpBuilder &b, Location loc, Block &body,
                           Operation *stop, DenseMap<Value, Value> &env) {
  for (Operation &op : body.without_terminator()) {
    if (&op == stop)
      break;
    Value result;
    if (auto c = llvm::dyn_cast<ConstantOp>(op)) {
      result = splatScalar(b, loc, c);
    } else if (auto bc = llvm::dyn_cast<BroadcastToOp>(op)) {
      // The operand was already loaded broadcast into the iteration space.
      result = env.lookup(bc.getX());
    } else if (auto cast = llvm::dyn_cast<CastOp>(op)) {
      Type to = llvm::cast<RankedTensorType>(cast.getType()).getElementType();
      // Round to the target type, then compute on in the compute type.
      result = widen(b, loc, castScalar(b, loc, env.lookup(cast.getX()), to));
    } else if (PointwiseScalarFn fn = pointwiseScalarFn(&op)) {
      SmallVector<Value> args;
      for (Value v : op.getOperands())
        args.push_back(env.lookup(v));
      result = fn(b, loc, args);
    } else {
      return op.emitError("'")
             << op.getName() << "' cannot be part of a fused kernel";
    }
    env[op.getResult(0)] = result;
  }
  return success();
}

} // namespace tfc::scalar
