//===- ParallelLoops.cpp - the tfc-cpu-parallel-loops pass ----------------===//
//
// Splits the generated loops of CPU kernels over the runtime's threads. An
// `scf.parallel` at the top of a kernel (the emitters build one where the
// iterations are independent: elementwise and fused pointwise bodies, rows of
// norms and softmax, the kept dimensions of reductions, data movement) moves
// into a function of its own that runs a part [begin, end) of its first
// dimension; the kernel calls that function over the whole range, and
// tfc-cpu-launch-parallel turns the call into a parallel_for of the runtime.
//
// Each iteration still runs on one thread in the same order as before, so the
// results do not depend on the thread count or on how the range is split.
// Loops too small to pay for waking a thread (about a few microseconds) stay
// serial.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "dialects/tfc/AttrNames.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace tfc::cpu {
#define GEN_PASS_DEF_TFCCPUPARALLELLOOPS
#include "codegen/cpu/Passes.h.inc"
} // namespace tfc::cpu

using namespace mlir;

namespace {

/// The constant trip counts of a loop's dimensions (1 where not constant, or
/// where the step is not positive: MLIR 19's constantTripCount divides by it
/// and its verifiers let `step %c0` through).
SmallVector<int64_t> tripCounts(ValueRange lbs, ValueRange ubs,
                                ValueRange steps) {
  SmallVector<int64_t> trips;
  for (auto [lb, ub, step] : llvm::zip(lbs, ubs, steps)) {
    std::optional<int64_t> stepValue = getConstantIntValue(step);
    trips.push_back(stepValue && *stepValue <= 0
                        ? 1
                        : constantTripCount(lb, ub, step).value_or(1));
  }
  return trips;
}

/// The operations one iteration of `region` executes, nested loops with
/// constant bounds counted by their trip count (others count once).
int64_t workOf(Region &region) {
  int64_t work = 0;
  for (Operation &op : region.getOps()) {
    // A copy of a static view (a transpose's contiguous run) moves each of
    // its elements.
    if (auto copy = llvm::dyn_cast<memref::CopyOp>(op)) {
      auto type = llvm::cast<MemRefType>(copy.getSource().getType());
      work += type.hasStaticShape() ? type.getNumElements() : 1;
      continue;
    }
    SmallVector<int64_t> trips;
    if (auto loop = llvm::dyn_cast<scf::ForOp>(op))
      trips = tripCounts(loop.getLowerBound(), loop.getUpperBound(),
                         loop.getStep());
    else if (auto loop = llvm::dyn_cast<scf::ParallelOp>(op))
      trips = tripCounts(loop.getLowerBound(), loop.getUpperBound(),
                         loop.getStep());
    int64_t inner = 1;
    for (Region &nested : op.getRegions())
      inner += workOf(nested);
    work += computeProduct(trips) * inner;
  }
  return work;
}

/// The constant extents of a loop normalized to lower bound 0 and step 1, or
/// nothing.
std::optional<SmallVector<int64_t>> extentsOf(scf::ParallelOp loop) {
  SmallVector<int64_t> extents;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> upper = getConstantIntValue(ub);
    if (!isConstantIntValue(lb, 0) || !isConstantIntValue(step, 1) || !upper)
      return std::nullopt;
    extents.push_back(*upper);
  }
  return extents;
}

/// Whether `v`, defined in the kernel outside the loop, can be recomputed in
/// the part function from the kernel's arguments: constants and pure ops
/// (views of the argument buffers, index arithmetic) over such values.
bool isRecomputable(Value v, Block *kernelBody) {
  if (auto arg = llvm::dyn_cast<BlockArgument>(v))
    return arg.getOwner() == kernelBody;
  Operation *def = v.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || !isMemoryEffectFree(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return isRecomputable(operand, kernelBody);
  });
}

class Outliner {
public:
  /// Below `minWork` (loop-body operations executed, a rough count of
  /// scalar instructions before vectorization) a loop runs on the calling
  /// thread: waking a worker costs a few microseconds.
  Outliner(func::FuncOp kernel, SymbolTable &symbols, int64_t minWork)
      : kernel(kernel), symbols(symbols), minWork(minWork) {}

