//===- ExpertParallel.cpp - the tfc-expert-parallel pass -------------------===//
//
// tfc-expert-parallel: expert parallelism for mixture-of-experts models
// (tfc --ep=N). N ranks each read their slice of the batch, as data-parallel
// replicas do (tfc-data-parallel has averaged every gradient over them), and
// each holds E/N of every layer's experts. After tfc-train-step, train_step
// becomes N entries `train_step.ep<r>`, rank r's:
//
//  - each tfc.moe_ffn computes rank r's experts (its first_expert and its
//    E/N experts) on every rank's tokens: x, the ids and the routing weights
//    are all-gathered over the group, and the partial outputs summed back to
//    their ranks with a reduce-scatter (Megatron-Core's all-gather token
//    dispatcher: static shapes, dropless, each rank's tokens exactly once per
//    expert); its tfc.moe_ffn_grad likewise, the gradients of x and of the
//    weights reduce-scattered;
//  - the gradient of another rank's expert is zero here, so the data-parallel
//    mean gives every rank the owner's gradient over all the tokens divided
//    by N (the mean loss's), and the clipping norm is the same everywhere;
//  - another rank's experts are never loaded or updated (their stores and
//    their optimizer state's are dropped), so the runtime gives them no
//    storage ("ep_held").
//
// The ids cross as f32 (exact below 2^24 experts). The module's metadata gets
// "ep_size", "ep_owner" and "ep_held"; the other entries are dropped (rank r
// holds its own experts only).
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Metadata.h"
#include "passes/Passes.h"
#include "passes/RankEntries.h"

#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <map>

#define DEBUG_TYPE "tfc-expert-parallel"

namespace tfc {
#define GEN_PASS_DEF_TFCEXPERTPARALLEL
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

struct ExpertParallelPass
    : public tfc::impl::TfcExpertParallelBase<ExpertParallelPass> {
  using TfcExpertParallelBase::TfcExpertParallelBase;

  /// The parameter each expert operand loads (the ops' experts are loads).
  FailureOr<SmallVector<std::string>> expertNames(Operation *op,
                                                  ValueRange experts) {
    SmallVector<std::string> names;
    for (Value e : experts) {
      auto load = e.getDefiningOp<LoadOp>();
      if (!load) {
        op->emitOpError("tfc-expert-parallel: an expert operand is not a "
                        "parameter's tfc.load");
        return failure();
      }
      names.push_back(load.getName().str());
    }
    return names;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const int64_t n = size;
    auto step = module.lookupSymbol<func::FuncOp>(entry);
    if (n < 2 || !step || step.isExternal()) {
      module.emitError("tfc-expert-parallel: needs a size of 2 or more (got ")
          << n << ") and an entry '" << entry << "' (run tfc-train-step first)";
      return signalPassFailure();
    }
    // Every layer's experts, checked before anything changes.
    SmallVector<MoeFfnOp> layers;
    step.walk([&](MoeFfnOp op) { layers.push_back(op); });
    if (layers.empty()) {
      module.emitError("tfc-expert-parallel: '")
          << entry << "' has no tfc.moe_ffn: --ep shards the experts of "
          << "mixture-of-experts models (mixtral)";
      return signalPassFailure();
    }
    for (MoeFfnOp op : layers) {
      int64_t experts = op.getNumExperts();
      if (experts % n != 0 || op.getFirstExpert() != 0) {
        op.emitOpError("tfc-expert-parallel: --ep=")
            << n << " does not divide the layer's " << experts << " experts";
        return signalPassFailure();
      }
    }
    // Which rank holds each expert tensor.
    std::map<std::string, int64_t> owner;
    for (MoeFfnOp op : layers) {
      FailureOr<SmallVector<std::string>> names =
          expertNames(op, op.getExperts());
      if (failed(names))
        return signalPassFailure();
      int64_t perRank = op.getNumExperts() / n;
      for (auto [i, name] : llvm::enumerate(*names))
        owner[name] = static_cast<int64_t>(i) / 3 / perRank;
    }

    OpBuilder b(module.getContext());
    SmallVector<func::FuncOp> made;
    for (int64_t r = 0; r < n; ++r) {
      b.setInsertionPoint(step);
      auto f = llvm::cast<func::FuncOp>(b.clone(*step));
      f.setSymName(entry + ".ep" + std::to_string(r));
      if (failed(specialize(f, r, owner)))
        return signalPassFailure();
      made.push_back(f);
    }
    SmallVector<func::FuncOp> dropped;
    for (auto f : module.getOps<func::FuncOp>())
      if (!llvm::is_contained(made, f) && !f.isExternal())
        dropped.push_back(f);
    for (auto f : dropped)
      f.erase();

    // Every expert tensor is the owner's: its optimizer state too.
    std::map<std::string, int64_t> owners;
    for (Operation &op : module.getBody()->getOperations())
      if (auto state = llvm::dyn_cast<StateOp>(op))
        if (auto it = owner.find(paramOfState(state.getSymName()));
            it != owner.end())
          owners[state.getSymName().str()] = it->second;
    owners.insert(owner.begin(), owner.end());
    RankEntryMetadata tensors = rankEntryMetadata(module, made, owners);
    auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata);
    std::string json = meta ? meta.getValue().str() : "";
    json = withMetadataEntry(json, TFC_METADATA_EP_SIZE, std::to_string(n));
    json = withMetadataEntry(json, TFC_METADATA_EP_OWNER, tensors.owners);
    json = withMetadataEntry(json, TFC_METADATA_EP_HELD, tensors.held);
    module->setAttr(attr::kMetadata, b.getStringAttr(json));
  }

