//===- Autocast.cpp - the tfc-autocast pass -------------------------------===//
//
// Mixed precision as torch.autocast does it, on the entries the trainer
// runs (the loss entries), before tfc-autodiff differentiates them: the ops
// on PyTorch's lower-precision list (matmul, linear, attention) take their
// operands in bf16/f16 and their results are cast back to f32; everything
// else (embeddings, norms, softmax, gelu, residual adds, cross-entropy, the
// loss) stays f32, and so do the parameters (the master weights) and, later,
// the optimizer's moments. The backward inherits the same split through
// tfc.cast's VJP: the gradient reaching a 16-bit matmul is rounded to 16
// bits, the matmul's own VJP runs in 16 bits, and the gradients it returns
// are widened to f32 before they accumulate.
//
// Casting each result back to f32 at once (PyTorch keeps it 16-bit until an
// f32-list op or a promotion widens it) changes nothing that the next 16-bit
// op sees: f32 -> bf16 of a widened bf16 value is exact. Only the ops in
// between (gelu, slices) compute on the exact f32 widening of a 16-bit value
// and round once, where PyTorch rounds their result to 16 bits too.
//
// f16: its range ends at 65504, so the gradients are computed for
// loss x S (a dynamic loss scale, GradScaler's) and divided by S afterwards;
// the pass declares the scale as module state for tfc-autodiff and
// tfc-train-step (dialects/tfc/AttrNames.h).
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

#define DEBUG_TYPE "tfc-autocast"

namespace tfc {
#define GEN_PASS_DEF_TFCAUTOCAST
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

/// PyTorch's autocast lower-precision list, as far as tfc has the ops.
bool isLowPrecisionOp(Operation *op) {
  return llvm::isa<MatmulOp, LinearOp, AttentionOp>(op);
}

RankedTensorType f32Tensor(Type t) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getElementType().isF32() ? tensor : RankedTensorType();
}

struct AutocastPass : public tfc::impl::TfcAutocastBase<AutocastPass> {
  using TfcAutocastBase::TfcAutocastBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    Type low;
    if (precision == "bf16")
      low = BFloat16Type::get(context);
    else if (precision == "f16")
      low = Float16Type::get(context);
    else {
      module.emitError("tfc-autocast: unknown precision '")
          << precision << "' (expected bf16 or f16)";
      return signalPassFailure();
    }
    if (!(initScale > 0) || !std::isfinite(initScale.getValue())) {
      module.emitError("tfc-autocast: init-scale must be a positive finite "
                       "number, got ")
          << initScale.getValue();
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> entries;
    for (StringRef name : {"loss", "loss_train"})
      if (auto f = module.lookupSymbol<func::FuncOp>(name); f && !f.isExternal())
        entries.push_back(f);
    if (entries.empty()) {
      module.emitError("tfc-autocast: no 'loss' or 'loss_train' entry to "
                       "compute in mixed precision");
      return signalPassFailure();
    }
    for (func::FuncOp f : entries) {
      // Only the 16-bit ops are casts' business; a module already in 16 bits
      // (tfc-convert-precision) is a different transformation.
      WalkResult walked = f.walk([&](Operation *op) {
        if (!isLowPrecisionOp(op))
          return WalkResult::advance();
        if (llvm::any_of(op->getResultTypes(),
                         [](Type t) { return !f32Tensor(t); })) {
          op->emitOpError("tfc-autocast: expects f32 results (is the module "
                          "already converted to 16 bits?)");
          return WalkResult::interrupt();
        }
        cast(op, low);
        return WalkResult::advance();
      });
      if (walked.wasInterrupted())
        return signalPassFailure();
    }
    if (low.isF16())
      declareLossScale(module);
  }

  /// op(x...) -> cast(op(cast(x)...)) with 16-bit operands and results.
  void cast(Operation *op, Type low) {
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands())
      if (auto t = f32Tensor(operand.get().getType()))
        operand.set(b.create<CastOp>(op->getLoc(),
                                     RankedTensorType::get(t.getShape(), low),
                                     operand.get()));
    b.setInsertionPointAfter(op);
    for (Value result : op->getResults()) {
      auto t = f32Tensor(result.getType());
      result.setType(RankedTensorType::get(t.getShape(), low));
      auto back = b.create<CastOp>(op->getLoc(), t, result);
      result.replaceAllUsesExcept(back, back);
    }
  }

  void declareLossScale(ModuleOp module) {
    OpBuilder b(module.getContext());
    b.setInsertionPointToStart(module.getBody());
    for (Operation &op : module.getBody()->getOperations())
      if (llvm::isa<ParamOp, StateOp>(op))
        b.setInsertionPointAfter(&op);
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    // %.17g: the scale exactly (a power of two stays one).
    std::string init =
        llvm::formatv("constant({0})", llvm::format("%.17g", initScale.getValue()))
            .str();
    if (!module.lookupSymbol(attr::kLossScaleState))
      b.create<StateOp>(module.getLoc(), attr::kLossScaleState, scalar, init);
    if (!module.lookupSymbol(attr::kGoodStepsState))
      b.create<StateOp>(module.getLoc(), attr::kGoodStepsState, scalar, "zeros");
  }
};

} // namespace
