//===- PolynomialMath.cpp - the tfc-polynomial-math pass ------------------===//
//
// tanh and erf as polynomial approximations in arith (MLIR's, from Eigen),
// so that the loops around them vectorize instead of calling libm per
// element; their fused multiply-adds as LLVM's fma intrinsic. Other math ops
// already lower to LLVM intrinsics.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tfc::cpu {
#define GEN_PASS_DEF_TFCPOLYNOMIALMATH
#include "codegen/cpu/Passes.h.inc"
} // namespace tfc::cpu

using namespace mlir;

namespace {

/// exp(x) for f32 (scalar or vector) in arith and LLVM's fma and floor: the
/// same instructions whether LLVM vectorizes the loop or not, so a result
/// does not depend on which iterations of a loop take the vector body
/// (a loop split over threads stays bit-identical). x = n ln2 + r with
/// |r| <= ln2/2 (Cody-Waite: ln2 in two parts), exp(r) by Cephes' degree-6
/// polynomial (about 1 ulp), times 2^n built in the exponent bits, as two
/// factors so that n = 128 does not overflow them. Above 88.72 the result is
/// +inf, below -87.34 it is 0 (the denormal range flushed), NaN stays NaN.
Value expF32(OpBuilder &b, Location loc, Value x) {
  Type type = x.getType();
  Type intType = b.getI32Type();
  if (auto vector = llvm::dyn_cast<VectorType>(type))
    intType = VectorType::get(vector.getShape(), intType);
  // A constant of `t`, a splat where `t` is a vector.
  auto splat = [&](Type t, TypedAttr scalar) -> Value {
    if (auto vector = llvm::dyn_cast<VectorType>(t))
      return b.create<arith::ConstantOp>(
          loc, DenseElementsAttr::get(vector, Attribute(scalar)));
    return b.create<arith::ConstantOp>(loc, scalar);
  };
  auto splatF = [&](double v) { return splat(type, b.getF32FloatAttr(v)); };
  auto splatI = [&](int32_t v) {
    return splat(intType, b.getI32IntegerAttr(v));
  };
  auto fma = [&](Value a, Value m, Value c) -> Value {
    return b.create<LLVM::FMAOp>(loc, a, m, c);
  };
  const double hi = 88.72283935546875, lo = -87.33654022216797;
  Value xc = b.create<arith::MinNumFOp>(
      loc, b.create<arith::MaxNumFOp>(loc, x, splatF(lo)), splatF(hi));
  Value n = b.create<LLVM::FFloorOp>(
      loc, fma(xc, splatF(1.44269504088896341), splatF(0.5)));
  Value r = fma(n, splatF(-0.693359375), xc);
  r = fma(n, splatF(2.12194440e-4), r);
  Value p = splatF(1.9875691500e-4);
  for (double c : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                   1.6666665459e-1, 5.0000001201e-1})
    p = fma(p, r, splatF(c));
  Value r2 = b.create<arith::MulFOp>(loc, r, r);
  p = fma(p, r2, b.create<arith::AddFOp>(loc, r, splatF(1.0)));
  Value ni = b.create<arith::FPToSIOp>(loc, intType, n);
  Value n1 = b.create<arith::ShRSIOp>(loc, ni, splatI(1));
  Value n2 = b.create<arith::SubIOp>(loc, ni, n1);
  auto pow2 = [&](Value e) -> Value {
    Value bits = b.create<arith::ShLIOp>(
        loc, b.create<arith::AddIOp>(loc, e, splatI(127)), splatI(23));
    return b.create<arith::BitcastOp>(loc, type, bits);
  };
  Value y = b.create<arith::MulFOp>(
      loc, b.create<arith::MulFOp>(loc, p, pow2(n1)), pow2(n2));
  Value over =
      b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, x, splatF(hi));
  Value under =
      b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, splatF(lo));
  Value nan = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, x, x);
  y = b.create<arith::SelectOp>(
      loc, over, splatF(std::numeric_limits<double>::infinity()), y);
  y = b.create<arith::SelectOp>(loc, under, splatF(0.0), y);
  return b.create<arith::SelectOp>(loc, nan, x, y);
}

struct PolynomialMathPass
    : public tfc::cpu::impl::TfcPolynomialMathBase<PolynomialMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateTanhPattern(patterns);
    populatePolynomialApproximateErfPattern(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns))))
      return signalPassFailure();
    // exp: MLIR 19 approximates it only together with log, sin and the rest;
    // ours alone (expF32). libm's expf would be a scalar call per element.
    getOperation().walk([](math::ExpOp exp) {
      if (!getElementTypeOrSelf(exp.getType()).isF32())
        return;
      OpBuilder builder(exp);
      exp.replaceAllUsesWith(expF32(builder, exp.getLoc(), exp.getOperand()));
      exp.erase();
    });
    // The approximations are built of math.fma, which convert-math-to-libm
    // (next in the pipeline) would turn into calls of libm's scalar fmaf:
    // through the PLT, once per element, and the loop no longer vectorizes.
    // LLVM's fma intrinsic is one vfmadd, scalar or vector.
    getOperation().walk([](math::FmaOp fma) {
      OpBuilder builder(fma);
      auto intrinsic = builder.create<LLVM::FMAOp>(
          fma.getLoc(), fma.getA(), fma.getB(), fma.getC());
      fma.replaceAllUsesWith(intrinsic.getResult());
      fma.erase();
    });
  }
};

} // namespace
