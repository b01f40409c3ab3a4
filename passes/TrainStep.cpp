//===- TrainStep.cpp - the tfc-train-step pass ----------------------------===//
//
// train_step = <entry>_grad's body + gradient clipping + learning-rate
// schedule + optimizer update, as one entry. Everything is tfc IR, so the
// optimizer is compiled, fused and planned like the model itself.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Metadata.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

#define DEBUG_TYPE "tfc-train-step"

namespace tfc {
#define GEN_PASS_DEF_TFCTRAINSTEP
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

/// Scalar and elementwise arithmetic on f32 tensors, read like formulas.
struct Arith {
  OpBuilder &b;
  Location loc;

  Value c(double v) {
    auto t = RankedTensorType::get({}, b.getF32Type());
    return b.create<ConstantOp>(loc,
                                DenseElementsAttr::get(t, b.getF32FloatAttr(v)));
  }
  Value add(Value x, Value y) { return b.create<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x, y); }
  Value min(Value x, Value y) { return b.create<MinOp>(loc, x, y); }
  Value max(Value x, Value y) { return b.create<MaxOp>(loc, x, y); }
  Value pow(Value x, Value y) { return b.create<PowOp>(loc, x, y); }
  Value sqrt(Value x) { return b.create<SqrtOp>(loc, x); }
  Value cos(Value x) { return b.create<CosOp>(loc, x); }
  /// 1 where x > 0, else 0.
  Value step(Value x) { return b.create<StepOp>(loc, x); }
  /// 1 where x == k for a small integer code k held in a float.
  Value is(Value x, double k) {
    Value d = sub(x, c(k));
    return step(sub(c(0.5), b.create<AbsOp>(loc, d)));
  }
  /// Sum of squares of every element: a 0-d tensor.
  Value sumSquares(Value x) {
    auto t = llvm::cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(0, t.getRank()));
    Value sq = mul(x, x);
    if (dims.empty())
      return sq;
    return b.create<ReduceSumOp>(loc, sq, dims, /*keepdim=*/false);
  }
};

struct TrainStepPass : public tfc::impl::TfcTrainStepBase<TrainStepPass> {
  using TfcTrainStepBase::TfcTrainStepBase;
  std::string lossEntry;

  /// The weight-decay mask: matrices by default, overridden by name.
  bool decaysByDefault(StringRef name, RankedTensorType type) const {
    auto matches = [&](ArrayRef<std::string> patterns) {
      return llvm::any_of(patterns, [&](const std::string &p) {
        StringRef pattern(p);
        return pattern.ends_with("*") ? name.starts_with(pattern.drop_back())
                                      : name == pattern;
      });
    };
    if (matches(noDecay))
      return false;
    if (matches(decay))
      return true;
    return type.getRank() >= 2;
  }

  void runOnOperation() override {
    // The option stays as the user gave it; the default is resolved per
    // module.
    lossEntry = trainingLossEntry(getOperation(), entry);
    if (failed(build(getOperation())))
      signalPassFailure();
  }

