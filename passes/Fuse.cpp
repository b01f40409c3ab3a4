//===- Fuse.cpp - the tfc-fuse pass ---------------------------------------===//
//
// Greedy producer-into-consumer fusion, in program order (XLA's instruction
// fusion and Inductor's pointwise fusion work the same way). Each pointwise
// op joins the groups of the pointwise producers of its operands when they
// iterate over the same shape and the merge is legal; a reduction swallows
// the group that computes its input when nothing else reads that group. A
// group becomes one tfc.fused op at the position of its last op. Only the
// kinds (and linear epilogues) that the target has kernels for are formed:
// the target is asked, never assumed (codegen/target/Target.h).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "codegen/target/Target.h"
#include "dialects/tfc/AttrNames.h"
#include "dialects/tfc/TfcOps.h"
#include "passes/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "tfc-fuse"

namespace tfc {
#define GEN_PASS_DEF_TFCFUSE
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

/// What a pointwise group may hold: broadcast_to reads its operand through
/// the group's broadcast indexing, like any other operand.
bool isPointwise(Operation *op) {
  return isElementwise(op) || llvm::isa<BroadcastToOp>(op);
}

bool isReduction(Operation *op) {
  if (!llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
    return false;
  // The fused loop accumulates in f32 and stores f32.
  auto t = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  return t.getElementType().isF32();
}

/// Ops that normalize each row of their input (the last dimension) and that
/// a row kernel ends with, after a pointwise prologue.
bool isRowOp(Operation *op) {
  if (!llvm::isa<LayerNormOp, RmsNormOp, SoftmaxOp, LogSoftmaxOp>(op))
    return false;
  auto type = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  auto lastDim = [&](uint64_t dim) {
    return static_cast<int64_t>(dim) == -1 ||
           static_cast<int64_t>(dim) == type.getRank() - 1;
  };
  if (!type.getElementType().isF32())
    return false;
  if (auto s = llvm::dyn_cast<SoftmaxOp>(op))
    return lastDim(s.getDim());
  if (auto s = llvm::dyn_cast<LogSoftmaxOp>(op))
    return lastDim(s.getDim());
  return true;
}

/// Splat constants are copied into every group that reads them: a register,
/// not a buffer.
bool isSplatConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto dense = llvm::dyn_cast<DenseElementsAttr>(c.getValue());
  return dense && dense.isSplat();
}

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

//===----------------------------------------------------------------------===//
// Attention: softmax(scale * Q K^T [+ causal mask]) V -> tfc.attention
//===----------------------------------------------------------------------===//

/// The splat value of a constant operand, if it is one.
std::optional<double> splatValue(Value v) {
  if (!isSplatConstant(v))
    return std::nullopt;
  auto dense = llvm::cast<DenseElementsAttr>(
      v.getDefiningOp<ConstantOp>().getValue());
  if (!llvm::isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// Whether `v` is a constant [.., Tq, Tk] additive mask that hides key j from
/// query i exactly when j > i + (Tk - Tq): tfc.attention's `causal`.
bool isCausalMask(Value v, int64_t tq, int64_t tk) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto dense = llvm::dyn_cast<DenseElementsAttr>(c.getValue());
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (!dense || !type.getElementType().isF32() || type.getRank() < 2 ||
      type.getDimSize(type.getRank() - 2) != tq ||
      type.getDimSize(type.getRank() - 1) != tk ||
      type.getNumElements() != tq * tk)
    return false;
  auto values = dense.getValues<float>();
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < tk; ++j) {
      float m = values[i * tk + j];
      bool visible = j <= i + (tk - tq);
      // Hidden keys must vanish from the softmax: -inf or any value that
      // underflows exp() whatever the scores are.
      if (visible ? m != 0.0f : m > -1e30f)
        return false;
    }
  return true;
}

/// Replaces the unfused attention sequence ending at `pv` by one
/// tfc.attention (FlashAttention: the Tq x Tk scores never reach memory).
/// Every intermediate must have no other reader.
bool fuseAttention(MatmulOp pv) {
  auto single = [](Value v) { return v.hasOneUse(); };
  if (pv.getTransposeLhs() || pv.getTransposeRhs())
    return false;
  auto softmax = pv.getLhs().getDefiningOp<SoftmaxOp>();
  if (!softmax || !single(softmax.getResult()))
    return false;
  auto scoresType = llvm::cast<RankedTensorType>(softmax.getType());
  if (scoresType.getRank() != 4 || !scoresType.getElementType().isF32() ||
      (static_cast<int64_t>(softmax.getDim()) != 3 &&
       static_cast<int64_t>(softmax.getDim()) != -1))
    return false;
  int64_t tq = scoresType.getDimSize(2), tk = scoresType.getDimSize(3);
  // The chain, consumer first; masks and scales stay for canonicalization.
  SmallVector<Operation *> chain{pv, softmax};
  Value x = softmax.getX();
  bool causal = false;
  if (auto add = x.getDefiningOp<AddOp>(); add && single(x)) {
    for (auto [mask, other] : {std::pair{add.getRhs(), add.getLhs()},
                               std::pair{add.getLhs(), add.getRhs()}})
      if (isCausalMask(mask, tq, tk) && other.getType() == scoresType) {
        causal = true;
        chain.push_back(add);
        x = other;
        break;
      }
  }
  double scale = 1.0;
  if (auto mul = x.getDefiningOp<MulOp>(); mul && single(x)) {
    for (auto [c, other] : {std::pair{mul.getRhs(), mul.getLhs()},
                            std::pair{mul.getLhs(), mul.getRhs()}})
      if (auto value = splatValue(c); value && other.getType() == scoresType) {
        scale = *value;
        chain.push_back(mul);
        x = other;
        break;
      }
  }
  auto qk = x.getDefiningOp<MatmulOp>();
  if (!qk || !single(x) || qk.getTransposeLhs() || !qk.getTransposeRhs())
    return false;
  Value q = qk.getLhs(), k = qk.getRhs(), v = pv.getRhs();
  auto shape = [](Value t) {
    return llvm::cast<RankedTensorType>(t.getType()).getShape();
  };
  // Same batch and heads everywhere (no broadcasting over batch dims).
  if (shape(q).size() != 4 || shape(k).size() != 4 || shape(v).size() != 4 ||
      shape(k).take_front(2) != shape(q).take_front(2) ||
      shape(v).take_front(2) != shape(q).take_front(2))
    return false;
  OpBuilder b(pv);
  auto attention = b.create<AttentionOp>(
      pv.getLoc(), pv.getType(), q, k, v, /*offset=*/Value(), causal,
      b.getF32FloatAttr(static_cast<float>(scale)));
  pv.getResult().replaceAllUsesWith(attention.getResult());
  chain.push_back(qk);
  for (Operation *op : chain)
    op->erase();
  return true;
}

enum class GroupKind { Pointwise, Reduction, Row, Linear };

struct Group {
  SmallVector<Operation *> ops; // in program order
  SmallVector<int64_t> shape;   // the iteration space
  GroupKind kind = GroupKind::Pointwise; // only pointwise groups grow
};

StringRef kindName(GroupKind kind) {
  switch (kind) {
  case GroupKind::Pointwise:
    return "pointwise";
  case GroupKind::Reduction:
    return "reduction";
  case GroupKind::Row:
    return "row";
  case GroupKind::Linear:
    return "linear";
  }
  return "";
}

/// linear -> [activation] -> [+ residual of the same shape]: the ops the
/// target's linear kernel applies to each output tile in cache, or just the
/// linear when nothing follows that it can take. Every value but the last
/// must have no other reader (the kernel writes only the final result).
SmallVector<Operation *> linearEpilogue(LinearOp linear, const Target &target) {
  SmallVector<Operation *> chain{linear};
  auto type = llvm::cast<RankedTensorType>(linear.getType());
  auto takes = [&](Operation *op) {
    return target.supportsLinearEpilogue(op, type.getElementType());
  };
  auto soleUser = [&](Operation *op) -> Operation * {
    Value r = op->getResult(0);
    return r.hasOneUse() ? *r.getUsers().begin() : nullptr; // maybe a return
  };
  Operation *next = soleUser(linear);
  if (next && !llvm::isa<AddOp>(next) && next->getNumResults() == 1 &&
      next->getNumOperands() == 1 && next->getResult(0).getType() == type &&
      isElementwise(next) && takes(next)) {
    chain.push_back(next);
    next = soleUser(next);
  }
  if (auto add = llvm::dyn_cast_or_null<AddOp>(next))
    if (add.getLhs().getType() == type && add.getRhs().getType() == type &&
        add.getLhs() != add.getRhs() && takes(add))
      chain.push_back(add);
  return chain;
}

class Fuser {
public:
  Fuser(func::FuncOp func, const Target &target, unsigned maxInputs,
        unsigned maxOps, bool print)
      : func(func), target(target), maxInputs(maxInputs), maxOps(maxOps),
        print(print) {}