  /// Moves `loop` into a part function and calls it over the whole range;
  /// leaves it in place when it is too small or captures what a part cannot
  /// get.
  void run(scf::ParallelOp loop, unsigned index) {
    std::optional<SmallVector<int64_t>> extents = extentsOf(loop);
    if (!extents)
      return;
    int64_t iterations = computeProduct(*extents);
    int64_t perIteration = workOf(loop.getRegion());
    if (iterations * perIteration < minWork)
      return;

    // Split at the first leading dimensions that give the threads enough
    // rows: collapse them into one, keep the rest (the innermost stays a
    // loop of its own, which the vectorizer widens).
    IRRewriter rewriter(kernel.getContext());
    unsigned lead = 0, rank = extents->size();
    int64_t leadExtent = (*extents)[0];
    while (leadExtent < 64 && lead + 2 < rank)
      leadExtent *= (*extents)[++lead];
    // Only unit dimensions before the innermost: split the innermost.
    if (leadExtent == 1 && rank > 1) {
      lead = rank - 1;
      leadExtent = (*extents)[lead];
    }
    if (lead > 0) {
      std::vector<std::vector<unsigned>> groups(1);
      for (unsigned d = 0; d <= lead; ++d)
        groups[0].push_back(d);
      for (unsigned d = lead + 1; d < rank; ++d)
        groups.push_back({d});
      Operation *next = loop->getNextNode();
      collapseParallelLoops(rewriter, loop, groups);
      loop = llvm::dyn_cast_or_null<scf::ParallelOp>(next->getPrevNode());
      if (!loop)
        return;
    }
    // The captured values: the kernel's arguments are passed on; pure
    // values over them are recomputed in the part (so that constant strides
    // stay constant for the vectorizer); other scalars (a loaded position,
    // a count reduced before the loop) and dense buffers (scratch the kernel
    // allocated) are passed as arguments. A loop that captures any other
    // buffer (a view at a run-time offset) stays serial: with the
    // bare-pointer convention only dense buffers pass as pointers.
    Block *body = &kernel.getBody().front();
    llvm::SetVector<Value> captured;
    loop->walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (!loop.getRegion().isAncestor(operand.getParentRegion()))
          captured.insert(operand);
    });
    SmallVector<Value> passed;
    for (Value v : captured) {
      if (llvm::isa<BlockArgument>(v) || isRecomputable(v, body))
        continue;
      auto memref = llvm::dyn_cast<MemRefType>(v.getType());
      if (memref &&
          !(memref.hasStaticShape() && memref.getLayout().isIdentity()))
        return;
      passed.push_back(v);
    }

    int64_t perRow = iterations / leadExtent * perIteration;
    // Parts of about half the threshold's work, so that a loop just above
    // it still splits in two.
    int64_t grain =
        std::max<int64_t>(1, minWork / 2 / std::max<int64_t>(1, perRow));

    // The part: the kernel's arguments, the passed values, begin and end.
    MLIRContext *ctx = kernel.getContext();
    Location loc = loop.getLoc();
    Type indexType = IndexType::get(ctx);
    SmallVector<Type> argTypes(kernel.getArgumentTypes());
    for (Value s : passed)
      argTypes.push_back(s.getType());
    argTypes.push_back(indexType);
    argTypes.push_back(indexType);
    OpBuilder moduleBuilder(kernel);
    moduleBuilder.setInsertionPointAfter(kernel);
    auto part = moduleBuilder.create<func::FuncOp>(
        loc, (kernel.getSymName() + "_part" + llvm::Twine(index)).str(),
        FunctionType::get(ctx, argTypes, {}));
    part.setPrivate();
    part->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
    part->setAttr(tfc::cpu::kParallelAttr,
                  DenseI64ArrayAttr::get(ctx, {leadExtent, grain}));
    symbols.insert(part);
    Block *partBody = part.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(partBody);
    IRMapping map;
    for (auto [from, to] :
         llvm::zip(body->getArguments(), partBody->getArguments()))
      map.map(from, to);
    for (auto [i, s] : llvm::enumerate(passed))
      map.map(s, partBody->getArgument(body->getNumArguments() + i));
    // Recomputed values, cloned in their order in the kernel.
    llvm::SetVector<Operation *> recompute;
    std::function<void(Value)> collect = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || map.contains(v) || recompute.contains(def))
        return;
      for (Value operand : def->getOperands())
        collect(operand);
      recompute.insert(def);
    };
    for (Value v : captured)
      collect(v);
    for (Operation &op : body->getOperations())
      if (recompute.contains(&op))
        b.clone(op, map);
    auto cloned = llvm::cast<scf::ParallelOp>(b.clone(*loop, map));
    Value begin = partBody->getArgument(argTypes.size() - 2);
    Value end = partBody->getArgument(argTypes.size() - 1);
    cloned.getLowerBoundMutable()[0].set(begin);
    cloned.getUpperBoundMutable()[0].set(end);
    b.create<func::ReturnOp>(loc);

    // The kernel runs the part over the whole range.
    OpBuilder k(loop);
    SmallVector<Value> args(body->getArguments());
    args.append(passed);
    args.push_back(k.create<arith::ConstantIndexOp>(loc, 0));
    args.push_back(k.create<arith::ConstantIndexOp>(loc, leadExtent));
    k.create<func::CallOp>(loc, part, args);
    loop->erase();
  }

private:
  func::FuncOp kernel;
  SymbolTable &symbols;
  int64_t minWork;
};

struct ParallelLoopsPass
    : public tfc::cpu::impl::TfcCpuParallelLoopsBase<ParallelLoopsPass> {
  using TfcCpuParallelLoopsBase::TfcCpuParallelLoopsBase;
  void runOnOperation() override {
    if (minWork < 0)
      return;
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto kernel : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!kernel->hasAttr(tfc::attr::kKernel) || kernel.isExternal())
        continue;
      SmallVector<scf::ParallelOp> loops(
          kernel.getBody().front().getOps<scf::ParallelOp>());
      Outliner outliner(kernel, symbols, minWork);
      for (auto [i, loop] : llvm::enumerate(loops))
        outliner.run(loop, i);
    }
  }
};

} // namespace
