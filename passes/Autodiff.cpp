//===- Autodiff.cpp - the tfc-autodiff pass -------------------------------===//
//
// Reverse-mode differentiation on the graph. The forward ops are cloned into
// `<entry>_grad`; then, walking them backwards, each op's VJP turns the
// gradients of its results into gradients of its operands, appended after
// the forward ops. Gradients reaching a `tfc.load` of a trainable parameter
// accumulate into that parameter's gradient.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

#define DEBUG_TYPE "tfc-autodiff"

namespace tfc {
#define GEN_PASS_DEF_TFCAUTODIFF
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

bool isFloatTensor(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && llvm::isa<FloatType>(t.getElementType());
}

Value zerosLike(OpBuilder &b, Location loc, Type type) {
  auto t = llvm::cast<RankedTensorType>(type);
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
}

/// x + y, two contributions to one gradient. Where one is a tfc.embedding_grad
/// without `init` that nothing reads yet and the other has its type (a tied
/// input embedding and output projection: GPT-2's wte), the other becomes its
/// init: one scatter onto that gradient instead of a zeroed table-sized
/// buffer, then an add reading two of them and writing a third.
Value addGradients(OpBuilder &b, Location loc, Value x, Value y) {
  for (auto [scatter, other] : {std::pair{x, y}, std::pair{y, x}}) {
    auto e = scatter.getDefiningOp<EmbeddingGradOp>();
    if (!e || e.getInit() || !scatter.use_empty() ||
        other.getType() != e.getType())
      continue;
    Value folded = b.create<EmbeddingGradOp>(loc, e.getType(), e.getGrad(),
                                             e.getIds(), other);
    e.erase();
    return folded;
  }
  return b.create<AddOp>(loc, x, y);
}

/// Gives every op inserted while `stage` is set that stage and the backward
/// mark (see attr::kStage).
struct StageTagger : public OpBuilder::Listener {
  Attribute stage;
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    if (!stage)
      return;
    op->setAttr(attr::kStage, stage);
    op->setAttr(attr::kBackward, UnitAttr::get(op->getContext()));
  }
};

struct AutodiffPass : public tfc::impl::TfcAutodiffBase<AutodiffPass> {
  using TfcAutodiffBase::TfcAutodiffBase;
  std::string lossEntry;

