//===- DataParallel.cpp - gradients all-reduced over data-parallel ranks --===//
//
// tfc-data-parallel: each of N processes runs the same train_step on its own
// slice of the global batch; before clipping and the optimizer, the gradients
// (and the loss, for the log) are averaged over the ranks, so every rank
// applies the same update to the same weights: one process at batch N x B,
// computed by N.
//
// It runs between tfc-autodiff and tfc-train-step, on `<entry>_grad`: every
// result marked tfc.grad_of, and the loss (result 0), becomes
// tfc.all_reduce{group = "dp", reduce = "mean", size = N} of itself, placed
// right after the op that makes it final (the last op of the backward that
// writes that gradient), so that a scheduler that overlaps communication
// with the rest of the backward can launch each one as early as possible.
// The compiled world size goes into the artifact's metadata
// (TFC_METADATA_WORLD_SIZE), which the runtime checks before any step.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Metadata.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "tfc-data-parallel"

namespace tfc {
#define GEN_PASS_DEF_TFCDATAPARALLEL
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

/// `json` (an object's text, or "") with "world_size": n as its first key.
std::string withWorldSize(StringRef json, int64_t n) {
  return withMetadataEntry(json, TFC_METADATA_WORLD_SIZE, std::to_string(n));
}

struct DataParallelPass : public tfc::impl::TfcDataParallelBase<DataParallelPass> {
  using TfcDataParallelBase::TfcDataParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (size < 1) {
      module.emitError("tfc-data-parallel: size ")
          << static_cast<int64_t>(size) << " must be at least 1";
      return signalPassFailure();
    }
    int64_t reduced = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getName().ends_with("_grad"))
        continue;
      auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
      for (unsigned i = 0; i < func.getNumResults(); ++i) {
        bool isGrad = func.getResultAttr(i, attr::kGradOf) != nullptr;
        if (!isGrad && i != 0)
          continue;
        Value v = ret.getOperand(i);
        auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
        if (!type || !type.getElementType().isF32()) {
          func.emitError("tfc-data-parallel: result ")
              << i << " of '" << func.getName() << "' is " << v.getType()
              << "; data parallel averages f32 losses and gradients only";
          return signalPassFailure();
        }
        OpBuilder b(ret);
        if (Operation *def = v.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&func.getBody().front());
        auto ar = b.create<AllReduceOp>(v.getLoc(), v, b.getStringAttr(group),
                                        b.getStringAttr("mean"),
                                        b.getI64IntegerAttr(size));
        ret.setOperand(i, ar);
        ++reduced;
      }
    }
    if (reduced == 0) {
      module.emitError("tfc-data-parallel: no `*_grad` entry to average; run "
                       "tfc-autodiff first (tfc --dp needs --optimizer)");
      return signalPassFailure();
    }
    auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata);
    module->setAttr(attr::kMetadata,
                    StringAttr::get(&getContext(),
                                    withWorldSize(meta ? meta.getValue() : "", size)));
  }
};

} // namespace