  void run();

private:
  /// Whether `members` (a candidate group ending at `last`) can become one
  /// kernel placed at `last`: every value it defines that is read outside
  /// the group is read after `last`, and it respects the size limits.
  bool legal(ArrayRef<Operation *> members, Operation *last) const;
  SetVector<Value> externalInputs(ArrayRef<Operation *> members) const;
  bool contains(ArrayRef<Operation *> members, Operation *op) const {
    return llvm::is_contained(members, op);
  }
  void formGroups();
  void materialize(Group &group);

  func::FuncOp func;
  const Target &target;
  unsigned maxInputs, maxOps;
  bool print;
  DenseMap<Operation *, int64_t> position;
  DenseMap<Operation *, unsigned> groupOf;
  std::vector<Group> groups;
};

SetVector<Value> Fuser::externalInputs(ArrayRef<Operation *> members) const {
  SetVector<Value> inputs;
  for (Operation *op : members)
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && contains(members, def))
        continue;
      if (!isSplatConstant(v))
        inputs.insert(v);
    }
  return inputs;
}

bool Fuser::legal(ArrayRef<Operation *> members, Operation *last) const {
  if (members.size() > maxOps)
    return false;
  int64_t at = position.lookup(last);
  for (Operation *op : members)
    for (Operation *user : op->getUsers())
      if (!contains(members, user) && position.lookup(user) < at)
        return false;
  // Scalars are loaded once into registers; only tensors are streams.
  return llvm::count_if(externalInputs(members), [](Value v) {
           return llvm::cast<RankedTensorType>(v.getType()).getNumElements() > 1;
         }) <= maxInputs;
}