  /// "opt.m.<param>" -> "<param>" (tfc-train-step's optimizer state).
  static std::string paramOfState(StringRef name) {
    for (StringRef prefix : {"opt.m.", "opt.v.", "opt.buf."})
      if (name.starts_with(prefix))
        return name.drop_front(prefix.size()).str();
    return "";
  }

  /// Rank r's train_step: its experts on every rank's tokens.
  LogicalResult specialize(func::FuncOp f, int64_t r,
                           const std::map<std::string, int64_t> &owner) {
    const int64_t n = size;
    auto groupAttr = StringAttr::get(f.getContext(), group);
    auto sizeAttr = IntegerAttr::get(IntegerType::get(f.getContext(), 64), n);
    OpBuilder b(f.getContext());
    auto gather = [&](Value v) -> Value {
      Location loc = v.getLoc();
      auto type = llvm::cast<RankedTensorType>(v.getType());
      if (type.getElementType().isInteger(32)) {
        auto asFloat = RankedTensorType::get(type.getShape(), b.getF32Type());
        Value all = b.create<AllGatherOp>(
            loc, b.create<CastOp>(loc, asFloat, v), groupAttr, sizeAttr);
        auto allType = llvm::cast<RankedTensorType>(all.getType());
        return b.create<CastOp>(
            loc, RankedTensorType::get(allType.getShape(), type.getElementType()),
            all);
      }
      return b.create<AllGatherOp>(loc, v, groupAttr, sizeAttr);
    };
    auto scatter = [&](Value v) -> Value {
      return b.create<ReduceScatterOp>(v.getLoc(), v, groupAttr,
                                       b.getStringAttr("sum"), sizeAttr);
    };
    // The experts rank r holds: operands [3 first, 3 (first + perRank)).
    auto mine = [&](ValueRange experts, int64_t perRank) {
      return experts.slice(3 * r * perRank, 3 * perRank);
    };

    SmallVector<MoeFfnOp> forwards;
    SmallVector<MoeFfnGradOp> backwards;
    f.walk([&](MoeFfnOp op) { forwards.push_back(op); });
    f.walk([&](MoeFfnGradOp op) { backwards.push_back(op); });
    for (MoeFfnOp op : forwards) {
      int64_t perRank = op.getNumExperts() / n;
      b.setInsertionPoint(op);
      Value all = b.create<MoeFfnOp>(
          op.getLoc(), gather(op.getX()), gather(op.getIds()),
          gather(op.getWeights()), mine(op.getExperts(), perRank),
          b.getI64IntegerAttr(r * perRank));
      op.getResult().replaceAllUsesWith(scatter(all));
      op.erase();
    }
    for (MoeFfnGradOp op : backwards) {
      int64_t perRank = static_cast<int64_t>(op.getExperts().size()) / 3 / n;
      b.setInsertionPoint(op);
      ValueRange held = mine(op.getExperts(), perRank);
      Value xs = gather(op.getX()), ws = gather(op.getWeights());
      SmallVector<Type> types = {xs.getType(), ws.getType()};
      for (Value e : held)
        types.push_back(e.getType());
      auto all = b.create<MoeFfnGradOp>(
          op.getLoc(), types, xs, gather(op.getIds()), ws,
          gather(op.getGrad()), held, b.getI64IntegerAttr(r * perRank));
      op.getResult(0).replaceAllUsesWith(scatter(all.getResult(0)));
      op.getResult(1).replaceAllUsesWith(scatter(all.getResult(1)));
      // Another rank's expert has no gradient here (zero: see the top).
      int64_t first = 3 * r * perRank;
      for (int64_t i = 0; i < static_cast<int64_t>(op.getExperts().size()); ++i) {
        Value grad = op.getResult(2 + i);
        if (i >= first && i < first + 3 * perRank) {
          grad.replaceAllUsesWith(all.getResult(2 + i - first));
          continue;
        }
        auto type = llvm::cast<RankedTensorType>(grad.getType());
        grad.replaceAllUsesWith(b.create<ConstantOp>(
            op.getLoc(), DenseElementsAttr::get(type, b.getFloatAttr(
                                                          type.getElementType(), 0.0))));
      }
      op.erase();
    }
    // Another rank's experts (and their optimizer state) are not updated here.
    SmallVector<StoreOp> stores;
    f.walk([&](StoreOp store) {
      std::string name = store.getName().str();
      std::string param = paramOfState(name);
      auto it = owner.find(param.empty() ? name : param);
      if (it != owner.end() && it->second != r)
        stores.push_back(store);
    });
    for (StoreOp store : stores)
      store.erase();
    // The ranks' entries differ (each its experts), yet make their
    // collectives together: each keeps its own (no CSE merges two, as it
    // would the all-reduces of two zero gradients of one shape) and their
    // order (tfc-schedule keeps the collectives' program order).
    int64_t index = 0;
    f.walk([&](Operation *op) {
      if (llvm::isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op))
        op->setAttr(attr::kCollectiveIndex, b.getI64IntegerAttr(index++));
    });
    return success();
  }
};

} // namespace
