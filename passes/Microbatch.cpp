//===- Microbatch.cpp - the tfc-microbatch pass ---------------------------===//
//
// tfc-microbatch: gradient accumulation in the graph. `<entry>_grad`, built
// by tfc-autodiff for the traced micro-batch of B rows, becomes an entry of
// M x B rows that runs the traced forward and backward on rows
// [m B, (m + 1) B) of every input, for m = 0 .. M-1 in turn, and returns the
// mean of the M losses and of the M gradients of each parameter. In program
// order each micro-batch's backward follows its forward, and tfc-schedule
// sinks every op to just before its first reader, so the activations alive
// at any point are one micro-batch's: one optimizer update for M x B rows
// with the activation memory of B rows.
//
// The mean of the micro-batches' mean losses equals the loss of one call at
// M x B rows when each micro-batch has the same number of counted targets
// (no ignored ones), as in PyTorch's and Megatron-LM's gradient
// accumulation. A loss that is not a mean over rows (MoE's load-balancing
// term, a product of batch averages) becomes the mean of its micro-batches'
// values.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Metadata.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "tfc-microbatch"

namespace tfc {
#define GEN_PASS_DEF_TFCMICROBATCH
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

struct MicrobatchPass : public tfc::impl::TfcMicrobatchBase<MicrobatchPass> {
  using TfcMicrobatchBase::TfcMicrobatchBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (count < 1) {
      module.emitError("tfc-microbatch: count ")
          << static_cast<int64_t>(count) << " must be at least 1";
      return signalPassFailure();
    }
    std::string name = trainingLossEntry(module, entry);
    auto grad = module.lookupSymbol<func::FuncOp>(name + "_grad");
    if (!grad || grad.isExternal()) {
      module.emitError("tfc-microbatch: no '")
          << name << "_grad' entry; run tfc-autodiff{entry=" << name
          << "} first";
      return signalPassFailure();
    }
    if (count == 1)
      return;
    if (failed(accumulate(grad)))
      return signalPassFailure();
    // For tools: a step takes M x the traced batch.
    auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata);
    module->setAttr(attr::kMetadata,
                    StringAttr::get(&getContext(),
                                    withMetadataEntry(meta ? meta.getValue() : "",
                                                      "microbatches",
                                                      std::to_string(count))));
  }

  LogicalResult accumulate(func::FuncOp grad) {
    const int64_t m = count;
    // Every input is batched along its first dimension (token ids, targets,
    // an encoder's source): M of them make the new input.
    SmallVector<Type> argTypes;
    int64_t rows = -1;
    for (auto [i, type] : llvm::enumerate(grad.getArgumentTypes())) {
      auto t = llvm::dyn_cast<RankedTensorType>(type);
      if (!t || t.getRank() == 0)
        return grad.emitError("tfc-microbatch: input ")
               << i << " of '" << grad.getName() << "' is " << type
               << ", not a batch of rows (micro-batches split the first "
                  "dimension of every input)";
      if (rows >= 0 && t.getDimSize(0) != rows)
        return grad.emitError("tfc-microbatch: the inputs of '")
               << grad.getName() << "' disagree on the batch: " << rows
               << " and " << t.getDimSize(0) << " rows";
      rows = t.getDimSize(0);
      SmallVector<int64_t> shape(t.getShape());
      shape[0] *= m;
      argTypes.push_back(t.clone(shape));
    }
    if (rows < 0)
      return grad.emitError("tfc-microbatch: '")
             << grad.getName() << "' has no inputs to split into micro-batches";
    Block &traced = grad.getBody().front();
    auto tracedReturn = llvm::cast<func::ReturnOp>(traced.getTerminator());
    for (Operation &op : traced.without_terminator())
      if (llvm::isa<StoreOp>(op))
        return op.emitError("tfc-microbatch: the loss entry writes state; "
                            "micro-batches would write it M times");
    for (Type t : grad.getResultTypes()) {
      auto rt = llvm::dyn_cast<RankedTensorType>(t);
      if (!rt || !llvm::isa<FloatType>(rt.getElementType()))
        return grad.emitError("tfc-microbatch: result of type ")
               << t << " of '" << grad.getName()
               << "' is not a float loss or gradient to average";
    }

    // A new body: the traced one cloned per micro-batch, each on its rows,
    // its results summed into the previous micro-batches' in order.
    Block *body = new Block();
    for (Type t : argTypes)
      body->addArgument(t, grad.getLoc());
    OpBuilder b(grad.getContext());
    b.setInsertionPointToEnd(body);
    Location loc = grad.getLoc();
    // Under pipeline parallelism every op of micro-batch k carries k, by which
    // tfc-pipeline-split orders each stage's forwards and backwards.
    const bool staged = llvm::any_of(traced.without_terminator(), [](Operation &op) {
      return op.hasAttr(attr::kStage);
    });
    auto mark = [&](Operation *op, int64_t k, bool backward) {
      if (!staged)
        return;
      op->setAttr(attr::kMicrobatch, b.getI64IntegerAttr(k));
      if (backward)
        op->setAttr(attr::kBackward, b.getUnitAttr());
    };
    SmallVector<Value> sums;
    for (int64_t k = 0; k < m; ++k) {
      IRMapping mapping;
      for (auto [from, to] :
           llvm::zip(traced.getArguments(), body->getArguments())) {
        auto t = llvm::cast<RankedTensorType>(to.getType());
        SmallVector<int64_t> start(t.getRank(), 0), limit(t.getShape()),
            stride(t.getRank(), 1);
        start[0] = k * rows;
        limit[0] = (k + 1) * rows;
        auto slice = b.create<SliceOp>(loc, to, start, limit, stride);
        mark(slice, k, /*backward=*/false);
        mapping.map(from, slice);
      }
      for (Operation &op : traced.without_terminator())
        mark(b.clone(op, mapping), k, op.hasAttr(attr::kBackward));
      for (auto [i, v] : llvm::enumerate(tracedReturn.getOperands())) {
        Value part = mapping.lookupOrDefault(v);
        if (k == 0)
          sums.push_back(part);
        else
          sums[i] = b.create<AddOp>(loc, sums[i], part);
        if (k > 0) {
          sums[i].getDefiningOp()->setAttr(attr::kAccumulator, b.getUnitAttr());
          mark(sums[i].getDefiningOp(), k, /*backward=*/true);
        }
      }
    }
    SmallVector<Value> means;
    for (Value s : sums) {
      auto t = llvm::cast<RankedTensorType>(s.getType());
      auto scalar = RankedTensorType::get({}, t.getElementType());
      Value inverse = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(
                   scalar, b.getFloatAttr(t.getElementType(),
                                          1.0 / static_cast<double>(m))));
      means.push_back(b.create<MulOp>(loc, s, inverse));
    }
    b.create<func::ReturnOp>(loc, means);

    // Swap the bodies; argument and result attributes (names) stay.
    traced.erase();
    grad.getBody().push_back(body);
    grad.setFunctionType(b.getFunctionType(argTypes, grad.getResultTypes()));
    return success();
  }
};

} // namespace
