//===- LiveBytes.cpp - which values own memory, and how much is live ------===//
#include "passes/LiveBytes.h"

#include "passes/CostModel.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

using namespace mlir;

namespace tfc {

Value storageRoot(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape->getOperand(0);
  return v;
}

bool isResident(Value v) {
  Operation *def = v.getDefiningOp();
  return !def || llvm::isa<LoadOp, ConstantOp>(def);
}

int64_t allocatedBytes(Value v) {
  if (isResident(v) || v.getDefiningOp<ReshapeOp>())
    return 0;
  return tensorBytes(v.getType());
}

Operation *topLevelOp(Block &block, Operation *op) {
  return block.findAncestorOpInBlock(*op);
}

void forEachValueRead(Operation *op, llvm::function_ref<void(Value)> fn) {
  for (Value v : op->getOperands())
    fn(v);
  if (op->getNumRegions()) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(op->getRegions(), above);
    for (Value v : above)
      fn(v);
  }
}

int64_t peakLiveBytes(Block &block, ArrayRef<Operation *> order,
                      int64_t *at) {
  // Position of every op; the terminator (and anything that keeps a buffer
  // past the entry: a store into module state) counts as the end.
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(order))
    position[op] = i;
  const int64_t end = order.size();

  // The last position that reads `v` or a view of it.
  std::function<int64_t(Value)> lastUse = [&](Value v) -> int64_t {
    int64_t last = -1;
    for (OpOperand &use : v.getUses()) {
      Operation *user = topLevelOp(block, use.getOwner());
      if (!user)
        continue;
      if (user->hasTrait<OpTrait::IsTerminator>() || llvm::isa<StoreOp>(user))
        return end;
      auto it = position.find(user);
      if (it != position.end())
        last = std::max(last, it->second);
      if (auto view = llvm::dyn_cast<ReshapeOp>(user))
        last = std::max(last, lastUse(view.getResult()));
    }
    return last;
  };

  // +bytes where a buffer is defined, -bytes just after its last use.
  SmallVector<int64_t> delta(end + 2, 0);
  for (auto [i, op] : llvm::enumerate(order)) {
    for (Value r : op->getResults()) {
      int64_t bytes = allocatedBytes(r);
      if (!bytes)
        continue;
      int64_t last = std::max<int64_t>(i, lastUse(r));
      delta[i] += bytes;
      delta[last + 1] -= bytes;
    }
  }
  int64_t live = 0, peak = 0;
  for (auto [i, d] : llvm::enumerate(delta)) {
    live += d;
    if (live > peak) {
      peak = live;
      if (at)
        *at = i;
    }
  }
  return peak;
}

int64_t peakLiveBytes(Block &block) {
  SmallVector<Operation *> order;
  for (Operation &op : block.without_terminator())
    order.push_back(&op);
  return peakLiveBytes(block, order);
}

} // namespace tfc
