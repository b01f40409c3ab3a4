//===- PlanMemory.cpp - the tfc-plan-memory pass --------------------------===//
//
// Buffers (memref.alloc from tfc-lower-to-kernels) -> byte ranges of one arena
// per entry:
//   1. live intervals in op order: first to last use of the alloc or of any
//      view of it (returned and stored values are read by the copies at the
//      end of the entry);
//   2. in-place sharing at `tfc.in_place_ok` calls: a result joins the
//      buffer of an operand of its shape and element size that dies there;
//   3. greedy by size: largest first, each at the lowest aligned offset free
//      of every placed buffer whose interval intersects its own;
//   4. each alloc becomes a memref.view of the arena argument.
// tfc-verify-memory-plan checks the result from the IR alone.
//
//===----------------------------------------------------------------------===//
#include "codegen/plan/Passes.h"

#include "codegen/target/Target.h"
#include "dialects/tfc/AttrNames.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "tfc-plan-memory"

namespace tfc::plan {
#define GEN_PASS_DEF_TFCPLANMEMORY
#include "codegen/plan/Passes.h.inc"
} // namespace tfc::plan

using namespace mlir;
using namespace tfc;

namespace {

int64_t alignedBytes(MemRefType t, int64_t alignment) {
  int64_t bytes =
      t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
  return (bytes + alignment - 1) / alignment * alignment;
}

/// A buffer of the plan: one alloc, or several joined in place.
struct Buffer {
  int64_t bytes = 0;
  int64_t start = 0, end = 0; // Live at ops [start, end] of the entry.
  int64_t offset = -1;
  SmallVector<memref::AllocOp> allocs;
};

class EntryPlan {
public:
  EntryPlan(func::FuncOp entry, BlockArgument arena, int64_t alignment)
      : entry(entry), arena(arena), alignment(alignment) {}

  LogicalResult run(bool print);

private:
  /// Live interval of every alloc; zero-offset views (the alloc itself and
  /// reshapes of it) into `sameStart`, for the in-place check.
  LogicalResult computeIntervals();
  void shareInPlace();
  int64_t liveBound() const;
  /// Greedy by size; returns the arena's size.
  int64_t place();
  void rewrite(int64_t arenaBytes);

  func::FuncOp entry;
  BlockArgument arena;
  int64_t alignment;
  DenseMap<Operation *, int64_t> order;
  std::vector<Buffer> buffers;
  DenseMap<Value, unsigned> bufferOf; // alloc -> index into `buffers`
  // A value the call can see as the whole buffer: the alloc, or a
  // collapse/expand of it.
  DenseMap<Value, Value> wholeViewOf; // view -> alloc
};

LogicalResult EntryPlan::computeIntervals() {
  Block &body = entry.getBody().front();
  for (auto [i, op] : llvm::enumerate(body))
    order[&op] = i;
  for (auto alloc : body.getOps<memref::AllocOp>()) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !alloc.getDynamicSizes().empty())
      return alloc.emitError("tfc-plan-memory: a buffer must have a static "
                             "shape and the identity layout");
    Buffer buffer;
    buffer.bytes = alignedBytes(type, alignment);
    buffer.start = INT64_MAX;
    buffer.end = -1;
    // The alloc and its views, transitively.
    SmallVector<Value> worklist = {alloc.getResult()};
    wholeViewOf[alloc.getResult()] = alloc.getResult();
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (auto view = llvm::dyn_cast<ViewLikeOpInterface>(user);
            view && view.getViewSource() == v) {
          for (Value r : user->getResults()) {
            worklist.push_back(r);
            if (llvm::isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(
                    user) &&
                wholeViewOf.count(v))
              wholeViewOf[r] = alloc.getResult();
          }
          continue;
        }
        int64_t at = order.lookup(body.findAncestorOpInBlock(*user));
        buffer.start = std::min(buffer.start, at);
        buffer.end = std::max(buffer.end, at);
      }
    }
    if (buffer.end < 0) // Never used: give it the alloc's own position.
      buffer.start = buffer.end = order.lookup(alloc);
    buffer.allocs.push_back(alloc);
    bufferOf[alloc.getResult()] = buffers.size();
    buffers.push_back(std::move(buffer));
  }
  return success();
}

void EntryPlan::shareInPlace() {
  // Buffers are joined in op order, so a joined buffer's end is that of its
  // latest member.
  Block &body = entry.getBody().front();
  for (auto call : body.getOps<func::CallOp>()) {
    if (!call->hasAttr(attr::kInPlaceOk))
      continue;
    int64_t at = order.lookup(call);
    auto whole = [&](Value v) -> std::optional<unsigned> {
      Value alloc = wholeViewOf.lookup(v);
      if (!alloc)
        return std::nullopt;
      return bufferOf.lookup(alloc);
    };
    SmallVector<unsigned> taken;
    for (Value result : call.getOperands()) {
      auto r = whole(result);
      // A result is first used (written) here and not yet joined.
      if (!r || buffers[*r].start != at || buffers[*r].allocs.empty())
        continue;
      auto resultType = llvm::cast<MemRefType>(result.getType());
      for (Value operand : call.getOperands()) {
        auto o = whole(operand);
        if (!o || *o == *r || llvm::is_contained(taken, *o))
          continue;
        Buffer &dying = buffers[*o];
        auto operandType = llvm::cast<MemRefType>(operand.getType());
        if (dying.end != at || dying.start >= at ||
            dying.bytes != buffers[*r].bytes ||
            operandType.getShape() != resultType.getShape() ||
            operandType.getElementTypeBitWidth() !=
                resultType.getElementTypeBitWidth())
          continue;
        // Join: the result's allocs use the operand's bytes from now on.
        Buffer &joined = buffers[*r];
        dying.end = joined.end;
        for (memref::AllocOp a : joined.allocs) {
          dying.allocs.push_back(a);
          bufferOf[a.getResult()] = *o;
        }
        joined.allocs.clear();
        taken.push_back(*o);
        break;
      }
    }
  }
  llvm::erase_if(buffers, [](const Buffer &b) { return b.allocs.empty(); });
}

