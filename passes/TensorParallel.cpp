//===- TensorParallel.cpp - Megatron-LM tensor parallelism -----------------===//
//
// tfc-tensor-parallel: M consecutive ranks split each transformer layer as
// Megatron-LM does (Shoeybi et al. 2019, section 3). The model library marks
// the weights (tfc.shard on the tfc.param): "column" for QKV, the MLP's
// up-projection and LLaMA's gate (each rank its 1/M of the output features:
// its heads, its MLP columns), "row" for the attention output and the MLP's
// down-projection (each rank its 1/M of the input features). The pass
//   - narrows those parameters (and a column weight's bias) to one rank's
//     slice, recording the split in the module's metadata (tp_shards), which
//     the runtime uses to slice and gather whole checkpoints;
//   - re-types what flows from them: the heads dimension of the reshapes and
//     transposes, attention, rotary, elementwise ops, slices of a fused QKV;
//   - puts Megatron's f (tfc.copy_to_group: identity forward, all-reduce of
//     the gradient) on the input of each column-parallel linear and g
//     (tfc.all_reduce sum: all-reduce forward, identity backward) on the
//     output of each row-parallel one, whose bias is added after it (once,
//     not M times).
// So a layer does two all-reduces in the forward and two in the backward;
// embeddings, norms and the loss stay replicated. It runs before tfc-autodiff,
// whose VJPs of f and g give the backward's collectives.
//
// Generation (prefill, decode) splits the KV cache with the heads: a state
// that a tfc.kv_cache_update writes (the cache of a layer's keys or values,
// [B, heads, n_ctx, D]) holds this rank's heads, is recorded in tp_shards like
// a parameter (so checkpoints hold it whole), and the update, the store and
// attention over it stay on the rank's heads; the logits are whole on every
// rank after the last row-parallel all-reduce.
//
// What it cannot split (a value split across ranks reaching an op it does not
// know, or a return) is an error naming the op; so is an M that does not
// divide the heads or the features.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Metadata.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#define DEBUG_TYPE "tfc-tensor-parallel"

