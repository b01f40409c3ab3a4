//===- DataParallel.cpp - gradients all-reduced over data-parallel ranks --===//
//
// tfc-data-parallel: each of N processes runs the same train_step on its own
// slice of the global batch; before clipping and the optimizer, the gradients
// (and the loss, for the log) are averaged over the ranks, so every rank
// applies the same update to the same weights: one process at batch N x B,
// computed by N.
//
// It runs between tfc-autodiff and tfc-train-step, on `<entry>_grad`. The
// values to average are every result marked tfc.grad_of and the loss (result
// 0). With `bucket-mb` < 0 each becomes a blocking tfc.all_reduce{group,
// reduce = "mean", size = N} of itself, right after the op that makes it
// final. Otherwise (the default, like PyTorch DDP) they are grouped into
// buckets, in the order the backward makes them final, each closed once it
// holds `bucket-mb` MB (0: one value per bucket); a bucket is one collective
// on the concatenation of its values: tfc.all_reduce_start right after the
// op that makes its last value final, so that its bytes move while the rest
// of the backward runs, and tfc.all_reduce_wait just before the return (the
// first use of the averaged values: clipping and the optimizer, once
// tfc-train-step inlines the entry), or, with `overlap=false`, right after
// the start. The compiled world size goes into the artifact's metadata
// (TFC_METADATA_WORLD_SIZE), which the runtime checks before any step: N, or
// N x M after tfc-tensor-parallel (tp_size M; artifact_abi.h gives the 2-D
// layout of the ranks).
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

struct DataParallelPass : public tfc::impl::TfcDataParallelBase<DataParallelPass> {
  using TfcDataParallelBase::TfcDataParallelBase;

  /// Averages the loss and gradients of one `<entry>_grad`; returns how many.
  FailureOr<int64_t> average(func::FuncOp func) {
    Block &body = func.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    // (position in the block of the op that makes it final, result index);
    // a block argument is final at the start (-1).
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = static_cast<int64_t>(i);
    SmallVector<std::pair<int64_t, unsigned>> items;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      if (func.getResultAttr(i, attr::kGradOf) == nullptr && i != 0)
        continue;
      Value v = ret.getOperand(i);
      auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
      if (!type || !type.getElementType().isF32()) {
        func.emitError("tfc-data-parallel: result ")
            << i << " of '" << func.getName() << "' is " << v.getType()
            << "; data parallel averages f32 losses and gradients only";
        return failure();
      }
      Operation *def = v.getDefiningOp();
      items.push_back({def ? position.lookup(def) : -1, i});
    }
    // Stable: results made final by the same op keep their order.
    llvm::stable_sort(items, [](auto &a, auto &b) { return a.first < b.first; });

    auto insertAfterFinal = [&](OpBuilder &b, Value v) {
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&body);
    };
    if (bucketMb < 0) {
      for (auto [pos, i] : items) {
        Value v = ret.getOperand(i);
        OpBuilder b(ret);
        insertAfterFinal(b, v);
        auto ar = b.create<AllReduceOp>(v.getLoc(), v, b.getStringAttr(group),
                                        b.getStringAttr("mean"),
                                        b.getI64IntegerAttr(size));
        ret.setOperand(i, ar);
      }
      return static_cast<int64_t>(items.size());
    }

    // Buckets in the order the values become final; a bucket closes once it
    // holds at least the cap (PyTorch DDP's bucket_cap_mb rule), so a value
    // larger than the cap has a bucket of its own.
    const double capBytes = bucketMb * 1024.0 * 1024.0;
    SmallVector<SmallVector<unsigned>> buckets;
    double bytes = 0;
    for (auto [pos, i] : items) {
      if (buckets.empty() || bytes >= capBytes) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(i);
      auto type = llvm::cast<RankedTensorType>(ret.getOperand(i).getType());
      bytes += 4.0 * static_cast<double>(type.getNumElements());
    }
    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      SmallVector<Value> values;
      SmallVector<Type> types;
      for (unsigned i : bucket) {
        values.push_back(ret.getOperand(i));
        types.push_back(values.back().getType());
      }
      // The last value of the bucket is the latest to become final.
      OpBuilder b(ret);
      insertAfterFinal(b, values.back());
      Location loc = values.back().getLoc();
      auto bucketId = b.getI64IntegerAttr(static_cast<int64_t>(k));
      auto start = b.create<AllReduceStartOp>(
          loc, types, values, b.getStringAttr(group), b.getStringAttr("mean"),
          b.getI64IntegerAttr(size), bucketId);
      if (!overlap)
        b.setInsertionPointAfter(start);
      else
        b.setInsertionPoint(ret);
      auto wait = b.create<AllReduceWaitOp>(loc, types, start.getPending(),
                                            bucketId);
      for (auto [i, r] : llvm::zip(bucket, wait.getResults()))
        ret.setOperand(i, r);
    }
    return static_cast<int64_t>(items.size());
  }

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
      FailureOr<int64_t> n = average(func);
      if (failed(n))
        return signalPassFailure();
      reduced += *n;
    }
    if (reduced == 0) {
      module.emitError("tfc-data-parallel: no `*_grad` entry to average; run "
                       "tfc-autodiff first (tfc --dp needs --optimizer)");
      return signalPassFailure();
    }
    // With tensor or pipeline parallelism (tfc-tensor-parallel or
    // tfc-pipeline-stages ran first and wrote tp_size or pp_size = M) the
    // world is N data-parallel groups of M ranks.
    auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata);
    StringRef json = meta ? meta.getValue() : "";
    int64_t world =
        size * metadataInt(json, TFC_METADATA_TP_SIZE).value_or(int64_t{1}) *
        metadataInt(json, TFC_METADATA_PP_SIZE).value_or(int64_t{1});
    module->setAttr(
        attr::kMetadata,
        StringAttr::get(&getContext(),
                        withMetadataEntry(json, TFC_METADATA_WORLD_SIZE,
                                          std::to_string(world))));
  }
};

} // namespace