int64_t EntryPlan::liveBound() const {
  std::vector<int64_t> delta(order.size() + 1, 0);
  for (const Buffer &b : buffers) {
    delta[b.start] += b.bytes;
    delta[b.end + 1] -= b.bytes;
  }
  int64_t live = 0, most = 0;
  for (int64_t d : delta) {
    live += d;
    most = std::max(most, live);
  }
  return most;
}

int64_t EntryPlan::place() {
  std::vector<unsigned> bySize(buffers.size());
  for (unsigned i = 0; i < bySize.size(); ++i)
    bySize[i] = i;
  llvm::stable_sort(bySize, [&](unsigned a, unsigned b) {
    const Buffer &x = buffers[a], &y = buffers[b];
    if (x.bytes != y.bytes)
      return x.bytes > y.bytes;
    return x.start < y.start;
  });
  int64_t arenaBytes = 0;
  std::vector<unsigned> placed;
  std::vector<std::pair<int64_t, int64_t>> busy; // [offset, offset + bytes)
  for (unsigned i : bySize) {
    Buffer &b = buffers[i];
    busy.clear();
    for (unsigned j : placed) {
      const Buffer &p = buffers[j];
      if (p.start <= b.end && b.start <= p.end)
        busy.push_back({p.offset, p.offset + p.bytes});
    }
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (offset + b.bytes <= lo)
        break;
      offset = std::max(offset, hi);
    }
    b.offset = offset;
    arenaBytes = std::max(arenaBytes, offset + b.bytes);
    placed.push_back(i);
  }
  return arenaBytes;
}

void EntryPlan::rewrite(int64_t arenaBytes) {
  auto arenaType =
      MemRefType::get({arenaBytes}, IntegerType::get(entry.getContext(), 8));
  arena.setType(arenaType);
  SmallVector<Type> inputs(entry.getArgumentTypes());
  inputs[arena.getArgNumber()] = arenaType;
  entry.setFunctionType(
      FunctionType::get(entry.getContext(), inputs, entry.getResultTypes()));
  OpBuilder builder(entry.getContext());
  for (const Buffer &b : buffers) {
    for (memref::AllocOp alloc : b.allocs) {
      builder.setInsertionPoint(alloc);
      Location loc = alloc.getLoc();
      Value offset = builder.create<arith::ConstantIndexOp>(loc, b.offset);
      Value view = builder.create<memref::ViewOp>(loc, alloc.getType(), arena,
                                                  offset, ValueRange{});
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    }
  }
}

LogicalResult EntryPlan::run(bool print) {
  if (!entry.getBody().hasOneBlock())
    return entry.emitError("tfc-plan-memory: an entry must have one block");
  int64_t intermediateBytes = 0;
  if (failed(computeIntervals()))
    return failure();
  for (const Buffer &b : buffers)
    intermediateBytes += b.bytes;
  shareInPlace();
  int64_t bound = liveBound();
  int64_t arenaBytes = std::max(place(), alignment);
  rewrite(arenaBytes);

  Builder b(entry.getContext());
  entry->setAttr(attr::kArenaBytes, b.getI64IntegerAttr(arenaBytes));
  entry->setAttr(attr::kIntermediateBytes,
                 b.getI64IntegerAttr(intermediateBytes));
  entry->setAttr(attr::kLiveBoundBytes, b.getI64IntegerAttr(bound));
  if (print) {
    llvm::outs() << "tfc-plan-memory: @" << entry.getName() << ": arena "
                 << arenaBytes << " bytes, intermediates " << intermediateBytes
                 << " bytes, live bound " << bound << " bytes";
    if (bound > 0)
      llvm::outs() << llvm::format(" (arena / bound %.3f)",
                                   double(arenaBytes) / double(bound));
    llvm::outs() << "\n";
  }
  return success();
}

struct PlanMemoryPass
    : public tfc::plan::impl::TfcPlanMemoryBase<PlanMemoryPass> {
  using TfcPlanMemoryBase::TfcPlanMemoryBase;

  void runOnOperation() override {
    const Target *target = plan::targetOf(getOperation());
    if (!target)
      return signalPassFailure();
    for (auto entry : getOperation().getOps<func::FuncOp>()) {
      if (entry.isExternal())
        continue;
      for (BlockArgument arg : entry.getArguments()) {
        if (!entry.getArgAttr(arg.getArgNumber(), attr::kArena))
          continue;
        EntryPlan plan(entry, arg, target->arenaAlignment());
        if (failed(plan.run(print)))
          return signalPassFailure();
        break;
      }
    }
  }
};

} // namespace
