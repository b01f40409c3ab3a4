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

struct PolynomialMathPass
    : public tfc::cpu::impl::TfcPolynomialMathBase<PolynomialMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateTanhPattern(patterns);
    populatePolynomialApproximateErfPattern(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns))))
      return signalPassFailure();
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
