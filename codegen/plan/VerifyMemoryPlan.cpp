//===- VerifyMemoryPlan.cpp - the tfc-verify-memory-plan pass -------------===//
//
// Checks a planned entry from its IR alone (nothing is shared with
// tfc-plan-memory): every memref.view of the arena is a buffer with a constant
// byte range, live from the first to the last use of it or of its views in op
// order; no two buffers live at the same op may share a byte, except a result
// written over an operand that dies at a `tfc.in_place_ok` call.
//
//===----------------------------------------------------------------------===//
#include "codegen/plan/Passes.h"

#include "dialects/tfc/AttrNames.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#define DEBUG_TYPE "tfc-verify-memory-plan"

namespace tfc::plan {
#define GEN_PASS_DEF_TFCVERIFYMEMORYPLAN
#include "codegen/plan/Passes.h.inc"
} // namespace tfc::plan

using namespace mlir;

namespace {

struct PlannedBuffer {
  Operation *view; // The memref.view of the arena.
  int64_t offset = 0, bytes = 0;
  int64_t start = INT64_MAX, end = -1; // Live at ops [start, end].
  /// The view and its collapse/expand reshapes: the whole buffer from its
  /// first byte.
  llvm::SmallPtrSet<Value, 4> whole;
};

/// The op's name, and the callee of a call.
std::string describe(Operation *op) {
  std::string s = "'" + op->getName().getStringRef().str() + "'";
  if (auto call = llvm::dyn_cast<func::CallOp>(op))
    s += " @" + call.getCallee().str();
  return s;
}

/// The documented exception: at a `tfc.in_place_ok` call, `result` is first
/// used (written) exactly where `operand` dies, on the same bytes, and the
/// call sees both whole with the same shape and element size.
bool isInPlace(const PlannedBuffer &operand, const PlannedBuffer &result,
               Operation *at, int64_t atIndex) {
  auto call = llvm::dyn_cast<func::CallOp>(at);
  if (!call || !call->hasAttr(tfc::attr::kInPlaceOk) || operand.end != atIndex ||
      operand.start >= atIndex || result.start != atIndex ||
      operand.offset != result.offset || operand.bytes != result.bytes)
    return false;
  for (Value a : call.getOperands()) {
    if (!operand.whole.contains(a))
      continue;
    auto aType = llvm::cast<MemRefType>(a.getType());
    for (Value b : call.getOperands()) {
      if (!result.whole.contains(b))
        continue;
      auto bType = llvm::cast<MemRefType>(b.getType());
      if (aType.getShape() == bType.getShape() &&
          aType.getElementTypeBitWidth() == bType.getElementTypeBitWidth())
        return true;
    }
  }
  return false;
}

LogicalResult verifyEntry(func::FuncOp entry, BlockArgument arena) {
  auto arenaType = llvm::dyn_cast<MemRefType>(arena.getType());
  if (!arenaType || arenaType.getRank() != 1 || !arenaType.hasStaticShape() ||
      !arenaType.getElementType().isInteger(8))
    return entry.emitError("memory plan: the arena of @")
           << entry.getName() << " must be a static memref<Nxi8>, not "
           << arena.getType();
  int64_t arenaBytes = arenaType.getDimSize(0);
  if (!entry.getBody().hasOneBlock())
    return entry.emitError("memory plan: an entry must have one block");
  Block &body = entry.getBody().front();
  DenseMap<Operation *, int64_t> order;
  SmallVector<Operation *> ops;
  for (Operation &op : body) {
    order[&op] = ops.size();
    ops.push_back(&op);
  }

  auto allocs = body.getOps<memref::AllocOp>();
  if (!allocs.empty())
    return (*allocs.begin()).emitError("memory plan: a buffer of @")
           << entry.getName() << " is not placed in the arena";

  std::vector<PlannedBuffer> buffers;
  for (Operation *user : arena.getUsers()) {
    auto view = llvm::dyn_cast<memref::ViewOp>(user);
    if (!view || view.getSource() != arena)
      return user->emitError("memory plan: the arena is used by ")
             << describe(user) << ", not only by memref.view";
    std::optional<int64_t> offset = getConstantIntValue(view.getByteShift());
    MemRefType type = view.getType();
    if (!offset || !type.hasStaticShape())
      return view.emitError("memory plan: a buffer must have a constant "
                            "offset and a static shape");
    PlannedBuffer b;
    b.view = view;
    b.offset = *offset;
    b.bytes = type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
    if (b.offset < 0 || b.offset + b.bytes > arenaBytes)
      return view.emitError("memory plan: buffer [")
             << b.offset << ", " << b.offset + b.bytes
             << ") lies outside the arena of " << arenaBytes << " bytes";
    // Uses of the view and of its views, transitively.
    SmallVector<Value> worklist = {view.getResult()};
    b.whole.insert(view.getResult());
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *u : v.getUsers()) {
        if (auto alias = llvm::dyn_cast<ViewLikeOpInterface>(u);
            alias && alias.getViewSource() == v) {
          for (Value r : u->getResults()) {
            worklist.push_back(r);
            if (llvm::isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(u) &&
                b.whole.contains(v))
              b.whole.insert(r);
          }
          continue;
        }
        int64_t at = order.lookup(body.findAncestorOpInBlock(*u));
        b.start = std::min(b.start, at);
        b.end = std::max(b.end, at);
      }
    }
    if (b.end >= 0) // A view nobody uses holds nothing.
      buffers.push_back(std::move(b));
  }

  // Sweep in op order: each buffer against those still live where it starts.
  llvm::sort(buffers, [](const PlannedBuffer &x, const PlannedBuffer &y) {
    return std::make_tuple(x.start, x.offset, x.end) <
           std::make_tuple(y.start, y.offset, y.end);
  });
  std::vector<const PlannedBuffer *> live;
  for (const PlannedBuffer &b : buffers) {
    llvm::erase_if(live,
                   [&](const PlannedBuffer *a) { return a->end < b.start; });
    for (const PlannedBuffer *a : live) {
      if (a->offset + a->bytes <= b.offset || b.offset + b.bytes <= a->offset)
        continue;
      Operation *at = ops[b.start];
      if (isInPlace(*a, b, at, b.start))
        continue;
      InFlightDiagnostic diag =
          b.view->emitError("memory plan: 'memref.view' at bytes [")
          << b.offset << ", " << b.offset + b.bytes
          << ") overlaps 'memref.view' at bytes [" << a->offset << ", "
          << a->offset + a->bytes << ") of the arena while both are live at "
          << describe(at);
      diag.attachNote(a->view->getLoc()) << "the other buffer";
      diag.attachNote(at->getLoc()) << "both are live here";
      return diag;
    }
    live.push_back(&b);
  }
  return success();
}

struct VerifyMemoryPlanPass
    : public tfc::plan::impl::TfcVerifyMemoryPlanBase<VerifyMemoryPlanPass> {
  void runOnOperation() override {
    bool ok = true;
    for (auto entry : getOperation().getOps<func::FuncOp>()) {
      if (entry.isExternal())
        continue;
      for (BlockArgument arg : entry.getArguments())
        if (entry.getArgAttr(arg.getArgNumber(), tfc::attr::kArena)) {
          ok &= succeeded(verifyEntry(entry, arg));
          break;
        }
    }
    if (!ok)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