  LogicalResult build(ModuleOp module) {
    bool adamw = optimizer == "adamw";
    if (!adamw && optimizer != "sgd")
      return module.emitError("tfc-train-step: unknown optimizer '")
             << optimizer << "' (adamw or sgd)";
    auto grad = module.lookupSymbol<func::FuncOp>(lossEntry + "_grad");
    if (!grad || grad.isExternal())
      return module.emitError("tfc-train-step: no '")
             << lossEntry << "_grad' entry; run tfc-autodiff{entry=" << lossEntry
             << "} first";
    if (module.lookupSymbol("train_step"))
      return module.emitError("tfc-train-step: 'train_step' already exists");

    OpBuilder b(module.getContext());
    Location loc = grad.getLoc();
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    auto i64 = RankedTensorType::get({}, b.getI64Type());

    // Module state, declared after the parameters and existing state: the
    // step counter and the optimizer's moments.
    b.setInsertionPointToStart(module.getBody());
    for (Operation &op : module.getBody()->getOperations())
      if (llvm::isa<ParamOp, StateOp>(op))
        b.setInsertionPointAfter(&op);
    StringRef stepName = "train.step";
    if (!module.lookupSymbol(stepName))
      b.create<StateOp>(loc, stepName, i64, "zeros");
    // type: the gradient's, which the moments take; paramType: the
    // parameter's. They differ when the gradient is the rank's block of it
    // (shard: tfc.zero_shard from tfc-zero-shard).
    struct Trained {
      StringAttr param;
      RankedTensorType type;
      std::string m, v;
      RankedTensorType paramType;
      DictionaryAttr shard;
    };
    SmallVector<Trained> trained;
    SmallVector<std::string> zeroShards;
    for (unsigned i = 1; i < grad.getNumResults(); ++i) {
      auto of = grad.getResultAttrOfType<StringAttr>(i, attr::kGradOf);
      if (!of)
        return grad.emitError("tfc-train-step: result ")
               << i << " of '" << grad.getName() << "' has no tfc.grad_of";
      auto paramOp = module.lookupSymbol<ParamOp>(of.getValue());
      if (!paramOp)
        return grad.emitError("tfc-train-step: result ")
               << i << " of '" << grad.getName() << "' is the gradient of '"
               << of.getValue() << "', which is no tfc.param of the module";
      Trained t{of,
                llvm::cast<RankedTensorType>(grad.getResultTypes()[i]),
                "",
                "",
                llvm::cast<RankedTensorType>(paramOp.getType()),
                grad.getResultAttrOfType<DictionaryAttr>(i, attr::kZeroShard)};
      if (!t.shard && t.type != t.paramType)
        return grad.emitError("tfc-train-step: result ")
               << i << " of '" << grad.getName() << "' is " << t.type
               << " but parameter '" << of.getValue() << "' is " << t.paramType
               << " (and it is no tfc.zero_shard)";
      t.m = ((adamw ? "opt.m." : "opt.buf.") + of.getValue()).str();
      t.v = ("opt.v." + of.getValue()).str();
      for (const std::string &name : {t.m, t.v}) {
        if (!adamw && name == t.v)
          continue;
        if (module.lookupSymbol(name))
          return module.emitError("tfc-train-step: state '")
                 << name << "' already exists";
        b.create<StateOp>(loc, name, t.type, "zeros");
        if (t.shard)
          zeroShards.push_back(name + "=" + of.getValue().str());
      }
      trained.push_back(t);
    }
    // The runtime gathers these blocks into whole tensors for checkpoints.
    if (!zeroShards.empty()) {
      auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata);
      module->setAttr(attr::kMetadata,
                      b.getStringAttr(withMetadataEntry(
                          meta ? meta.getValue() : "", TFC_METADATA_ZERO_SHARDS,
                          "\"" + llvm::join(zeroShards, ",") + "\"")));
    }

    // Signature: the loss inputs, then the hyper-parameters.
    SmallVector<std::string> hyper = {"lr",           "min_lr",  "warmup",
                                      "total_steps",  "schedule", "weight_decay",
                                      "grad_clip"};
    if (adamw)
      hyper.append({"beta1", "beta2", "eps"});
    else
      hyper.push_back("momentum");
    SmallVector<Type> inputs(grad.getArgumentTypes());
    inputs.append(hyper.size(), f32);
    // f16 mixed precision (tfc-autocast): dynamic loss scaling.
    auto scaleState = module.lookupSymbol<StateOp>(attr::kLossScaleState);
    auto goodState = module.lookupSymbol<StateOp>(attr::kGoodStepsState);
    bool scaled = scaleState && goodState;
    SmallVector<Type> outputTypes(scaled ? 6 : 3, f32);
    b.setInsertionPointAfter(grad);
    auto train = b.create<func::FuncOp>(
        loc, "train_step", b.getFunctionType(inputs, outputTypes));
    for (unsigned i = 0; i < grad.getNumArguments(); ++i)
      train.setArgAttrs(i, grad.getArgAttrDict(i));
    for (auto [i, name] : llvm::enumerate(hyper))
      train.setArgAttr(grad.getNumArguments() + i, attr::kName,
                       b.getStringAttr(name));
    // The runtime binds these by name (runtime/src/loops/train_step.cpp).
    const char *outputs[] = {"loss",       "lr",         "grad_norm",
                             "loss_scale", "next_loss_scale", "overflow"};
    for (unsigned i = 0; i < outputTypes.size(); ++i)
      train.setResultAttr(i, attr::kName, b.getStringAttr(outputs[i]));

    // Forward and backward: grad's body, inlined.
    Block *body = train.addEntryBlock();
    IRMapping mapping;
    for (unsigned i = 0; i < grad.getNumArguments(); ++i)
      mapping.map(grad.getArgument(i), body->getArgument(i));
    b.setInsertionPointToEnd(body);
    Block &gradBody = grad.getBody().front();
    for (Operation &op : gradBody.without_terminator())
      b.clone(op, mapping);
    SmallVector<Value> results;
    for (Value v : gradBody.getTerminator()->getOperands())
      results.push_back(mapping.lookup(v));
    auto hp = [&](StringRef name) {
      auto it = llvm::find(hyper, name.str());
      return body->getArgument(grad.getNumArguments() +
                               std::distance(hyper.begin(), it));
    };
    Arith a{b, loc};