namespace tfc {
#define GEN_PASS_DEF_TFCTENSORPARALLEL
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

/// How a tensor is split over the ranks: along `axis`, which is `blocks`
/// equal parts of which each rank holds its M-th of each.
struct Split {
  int64_t axis = -1;
  int64_t blocks = 1;
  bool operator==(const Split &o) const {
    return axis == o.axis && blocks == o.blocks;
  }
};

struct TensorParallelPass
    : public tfc::impl::TfcTensorParallelBase<TensorParallelPass> {
  using TfcTensorParallelBase::TfcTensorParallelBase;

  int64_t M = 1;

  RankedTensorType narrowed(Type t, int64_t axis) const {
    auto type = llvm::cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] /= M;
    return RankedTensorType::get(shape, type.getElementType(),
                                 type.getEncoding());
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    M = size;
    if (M < 1) {
      mlir::emitError(module.getLoc(), "tfc-tensor-parallel: size ")
          << M << " must be at least 1";
      return signalPassFailure();
    }
    llvm::StringMap<Split> splits;
    if (failed(findSplits(module, splits)))
      return signalPassFailure();
    if (splits.empty()) {
      mlir::emitError(module.getLoc(), "tfc-tensor-parallel: no parameter is marked tfc.shard "
                       "(\"column\" or \"row\"); the model library marks "
                       "them for the models it knows (gpt2, llama)");
      return signalPassFailure();
    }
    if (M == 1)
      return;
    llvm::StringMap<Split> caches;
    if (failed(findCaches(module, caches)))
      return signalPassFailure();
    for (auto &[name, split] : caches) {
      auto state = module.lookupSymbol<StateOp>(name);
      state.setTypeAttr(TypeAttr::get(narrowed(state.getType(), split.axis)));
    }
    for (auto &[name, split] : splits) {
      auto param = module.lookupSymbol<ParamOp>(name);
      param.setTypeAttr(TypeAttr::get(narrowed(param.getType(), split.axis)));
      param->setAttr(
          attr::kShardAxis,
          IntegerAttr::get(IntegerType::get(&getContext(), 64), split.axis));
      param->setAttr(attr::kShardRanks,
                     IntegerAttr::get(IntegerType::get(&getContext(), 64), M));
      if (split.blocks > 1)
        param->setAttr(attr::kShardBlocks,
                       IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                        split.blocks));
    }
    for (auto &[name, split] : caches)
      splits[name] = split;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(rewrite(func, splits)))
        return signalPassFailure();

    // The runtime's view: M ranks, and which parameters each holds a slice
    // of (artifact_abi.h: TFC_METADATA_TP_SIZE, TFC_METADATA_TP_SHARDS).
    std::string table = "{";
    auto entry = [&](StringRef name) {
      auto it = splits.find(name);
      if (it == splits.end())
        return;
      table += (table.size() > 1 ? ", \"" : "\"") + name.str() + "\": [" +
               std::to_string(it->second.axis) + ", " +
               std::to_string(it->second.blocks) + "]";
    };
    for (ParamOp param : module.getOps<ParamOp>())
      entry(param.getSymName());
    for (StateOp state : module.getOps<StateOp>())
      entry(state.getSymName());
    table += "}";
    auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata);
    std::string json = meta ? meta.getValue().str() : "";
    json = withMetadataEntry(json, TFC_METADATA_TP_SHARDS, table);
    json = withMetadataEntry(json, TFC_METADATA_TP_SIZE, std::to_string(M));
    json = withMetadataEntry(json, TFC_METADATA_WORLD_SIZE, std::to_string(M));
    module->setAttr(attr::kMetadata, StringAttr::get(&getContext(), json));
  }

  /// The split of each marked weight (its axis from how a linear reads it)
  /// and of a column weight's bias; checks that M divides them.
  LogicalResult findSplits(ModuleOp module, llvm::StringMap<Split> &splits) {
    auto record = [&](Operation *at, ParamOp param, Split split,
                      StringRef what) -> LogicalResult {
      auto [it, fresh] = splits.try_emplace(param.getSymName(), split);
      if (!fresh && !(it->second == split))
        return at->emitError("tfc-tensor-parallel: '")
               << param.getSymName() << "' is read as split along axis "
               << split.axis << " here and along " << it->second.axis
               << " elsewhere";
      int64_t dim = param.getTensorType().getDimSize(split.axis);
      if (dim % (M * split.blocks) != 0)
        return at->emitError("tfc-tensor-parallel: --tp=")
               << M << " does not divide the " << dim / split.blocks << " "
               << what << " of '" << param.getSymName() << "' ("
               << param.getTensorType() << ", axis " << split.axis
               << (split.blocks > 1
                       ? ", in each of its " + std::to_string(split.blocks) +
                             " blocks"
                       : std::string())
               << ")";
      return success();
    };
    for (auto func : module.getOps<func::FuncOp>()) {
      WalkResult result = func.walk([&](LinearOp linear) {
        auto load = linear.getWeight().getDefiningOp<LoadOp>();
        if (!load)
          return WalkResult::advance();
        auto param = module.lookupSymbol<ParamOp>(load.getNameAttr().getAttr());
        auto kind = param ? param->getAttrOfType<StringAttr>(attr::kShard)
                          : StringAttr();
        if (!kind)
          return WalkResult::advance();
        bool t = linear.getTransposeWeight();
        int64_t blocks = 1;
        if (auto b = param->getAttrOfType<IntegerAttr>(attr::kShardBlocks))
          blocks = b.getInt();
        if (kind.getValue() == "column") {
          if (failed(record(linear, param, {t ? 0 : 1, blocks},
                            "output features")))
            return WalkResult::interrupt();
          if (Value bias = linear.getBias()) {
            auto bload = bias.getDefiningOp<LoadOp>();
            auto bparam = bload ? module.lookupSymbol<ParamOp>(
                                      bload.getNameAttr().getAttr())
                                : ParamOp();
            if (!bparam) {
              linear.emitError("tfc-tensor-parallel: the bias of a "
                               "column-parallel linear is not a parameter");
              return WalkResult::interrupt();
            }
            if (failed(record(linear, bparam, {0, blocks}, "output features")))
              return WalkResult::interrupt();
          }
        } else if (kind.getValue() == "row" && blocks == 1) {
          if (failed(record(linear, param, {t ? 1 : 0, 1}, "input features")))
            return WalkResult::interrupt();
        } else {
          param.emitError("tfc-tensor-parallel: tfc.shard '")
              << kind.getValue() << "' is not \"column\" or \"row\" (blocks "
              << blocks << ")";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (result.wasInterrupted())
        return failure();
    }
    return success();
  }

  /// The KV caches: the states a tfc.kv_cache_update writes, split with the
  /// heads (axis 1 of [B, heads, n_ctx, D]); checks that M divides them.
  LogicalResult findCaches(ModuleOp module, llvm::StringMap<Split> &caches) {
    for (auto func : module.getOps<func::FuncOp>()) {
      WalkResult result = func.walk([&](KvCacheUpdateOp update) {
        auto load = update.getCache().getDefiningOp<LoadOp>();
        auto state = load ? module.lookupSymbol<StateOp>(load.getNameAttr().getAttr())
                          : StateOp();
        auto type = state ? llvm::dyn_cast<RankedTensorType>(state.getType())
                          : RankedTensorType();
        if (!type || type.getRank() != 4 || update.getDim() == 1) {
          update.emitError("tfc-tensor-parallel: a KV cache update must read a "
                           "module state of [batch, heads, positions, head dim] "
                           "and write along the positions");
          return WalkResult::interrupt();
        }
        if (type.getDimSize(1) % M != 0) {
          update.emitError("tfc-tensor-parallel: --tp=")
              << M << " does not divide the " << type.getDimSize(1)
              << " heads of the KV cache '" << state.getSymName() << "'";
          return WalkResult::interrupt();
        }
        caches[state.getSymName()] = Split{1, 1};
        return WalkResult::advance();
      });
      if (result.wasInterrupted())
        return failure();
    }
    return success();
  }

  LogicalResult rewrite(func::FuncOp func,
                        const llvm::StringMap<Split> &splits) {
    llvm::DenseMap<Value, Split> split;
    llvm::DenseMap<Value, Value> copied; // x -> f(x)
    auto splitOf = [&](Value v) -> std::optional<Split> {
      auto it = split.find(v);
      if (it == split.end())
        return std::nullopt;
      return it->second;
    };
    auto setSplit = [&](Value v, Split s) {
      v.setType(narrowed(v.getType(), s.axis));
      split[v] = s;
    };
    auto refuse = [&](Operation *op, const Twine &why) {
      return op->emitError("tfc-tensor-parallel: ") << why;
    };
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      if (auto load = llvm::dyn_cast<LoadOp>(op)) {
        auto it = splits.find(load.getNameAttr().getValue());
        if (it != splits.end())
          setSplit(load.getResult(), it->second);
        continue;
      }
      if (auto update = llvm::dyn_cast<KvCacheUpdateOp>(op)) {
        std::optional<Split> cache = splitOf(update.getCache()),
                             value = splitOf(update.getUpdate());
        if (!cache && !value)
          continue;
        if (!cache || !value || !(*cache == *value))
          return refuse(update, "a KV cache update needs its cache and its "
                                "new keys or values split alike (along the heads)");
        setSplit(update.getResult(), *cache);
        continue;
      }
      if (auto store = llvm::dyn_cast<StoreOp>(op)) {
        auto it = splits.find(store.getNameAttr().getValue());
        std::optional<Split> value = splitOf(store.getValue());
        if (!value && it == splits.end())
          continue;
        if (!value || it == splits.end() || !(*value == it->second))
          return refuse(store, "stores a value split across ranks into a state "
                               "that is not split alike (only a KV cache is)");
        continue;
      }
      if (auto linear = llvm::dyn_cast<LinearOp>(op)) {
        std::optional<Split> w = splitOf(linear.getWeight());
        std::optional<Split> x = splitOf(linear.getX());
        if (!w && !x)
          continue;
        int64_t rank = linear.getType().getRank();
        bool t = linear.getTransposeWeight();
        if (w && w->axis == (t ? 0 : 1)) {
          // Column-parallel: the whole input times this rank's columns.
          if (x)
            return refuse(linear, "the input of a column-parallel linear is "
                                  "already split across ranks");
          Value &f = copied[linear.getX()];
          if (!f) {
            OpBuilder b(linear);
            if (Operation *def = linear.getX().getDefiningOp())
              b.setInsertionPointAfter(def);
            else
              b.setInsertionPointToStart(&func.getBody().front());
            f = b.create<CopyToGroupOp>(linear.getLoc(), linear.getX(),
                                        b.getStringAttr(group),
                                        b.getI64IntegerAttr(M));
          }
          linear.getXMutable().assign(f);
          setSplit(linear.getResult(), {rank - 1, w->blocks});
          continue;
        }
        // Row-parallel: this rank's features of the input times its rows of
        // the weight is its part of the sum; g sums the parts, then the bias.
        if (!w || !x || x->axis != rank - 1 || x->blocks != 1)
          return refuse(linear, "a row-parallel linear needs its input split "
                                "along the features and its weight along its "
                                "input features (tfc.shard \"row\")");
        OpBuilder b(linear);
        Value partial = b.create<LinearOp>(linear.getLoc(), linear.getX(),
                                           linear.getWeight(), Value(),
                                           linear.getTransposeWeightAttr());
        Value y = b.create<AllReduceOp>(
            linear.getLoc(), partial, b.getStringAttr(group),
            b.getStringAttr("sum"), b.getI64IntegerAttr(M));
        if (Value bias = linear.getBias()) {
          if (splitOf(bias))
            return refuse(linear, "the bias of a row-parallel linear is split");
          y = b.create<AddOp>(linear.getLoc(), y, bias);
        }
        linear.getResult().replaceAllUsesWith(y);
        linear.erase();
        continue;
      }
      bool any = llvm::any_of(op.getOperands(),
                              [&](Value v) { return split.count(v) > 0; });
      if (!any)
        continue;
      if (llvm::isa<func::ReturnOp>(op))
        return refuse(&op, "a value split across ranks is returned; only the "
                           "layers' insides are split (the loss and logits "
                           "are whole)");
      if (auto slice = llvm::dyn_cast<SliceOp>(op)) {
        Split in = *splitOf(slice.getX());
        int64_t a = in.axis;
        int64_t full = slice.getX().getType().getDimSize(a) * M;
        SmallVector<int64_t> start(slice.getStart()), limit(slice.getLimit());
        int64_t block = full / in.blocks;
        if (slice.getStride()[a] != 1 || start[a] % block != 0 ||
            limit[a] % block != 0)
          return refuse(slice, "a slice of a split dimension must take whole "
                               "blocks (" +
                                   Twine(block) + " of " + Twine(full) + ")");
        Split out{a, (limit[a] - start[a]) / block};
        start[a] /= M;
        limit[a] /= M;
        slice.setStart(start);
        slice.setLimit(limit);
        setSplit(slice.getResult(), out);
        continue;
      }
      if (auto reshape = llvm::dyn_cast<ReshapeOp>(op)) {
        Split in = *splitOf(reshape.getX());
        if (in.blocks != 1)
          return refuse(reshape, "reshape of a fused split value; slice its "
                                 "blocks first");
        SmallVector<int64_t> inFull(reshape.getX().getType().getShape());
        inFull[in.axis] *= M;
        ArrayRef<int64_t> out = reshape.getType().getShape();
        int64_t prefix = 1;
        for (int64_t d = 0; d < in.axis; ++d)
          prefix *= inFull[d];
        // The output dimension that starts where the split one starts: the
        // outermost of the ones it splits into (the heads), or the one it
        // merges into with its inner neighbours.
        int64_t j = 0, p = 1, n = out.size();
        while (j < n && p < prefix)
          p *= out[j++];
        while (j < n && out[j] == 1)
          ++j;
        if (p != prefix || j == n)
          return refuse(reshape, "cannot follow the split dimension " +
                                     Twine(in.axis) + " through this reshape");
        if (out[j] % M != 0)
          return refuse(reshape, "--tp=" + Twine(M) + " does not divide the " +
                                     Twine(out[j]) + " heads (dimension " +
                                     Twine(j) + " of this reshape's result)");
        setSplit(reshape.getResult(), {j, 1});
        continue;
      }
      if (auto transpose = llvm::dyn_cast<TransposeOp>(op)) {
        Split in = *splitOf(transpose.getX());
        ArrayRef<int64_t> perm = transpose.getPerm();
        int64_t a = llvm::find(perm, in.axis) - perm.begin();
        setSplit(transpose.getResult(), {a, in.blocks});
        continue;
      }
      if (auto attention = llvm::dyn_cast<AttentionOp>(op)) {
        for (Value v :
             {attention.getQuery(), attention.getKey(), attention.getValue()}) {
          std::optional<Split> s = splitOf(v);
          if (!s || s->axis != 1 || s->blocks != 1)
            return refuse(attention, "attention needs its query, key and "
                                     "value split along the heads");
        }
        setSplit(attention.getResult(), {1, 1});
        continue;
      }
      bool elementwise = op.hasTrait<OpTrait::SameOperandsAndResultType>() ||
                         llvm::isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp,
                                   PowOp, RotaryOp, CastOp>(op);
      if (!elementwise || op.getNumResults() != 1 ||
          llvm::isa<AllReduceOp, CopyToGroupOp, DropoutOp>(op))
        return refuse(&op, "'" + op.getName().getStringRef() +
                               "' takes a value split across ranks and is "
                               "not one the pass can split");
      // Elementwise with broadcasting (from the right): the result is split
      // where its split operands are; a whole operand must broadcast there.
      auto type = llvm::cast<RankedTensorType>(op.getResult(0).getType());
      int64_t R = type.getRank();
      std::optional<Split> out;
      for (Value v : op.getOperands()) {
        std::optional<Split> s = splitOf(v);
        if (!s)
          continue;
        Split r{s->axis + R -
                    llvm::cast<RankedTensorType>(v.getType()).getRank(),
                s->blocks};
        if (out && !(*out == r))
          return refuse(&op, "its operands are split differently");
        out = r;
      }
      for (Value v : op.getOperands()) {
        auto vt = llvm::dyn_cast<RankedTensorType>(v.getType());
        if (split.count(v) || !vt)
          continue;
        int64_t d = out->axis - (R - vt.getRank());
        if (d >= 0 && vt.getDimSize(d) != 1)
          return refuse(&op, "combines a value split across ranks with a "
                             "whole one along the split dimension");
      }
      if (llvm::isa<RotaryOp>(op) && out->axis >= R - 2)
        return refuse(&op, "rotary needs its input split along the heads");
      setSplit(op.getResult(0), *out);
    }
    return success();
  }
};

} // namespace
