//===- ZeroShard.cpp - ZeRO-1: gradients reduce-scattered, not all-reduced ===//
//
// tfc-zero-shard (tfc --dp=N --zero=1): ZeRO stage 1 (Rajbhandari et al.,
// 2020) partitions the optimizer state over the data-parallel ranks. Plain
// data parallelism all-reduces every gradient and lets every rank run the
// same optimizer update on every parameter, so every rank holds all the
// moments. Here each rank keeps the averaged gradient of one block of each
// parameter only (a reduce-scatter moves half the bytes of an all-reduce),
// updates that block with its block of the moments, and the all-gather of
// the updated blocks rebuilds the parameter everywhere: the same update,
// optimizer state / N per rank, the same bytes over the link in all.
//
// This pass does the gradient half on `<entry>_grad`, after
// tfc-data-parallel: each gradient's tfc.all_reduce(mean) becomes the
// flattened gradient, padded with zeros to N x ceil(n / N) elements, then
// tfc.reduce_scatter(mean) at the same point (right after the op that makes
// the gradient final). The result is marked tfc.zero_shard = {group, size};
// tfc-train-step reads the mark and builds the sharded update (moments of
// the shard's shape, the clipping norm from the shards, the parameter's
// block in, tfc.all_gather out). The zero padding stays zero in the
// gradient, so it adds nothing to the norm and its moments stay zero.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "tfc-zero-shard"

namespace tfc {
#define GEN_PASS_DEF_TFCZEROSHARD
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

struct ZeroShardPass : public tfc::impl::TfcZeroShardBase<ZeroShardPass> {
  using TfcZeroShardBase::TfcZeroShardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t sharded = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getName().ends_with("_grad"))
        continue;
      auto ret =
          llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
      SmallVector<Type> resultTypes(func.getResultTypes());
      for (unsigned i = 0; i < func.getNumResults(); ++i) {
        auto of = func.getResultAttrOfType<StringAttr>(i, attr::kGradOf);
        if (!of)
          continue;
        auto reduced = ret.getOperand(i).getDefiningOp<AllReduceOp>();
        if (!reduced || reduced.getReduce() != "mean") {
          func.emitError("tfc-zero-shard: the gradient of '")
              << of.getValue() << "' (result " << i << " of '" << func.getName()
              << "') is not a tfc.all_reduce mean; run tfc-data-parallel "
                 "first, without buckets (bucket-mb=-1; tfc --dp=N --zero=1 does "
                 "so)";
          return signalPassFailure();
        }
        int64_t n = reduced.getSize();
        Value g = reduced.getX();
        auto type = llvm::cast<RankedTensorType>(g.getType());
        int64_t numel = type.getNumElements();
        int64_t block = (numel + n - 1) / n;
        Type f32 = type.getElementType();
        OpBuilder b(reduced);
        Location loc = reduced.getLoc();
        Value flat = g;
        if (type.getRank() != 1)
          flat =
              b.create<ReshapeOp>(loc, RankedTensorType::get({numel}, f32), g);
        if (block * n != numel) {
          auto padType = RankedTensorType::get({block * n - numel}, f32);
          Value zeros = b.create<ConstantOp>(
              loc, DenseElementsAttr::get(padType, b.getFloatAttr(f32, 0.0)));
          flat =
              b.create<ConcatOp>(loc, RankedTensorType::get({block * n}, f32),
                                 ValueRange{flat, zeros}, /*dim=*/0);
        }
        auto shard = b.create<ReduceScatterOp>(
            loc, flat, reduced.getGroupAttr(), reduced.getReduceAttr(),
            reduced.getSizeAttr());
        ret.setOperand(i, shard);
        if (reduced->use_empty())
          reduced->erase();
        resultTypes[i] = shard.getType();
        func.setResultAttr(
            i, attr::kZeroShard,
            b.getDictionaryAttr({b.getNamedAttr("group", shard.getGroupAttr()),
                                 b.getNamedAttr("size", shard.getSizeAttr())}));
        ++sharded;
      }
      func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                     resultTypes));
    }
    if (sharded == 0) {
      module.emitError("tfc-zero-shard: no gradient to shard; run tfc-autodiff "
                       "and tfc-data-parallel first (tfc --zero=1 needs --dp "
                       "and --optimizer)");
      return signalPassFailure();
    }
  }
};

} // namespace