void Fuser::formGroups() {
  Block &block = func.getBody().front();
  for (Operation &op : block)
    position[&op] = position.size();

  for (Operation &opRef : block.without_terminator()) {
    Operation *op = &opRef;
    if (groupOf.count(op))
      continue; // Taken by a linear's epilogue.
    auto linear = llvm::dyn_cast<LinearOp>(op);
    if (linear && target.supportsFusedKind("linear")) {
      SmallVector<Operation *> chain = linearEpilogue(linear, target);
      // An add of two linears' results is the epilogue of the first only.
      while (chain.size() > 1 && groupOf.count(chain.back()))
        chain.pop_back();
      if (chain.size() < 2)
        continue;
      unsigned id = groups.size();
      groups.push_back({chain, {}, GroupKind::Linear});
      for (Operation *m : chain)
        groupOf[m] = id;
      continue;
    }
    if (isPointwise(op) && target.supportsFusedKind("pointwise")) {
      ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
      // The open pointwise groups of the producers, over the same shape.
      SmallVector<unsigned> candidates;
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !groupOf.count(def))
          continue;
        unsigned g = groupOf[def];
        // A micro-batch accumulator ends its group (see kAccumulator).
        if (groups[g].kind == GroupKind::Pointwise &&
            ArrayRef(groups[g].shape) == shape &&
            !llvm::is_contained(candidates, g) &&
            !llvm::any_of(groups[g].ops, [](Operation *m) {
              return m->hasAttr(attr::kAccumulator);
            }))
          candidates.push_back(g);
      }
      // Join as many of them as stays legal, in operand order.
      SmallVector<Operation *> members{op};
      SmallVector<unsigned> joined;
      for (unsigned g : candidates) {
        SmallVector<Operation *> trial(groups[g].ops);
        trial.append(members);
        if (legal(trial, op)) {
          members = trial;
          joined.push_back(g);
        }
      }
      llvm::sort(members, [&](Operation *a, Operation *b) {
        return position[a] < position[b];
      });
      for (unsigned g : joined)
        groups[g].ops.clear();
      unsigned id = groups.size();
      groups.push_back({members, SmallVector<int64_t>(shape)});
      for (Operation *m : members)
        groupOf[m] = id;
      continue;
    }
    if (isReduction(op) && target.supportsFusedKind("reduction")) {
      Operation *def = op->getOperand(0).getDefiningOp();
      if (!def || !groupOf.count(def))
        continue;
      Group &producer = groups[groupOf[def]];
      if (producer.kind != GroupKind::Pointwise)
        continue;
      // Only when the reduction is the group's sole reader outside: the
      // fused loop produces the reduced value and nothing else.
      SmallVector<Operation *> trial(producer.ops);
      trial.push_back(op);
      bool onlyReduced = llvm::all_of(producer.ops, [&](Operation *m) {
        return llvm::all_of(m->getUsers(), [&](Operation *u) {
          return contains(trial, u);
        });
      });
      if (!onlyReduced || !legal(trial, op))
        continue;
      producer.ops.push_back(op);
      producer.kind = GroupKind::Reduction;
      groupOf[op] = groupOf[def];
      continue;
    }
    if (isRowOp(op) && target.supportsFusedKind("row")) {
      Operation *def = op->getOperand(0).getDefiningOp();
      if (!def || !groupOf.count(def) ||
          groups[groupOf[def]].kind != GroupKind::Pointwise)
        continue;
      Group &producer = groups[groupOf[def]];
      SmallVector<Operation *> trial(producer.ops);
      trial.push_back(op);
      // The row kernel reads, per element of a row, rows of the same shape,
      // vectors along the row and scalars; the norm's weight and bias are
      // buffers, not constants copied inside.
      ArrayRef<int64_t> space = shapeOf(op->getOperand(0));
      bool rowShaped = llvm::all_of(externalInputs(trial), [&](Value v) {
        auto t = llvm::cast<RankedTensorType>(v.getType());
        return t.getShape() == space || t.getNumElements() == 1 ||
               (t.getRank() > 0 && t.getShape().back() == space.back() &&
                t.getNumElements() == space.back());
      });
      bool constantOperands = llvm::any_of(
          op->getOperands().drop_front(), [](Value v) {
            return isSplatConstant(v);
          });
      if (!rowShaped || constantOperands || !legal(trial, op))
        continue;
      producer.ops.push_back(op);
      producer.kind = GroupKind::Row;
      groupOf[op] = groupOf[def];
    }
  }
}