    // Global-norm clipping (off when grad_clip <= 0). Shards of a group add
    // up to the whole only after a sum over its ranks: one all_reduce of
    // their partial sum of squares per group (ZeRO's zero padding adds 0).
    // Under tensor parallelism (tfc-tensor-parallel) a split parameter's
    // gradient is this rank's slice: the slices' sums of squares are summed
    // over the "tp" ranks; the whole ones are the same on every rank. Both
    // (--zero=1 with --dp x --tp): a split parameter's shard sums over its
    // data-parallel group to this rank's slice, then over "tp".
    Value sumsq = a.c(0.0), splitSumsq;
    int64_t splitRanks = 0;
    // Per ZeRO group: the partial sums of the whole parameters' shards and
    // of the split ones'.
    llvm::MapVector<DictionaryAttr, std::pair<Value, Value>> shardSumsq;
    auto accumulate = [&](Value &into, Value s) {
      into = into ? a.add(into, s) : s;
    };
    for (auto [i, tr] : llvm::enumerate(trained)) {
      Value s = a.sumSquares(results[i + 1]);
      auto param = module.lookupSymbol<ParamOp>(tr.param);
      auto ranks = param ? param->getAttrOfType<IntegerAttr>(attr::kShardRanks)
                         : IntegerAttr();
      if (ranks)
        splitRanks = ranks.getInt();
      if (tr.shard) {
        auto &[whole, split] = shardSumsq[tr.shard];
        accumulate(ranks ? split : whole, s);
      } else if (ranks) {
        accumulate(splitSumsq, s);
      } else {
        sumsq = a.add(sumsq, s);
      }
    }
    // The rank in each group, for the block of each parameter it updates:
    // rank r's block of the reduce-scatter (sum) of [0, 1, ..., n-1] over n
    // ranks is n x r, exact in f32 (a float of a few bytes, once a step;
    // the host API has no rank query that compiled code could call).
    llvm::MapVector<DictionaryAttr, Value> shardRank;
    for (auto &[shard, partials] : shardSumsq) {
      auto group = shard.getAs<StringAttr>("group");
      auto size = shard.getAs<IntegerAttr>("size");
      auto [whole, split] = partials;
      if (whole)
        sumsq = a.add(sumsq, b.create<AllReduceOp>(loc, whole, group,
                                                   b.getStringAttr("sum"), size));
      if (split)
        accumulate(splitSumsq, b.create<AllReduceOp>(loc, split, group,
                                                     b.getStringAttr("sum"), size));
      int64_t n = size.getInt();
      auto ranksType = RankedTensorType::get({n}, b.getF32Type());
      SmallVector<float> ranks;
      for (int64_t r = 0; r < n; ++r)
        ranks.push_back(static_cast<float>(r));
      Value all = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(ranksType, llvm::ArrayRef<float>(ranks)));
      Value mine = b.create<ReduceScatterOp>(loc, all, group,
                                             b.getStringAttr("sum"), size);
      mine = a.div(b.create<ReshapeOp>(loc, f32, mine), a.c(double(n)));
      shardRank[shard] = b.create<CastOp>(
          loc, RankedTensorType::get({}, b.getI32Type()), mine);
    }
    if (splitSumsq)
      sumsq = a.add(sumsq, b.create<AllReduceOp>(loc, splitSumsq,
                                                 b.getStringAttr("tp"),
                                                 b.getStringAttr("sum"),
                                                 b.getI64IntegerAttr(splitRanks)));
    Value norm = a.sqrt(sumsq);
    Value clip = hp("grad_clip");
    Value on = a.step(clip);
    Value coef = a.min(a.c(1.0), a.div(clip, a.add(norm, a.c(1e-6))));
    Value gradScale = a.add(a.mul(on, coef), a.sub(a.c(1.0), on));

    // ok = 1 when every gradient is finite, else 0 (the step is skipped).
    // The sum of squares is inf or NaN exactly when some gradient is (or
    // when it overflows f32 itself, which counts as an overflow too); step
    // compares with >, so NaN gives 0. Without loss scaling, always 1.
    Value ok = scaled ? a.step(a.sub(a.c(3.4e38), sumsq)) : Value();

    // The step counter t (1 for the first update) and the learning rate. A
    // skipped step does not count (GradScaler skips optimizer.step(), which
    // advances Adam's step), so neither the bias correction nor the
    // schedule moves.
    Value stepOld = b.create<LoadOp>(loc, i64, stepName);
    Value one64 = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(i64, b.getI64IntegerAttr(1)));
    Value stepNew = b.create<AddOp>(
        loc, stepOld, scaled ? b.create<CastOp>(loc, i64, ok).getResult() : one64);
    b.create<StoreOp>(loc, stepNew, stepName);
    Value t = b.create<CastOp>(loc, f32, stepNew);
    // A first step that is skipped leaves t = 0; its update is discarded,
    // but 1 - beta^0 = 0 would still make it NaN, and NaN x 0 is NaN.
    Value tc = scaled ? a.max(t, a.c(1.0)) : t;
    Value lr = hp("lr"), minLr = hp("min_lr"), warmup = hp("warmup"),
          total = hp("total_steps"), schedule = hp("schedule");
    // Warm-up factor min(1, t / warmup), 1 without warm-up.
    Value warm = a.min(a.c(1.0), a.div(t, a.max(warmup, a.c(1e-9))));
    warm = a.add(a.mul(a.step(warmup), warm), a.sub(a.c(1.0), a.step(warmup)));
    // Decay progress in [0, 1] after the warm-up.
    Value progress = a.div(a.sub(t, warmup), a.max(a.sub(total, warmup), a.c(1.0)));
    progress = a.min(a.c(1.0), a.max(a.c(0.0), progress));
    Value linear = a.sub(a.c(1.0), progress);
    Value cosine = a.mul(a.c(0.5), a.add(a.c(1.0), a.cos(a.mul(a.c(M_PI), progress))));
    Value decayed = [&](Value shape) {
      return a.add(minLr, a.mul(a.sub(lr, minLr), shape));
    }(a.add(a.mul(a.is(schedule, 1), linear), a.mul(a.is(schedule, 2), cosine)));
    Value isConstant = a.is(schedule, 0);
    Value lrNow = a.add(a.mul(isConstant, lr),
                        a.mul(a.sub(a.c(1.0), isConstant), decayed));
    // During warm-up the rate ramps towards lr whatever the schedule.
    Value inWarmup = a.step(a.sub(warmup, t));
    lrNow = a.add(a.mul(inWarmup, a.mul(lr, warm)),
                  a.mul(a.sub(a.c(1.0), inWarmup), lrNow));

    // The update of every trainable parameter.
    Value wd = hp("weight_decay");
    // On a skipped step the gradient is replaced by zeros *before* it is
    // used, so every new value is finite, and the old values are kept
    // (1 x new + 0 x old is new exactly, 0 x new + 1 x old is old). tfc has
    // no select; a dynamic_slice picking row `ok` of [zeros; g] is one.
    Value okIndex = scaled ? b.create<CastOp>(
                                 loc, RankedTensorType::get({}, b.getI32Type()), ok)
                                 .getResult()
                           : Value();
    auto finiteOr0 = [&](Value g) {
      auto type = llvm::cast<RankedTensorType>(g.getType());
      SmallVector<int64_t> rowShape = {1};
      rowShape.append(type.getShape().begin(), type.getShape().end());
      auto row = RankedTensorType::get(rowShape, type.getElementType());
      Value zeros = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(row, b.getFloatAttr(type.getElementType(), 0.0)));
      Value gRow = b.create<ReshapeOp>(loc, row, g);
      rowShape[0] = 2;
      Value both = b.create<ConcatOp>(
          loc, RankedTensorType::get(rowShape, type.getElementType()),
          ValueRange{zeros, gRow}, /*dim=*/0);
      Value picked = b.create<DynamicSliceOp>(loc, row, both, okIndex, /*dim=*/0);
      return b.create<ReshapeOp>(loc, type, picked).getResult();
    };
    auto keepUnlessOk = [&](Value newValue, Value oldValue) {
      return scaled ? a.add(a.mul(ok, newValue),
                            a.mul(a.sub(a.c(1.0), ok), oldValue))
                    : newValue;
    };
    for (auto [i, tr] : llvm::enumerate(trained)) {
      Value g = a.mul(results[i + 1], gradScale);
      if (scaled)
        g = finiteOr0(g);
      Value pWhole = b.create<LoadOp>(loc, tr.paramType, tr.param.getValue());
      // ZeRO: the rank's block of the flattened, zero-padded parameter.
      int64_t numel = tr.paramType.getNumElements();
      int64_t block = tr.type.getNumElements();
      int64_t ranks =
          tr.shard ? tr.shard.getAs<IntegerAttr>("size").getInt() : 1;
      auto flatType = [&](ArrayRef<int64_t> shape) {
        return RankedTensorType::get(shape, tr.paramType.getElementType());
      };
      Value p = pWhole;
      if (tr.shard) {
        Value flat = b.create<ReshapeOp>(loc, flatType({numel}), pWhole);
        if (block * ranks != numel) {
          Value zeros = b.create<ConstantOp>(
              loc, DenseElementsAttr::get(flatType({block * ranks - numel}),
                                          b.getF32FloatAttr(0.0)));
          flat = b.create<ConcatOp>(loc, flatType({block * ranks}),
                                    ValueRange{flat, zeros}, /*dim=*/0);
        }
        Value rows = b.create<ReshapeOp>(loc, flatType({ranks, block}), flat);
        Value mine = b.create<DynamicSliceOp>(loc, flatType({1, block}), rows,
                                              shardRank[tr.shard], /*dim=*/0);
        p = b.create<ReshapeOp>(loc, tr.type, mine);
      }
      bool decays = decaysByDefault(tr.param.getValue(), tr.paramType);
      Value pNew;
      if (adamw) {
        Value b1 = hp("beta1"), b2 = hp("beta2"), eps = hp("eps");
        Value m = b.create<LoadOp>(loc, tr.type, tr.m);
        Value v = b.create<LoadOp>(loc, tr.type, tr.v);
        Value mNew = a.add(a.mul(b1, m), a.mul(a.sub(a.c(1.0), b1), g));
        Value vNew = a.add(a.mul(b2, v), a.mul(a.sub(a.c(1.0), b2), a.mul(g, g)));
        Value c1 = a.sub(a.c(1.0), a.pow(b1, tc));
        Value c2 = a.sub(a.c(1.0), a.pow(b2, tc));
        Value update = a.div(a.div(mNew, c1), a.add(a.sqrt(a.div(vNew, c2)), eps));
        Value decayed = decays ? a.mul(p, a.sub(a.c(1.0), a.mul(lrNow, wd))) : p;
        pNew = a.sub(decayed, a.mul(lrNow, update));
        b.create<StoreOp>(loc, keepUnlessOk(mNew, m), tr.m);
        b.create<StoreOp>(loc, keepUnlessOk(vNew, v), tr.v);
      } else {
        Value buf = b.create<LoadOp>(loc, tr.type, tr.m);
        if (decays)
          g = a.add(g, a.mul(wd, p));
        Value bufNew = a.add(a.mul(hp("momentum"), buf), g);
        pNew = a.sub(p, a.mul(lrNow, bufNew));
        b.create<StoreOp>(loc, keepUnlessOk(bufNew, buf), tr.m);
      }
      pNew = keepUnlessOk(pNew, p);
      if (tr.shard) {
        // Every rank's updated block, in rank order; the padding dropped.
        Value whole = b.create<AllGatherOp>(
            loc, pNew, tr.shard.getAs<StringAttr>("group"),
            tr.shard.getAs<IntegerAttr>("size"));
        if (block * ranks != numel)
          whole =
              b.create<SliceOp>(loc, whole, ArrayRef<int64_t>{0},
                                ArrayRef<int64_t>{numel}, ArrayRef<int64_t>{1});
        pNew = b.create<ReshapeOp>(loc, tr.paramType, whole);
      }
      b.create<StoreOp>(loc, pNew, tr.param.getValue());
    }
    SmallVector<Value> returned = {results[0], lrNow, norm};
    if (scaled) {
      // GradScaler.update(): x0.5 on an overflow (and the count restarts),
      // x2 after kGrowthInterval good steps in a row.
      constexpr double kGrowthInterval = 2000;
      Value scale = b.create<LoadOp>(loc, f32, attr::kLossScaleState);
      Value good = b.create<LoadOp>(loc, f32, attr::kGoodStepsState);
      Value counted = a.mul(a.add(good, a.c(1.0)), ok);
      Value grow = a.step(a.sub(counted, a.c(kGrowthInterval - 0.5)));
      Value factor = a.add(a.mul(ok, a.add(a.c(1.0), grow)),
                           a.mul(a.sub(a.c(1.0), ok), a.c(0.5)));
      Value next = a.mul(scale, factor);
      b.create<StoreOp>(loc, next, attr::kLossScaleState);
      b.create<StoreOp>(loc, a.mul(counted, a.sub(a.c(1.0), grow)),
                        attr::kGoodStepsState);
      returned.append({scale, next, a.sub(a.c(1.0), ok)});
    }
    b.create<func::ReturnOp>(loc, returned);
    return success();
  }
};

} // namespace