  void runOnOperation() override {
    // The option stays as the user gave it; the default is resolved per
    // module.
    lossEntry = trainingLossEntry(getOperation(), entry);
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(lossEntry);
    if (!forward || forward.isExternal()) {
      module.emitError("tfc-autodiff: no entry function '") << lossEntry << "'";
      return signalPassFailure();
    }
    if (failed(differentiate(module, forward)))
      signalPassFailure();
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp forward) {
    auto resultTypes = forward.getResultTypes();
    if (resultTypes.size() != 1 ||
        llvm::cast<RankedTensorType>(resultTypes[0]).getRank() != 0 ||
        !isFloatTensor(forward.getBody().front().getTerminator()->getOperand(0)))
      return forward.emitError("tfc-autodiff: '")
             << lossEntry << "' must return exactly one 0-d float loss";
    std::string gradName = lossEntry + "_grad";
    if (module.lookupSymbol(gradName))
      return forward.emitError("tfc-autodiff: '")
             << gradName << "' already exists";

    SmallVector<ParamOp> trainable;
    for (auto p : module.getOps<ParamOp>())
      if (!p.getFrozen())
        trainable.push_back(p);

    // The gradient function: same inputs; loss, then one gradient per
    // trainable parameter.
    SmallVector<Type> results = {resultTypes[0]};
    for (ParamOp p : trainable)
      results.push_back(p.getType());
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(forward);
    auto grad = b.create<func::FuncOp>(
        forward.getLoc(), gradName,
        b.getFunctionType(forward.getArgumentTypes(), results));
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      grad.setArgAttrs(i, forward.getArgAttrDict(i));
    grad.setResultAttrs(0, forward.getResultAttrDict(0));
    for (auto [i, p] : llvm::enumerate(trainable)) {
      grad.setResultAttr(i + 1, attr::kName,
                         b.getStringAttr("grad." + p.getSymName()));
      grad.setResultAttr(i + 1, attr::kGradOf, p.getSymNameAttr());
    }

    // Forward: a clone of the entry's body.
    Block *body = grad.addEntryBlock();
    IRMapping mapping;
    for (auto [from, to] : llvm::zip(forward.getArguments(), body->getArguments()))
      mapping.map(from, to);
    b.setInsertionPointToEnd(body);
    SmallVector<Operation *> forwardOps;
    for (Operation &op : forward.getBody().front().without_terminator()) {
      if (llvm::isa<StoreOp>(op))
        return op.emitError("tfc-autodiff: the loss entry writes state; "
                            "differentiate a function without tfc.store");
      forwardOps.push_back(b.clone(op, mapping));
    }
    Value loss =
        mapping.lookup(forward.getBody().front().getTerminator()->getOperand(0));

    // Backward.
    DenseMap<Value, Value> grads;
    llvm::MapVector<StringAttr, Value> paramGrads;
    auto accumulate = [&](DenseMap<Value, Value> &map, Value key, Value g) {
      Value &slot = map[key];
      slot = slot ? addGradients(b, g.getLoc(), slot, g) : g;
    };
    auto lossType = llvm::cast<RankedTensorType>(loss.getType());
    // f16 mixed precision (tfc-autocast): the backward starts from the loss
    // scale S instead of 1, so small gradients stay above f16's smallest
    // normal, and every parameter gradient is divided by S at the end.
    Value lossScale;
    auto scaleState = module.lookupSymbol<StateOp>(attr::kLossScaleState);
    if (scaleState) {
      lossScale = b.create<LoadOp>(loss.getLoc(), scaleState.getType(),
                                   attr::kLossScaleState);
      grads[loss] = lossScale.getType() == lossType
                        ? lossScale
                        : b.create<CastOp>(loss.getLoc(), lossType, lossScale);
    } else {
      grads[loss] = b.create<ConstantOp>(
          loss.getLoc(),
          DenseElementsAttr::get(lossType,
                                 b.getFloatAttr(lossType.getElementType(), 1.0)));
    }
    DenseSet<StringAttr> trainableNames;
    for (ParamOp p : trainable)
      trainableNames.insert(p.getSymNameAttr());

    // Activity: only values computed from a trainable parameter need a
    // gradient. Constants, positions and inputs never do, so their producers
    // need no VJP and no backward op is built toward them.
    DenseSet<Value> active;
    for (Operation *op : forwardOps) {
      bool isActive = false;
      if (auto load = llvm::dyn_cast<LoadOp>(op))
        isActive = trainableNames.contains(load.getNameAttr().getAttr());
      else
        isActive = llvm::any_of(op->getOperands(),
                                [&](Value v) { return active.contains(v); });
      if (isActive)
        for (Value r : op->getResults())
          if (isFloatTensor(r))
            active.insert(r);
    }

    // Pipeline stages (tfc-pipeline-stages): the ops built for an op's VJP
    // run on its stage and are marked as backward ops.
    StageTagger tagger;
    b.setListener(&tagger);
    for (Operation *op : llvm::reverse(forwardOps)) {
      tagger.stage = op->getAttr(attr::kStage);
      bool reached = llvm::any_of(op->getResults(),
                                  [&](Value r) { return grads.count(r); });
      bool needsGrad = llvm::isa<LoadOp>(op) ||
                       llvm::any_of(op->getOperands(),
                                    [&](Value v) { return active.contains(v); });
      if (!reached || !needsGrad)
        continue;
      if (auto load = llvm::dyn_cast<LoadOp>(op)) {
        StringAttr name = load.getNameAttr().getAttr();
        if (trainableNames.contains(name)) {
          Value &slot = paramGrads[name];
          Value g = grads.lookup(load.getResult());
          slot = slot ? addGradients(b, load.getLoc(), slot, g) : g;
        }
        continue;
      }
      auto differentiable = llvm::dyn_cast<DifferentiableOpInterface>(op);
      if (!differentiable)
        return op->emitError("tfc-autodiff: '")
               << op->getName() << "' lies on the path to the loss but has no "
               << "vector-Jacobian product";
      SmallVector<Value> resultGrads;
      for (Value r : op->getResults()) {
        Value g = grads.lookup(r);
        resultGrads.push_back(g ? g : zerosLike(b, op->getLoc(), r.getType()));
      }
      SmallVector<Value> operandGrads;
      b.setInsertionPointToEnd(body);
      if (failed(differentiable.buildVJP(b, resultGrads, operandGrads)))
        return failure();
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
        if (g && active.contains(operand))
          accumulate(grads, operand, g);
    }

    tagger.stage = nullptr;
    b.setListener(nullptr);

    SmallVector<Value> returned = {loss};
    for (ParamOp p : trainable) {
      Value g = paramGrads.lookup(p.getSymNameAttr());
      if (g && lossScale)
        g = b.create<DivOp>(forward.getLoc(), g, lossScale);
      returned.push_back(g ? g : zerosLike(b, p.getLoc(), p.getType()));
    }
    b.create<func::ReturnOp>(forward.getLoc(), returned);
    return success();
  }
};

} // namespace