void Fuser::materialize(Group &group) {
  ArrayRef<Operation *> members = group.ops;
  Operation *last = members.back();
  SetVector<Value> inputs = externalInputs(members);
  SmallVector<Value> outputs;
  for (Operation *op : members)
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !contains(members, u); }))
        outputs.push_back(r);
  if (outputs.empty())
    return; // Dead; canonicalization removes it.

  OpBuilder b(last);
  SmallVector<Type> resultTypes;
  for (Value v : outputs)
    resultTypes.push_back(v.getType());
  auto fused = b.create<FusedOp>(
      last->getLoc(), resultTypes,
      b.getStringAttr(kindName(group.kind)),
      inputs.getArrayRef());
  Block *body = b.createBlock(&fused.getBody());
  IRMapping mapping;
  for (Value v : inputs)
    mapping.map(v, body->addArgument(v.getType(), v.getLoc()));
  b.setInsertionPointToStart(body);
  for (Operation *op : members) {
    for (Value v : op->getOperands())
      if (!mapping.contains(v) && isSplatConstant(v))
        b.clone(*v.getDefiningOp(), mapping);
    b.clone(*op, mapping);
  }
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(mapping.lookup(v));
  b.create<YieldOp>(last->getLoc(), yielded);

  if (print) {
    OpCost before, after = estimateCost(fused);
    for (Operation *op : members)
      before += estimateCost(op);
    llvm::errs() << "tfc-fuse: @" << func.getName() << ": " << fused.getKind()
                 << " kernel of " << members.size() << " ops (";
    llvm::interleave(
        members, llvm::errs(),
        [](Operation *op) { llvm::errs() << op->getName().stripDialect(); },
        " ");
    llvm::errs() << "), " << inputs.size() << " in, " << outputs.size()
                 << " out: " << before.bytes() << " -> " << after.bytes()
                 << " bytes\n";
  }

  for (auto [old, now] : llvm::zip(outputs, fused.getResults()))
    old.replaceAllUsesWith(now);
  for (Operation *op : llvm::reverse(members))
    op->erase();
}

/// Kernels and the bytes they move, by the cost model.
std::pair<int64_t, int64_t> countKernels(func::FuncOp func) {
  int64_t kernels = 0, bytes = 0;
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (isFreeOp(&op))
      continue;
    ++kernels;
    bytes += estimateCost(&op).bytes();
  }
  return {kernels, bytes};
}

void Fuser::run() {
  if (!func.getBody().hasOneBlock())
    return;
  auto [kernelsBefore, bytesBefore] = countKernels(func);
  int64_t numAttention = 0;
  // In program order: a match erases its scores matmul, which comes before
  // its values matmul and so has been visited already.
  SmallVector<MatmulOp> matmuls(func.getBody().getOps<MatmulOp>());
  if (!target.supportsFusedKind("attention"))
    matmuls.clear();
  for (MatmulOp pv : matmuls)
    if (fuseAttention(pv)) {
      ++numAttention;
      if (print)
        llvm::errs() << "tfc-fuse: @" << func.getName()
                     << ": attention sequence -> tfc.attention\n";
    }
  formGroups();
  int64_t numGroups = 0;
  for (Group &g : groups)
    if (g.ops.size() >= 2) {
      materialize(g);
      ++numGroups;
    }
  // Splat constants now copied into groups may have no users left.
  for (Operation &op :
       llvm::make_early_inc_range(func.getBody().front().without_terminator()))
    if (llvm::isa<ConstantOp>(op) && op.use_empty())
      op.erase();
  auto [kernelsAfter, bytesAfter] = countKernels(func);
  Builder b(func.getContext());
  func->setAttr(attr::kFusion,
                b.getDictionaryAttr({
                    b.getNamedAttr("kernels_before",
                                   b.getI64IntegerAttr(kernelsBefore)),
                    b.getNamedAttr("kernels_after",
                                   b.getI64IntegerAttr(kernelsAfter)),
                    b.getNamedAttr("groups", b.getI64IntegerAttr(numGroups)),
                    b.getNamedAttr("attention",
                                   b.getI64IntegerAttr(numAttention)),
                    b.getNamedAttr("bytes_before",
                                   b.getI64IntegerAttr(bytesBefore)),
                    b.getNamedAttr("bytes_after",
                                   b.getI64IntegerAttr(bytesAfter)),
                }));
  if (print)
    llvm::errs() << "tfc-fuse: @" << func.getName() << ": " << kernelsBefore
                 << " -> " << kernelsAfter << " kernels, " << numGroups
                 << " fused, " << numAttention << " attention, " << bytesBefore << " -> " << bytesAfter
                 << " bytes moved\n";
}

struct FusePass : public tfc::impl::TfcFuseBase<FusePass> {
  using TfcFuseBase::TfcFuseBase;
  void runOnOperation() override {
    const Target *fuseTarget = lookupTarget(target);
    if (!fuseTarget) {
      getOperation().emitError("tfc-fuse: unknown target '")
          << target << "' (this build knows " << listTargets() << ")";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        Fuser(func, *fuseTarget, maxInputs, maxOps, print).run();
  }
};

} // namespace
