//===- Schedule.cpp - the tfc-schedule pass -------------------------------===//
//
// Orders the ops of each entry to lower the peak of live bytes, which is
// what the memory planner's arena must hold at least. A list scheduler over
// the dependence graph: data edges, plus the order of tfc.load/tfc.store per
// symbol (and of every reader of a loaded value before the next store: a
// load may be a view of the parameter) and the order of all other ops with
// effects. Among the ready ops it runs first any op that frees more bytes
// (the last read of its operands) than it allocates, the most first;
// otherwise the op whose first reader comes earliest in the original order,
// so that every op sinks to just before its first reader and no buffer is
// allocated long before it is needed (except tfc.all_reduce_start, which
// stays as early as its operands allow: its collective overlaps what
// follows). Ties keep the original order. The new
// order is kept only if its peak is not higher than the original's.
// Collectives keep their original order among themselves: every rank of a
// group must make them in the same order, also where the ranks run entries
// that differ elsewhere (tfc-expert-parallel's), which the scheduler could
// otherwise order each its own way.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Passes.h"

#include "passes/LiveBytes.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/raw_ostream.h"

#include <queue>

#define DEBUG_TYPE "tfc-schedule"

namespace tfc {
#define GEN_PASS_DEF_TFCSCHEDULE
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

/// The dependence graph of a block's ops (terminator excluded), with what
/// each op allocates and which buffers it reads.
class Scheduler {
public:
  explicit Scheduler(Block &block) : block(block) {
    for (Operation &op : block.without_terminator()) {
      index[&op] = ops.size();
      ops.push_back(&op);
    }
    size_t n = ops.size();
    successors.resize(n);
    predecessorCount.assign(n, 0);
    need.resize(n);
    allocated.assign(n, 0);
    buffers.resize(n);
    buildEdges();
    buildMemory();
  }

  /// Ops in the order the scheduler picks; `eager` runs ops that free more
  /// than they allocate first, otherwise each op just before its first
  /// reader.
  SmallVector<Operation *> schedule(bool eager) {
    size_t n = ops.size();
    std::vector<unsigned> waiting = predecessorCount;
    DenseMap<Value, unsigned> unread = readers;
    std::vector<bool> done(n, false);
    auto score = [&](unsigned i) {
      int64_t freed = 0;
      for (Value root : buffers[i])
        if (unread.lookup(root) == 1)
          freed += allocatedBytes(root);
      return freed - allocated[i];
    };
    using Key = std::pair<int64_t, unsigned>; // (need, original index)
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
    SmallVector<unsigned> readyList; // for the eager scan
    auto makeReady = [&](unsigned i) {
      ready.push({need[i], i});
      readyList.push_back(i);
    };
    for (unsigned i = 0; i < n; ++i)
      if (!waiting[i])
        makeReady(i);

    SmallVector<Operation *> order;
    while (order.size() < n) {
      int pick = -1;
      if (eager) {
        int64_t best = 0;
        for (unsigned i : readyList) {
          if (done[i])
            continue;
          int64_t s = score(i);
          if (s > best || (s == best && s > 0 && unsigned(pick) > i)) {
            best = s;
            pick = i;
          }
        }
      }
      if (pick < 0) {
        while (done[ready.top().second])
          ready.pop();
        pick = ready.top().second;
        ready.pop();
      }
      done[pick] = true;
      order.push_back(ops[pick]);
      llvm::erase_if(readyList, [&](unsigned i) { return done[i]; });
      for (Value root : buffers[pick])
        --unread[root];
      for (unsigned s : successors[pick])
        if (--waiting[s] == 0)
          makeReady(s);
    }
    return order;
  }

  SmallVector<Operation *> ops; // original order

private:
  Block &block;
  DenseMap<Operation *, unsigned> index;
  std::vector<SmallVector<unsigned>> successors;
  std::vector<unsigned> predecessorCount;
  /// Original index of the first reader (own index for ops nobody reads).
  std::vector<int64_t> need;
  /// Bytes the op's results allocate.
  std::vector<int64_t> allocated;
  /// The buffers (storage roots) each op reads that a later op may free:
  /// not resident, not returned, not stored.
  std::vector<SmallVector<Value>> buffers;
  /// How many ops read each such buffer.
  DenseMap<Value, unsigned> readers;

  void addEdge(unsigned from, unsigned to) {
    if (from == to)
      return;
    successors[from].push_back(to);
    ++predecessorCount[to];
  }

  void buildEdges() {
    // Effects: loads and stores ordered per symbol, every other op with
    // effects ordered against all of them.
    struct SymbolOrder {
      std::optional<unsigned> lastStore;
      SmallVector<unsigned> readsSinceStore; // loads and readers of loads
    };
    DenseMap<StringAttr, SymbolOrder> symbols;
    std::optional<unsigned> lastBarrier, lastCollective;
    SmallVector<unsigned> effectsSinceBarrier;

    for (auto [i, op] : llvm::enumerate(ops)) {
      // Data.
      DenseSet<unsigned> preds;
      DenseSet<StringAttr> loadedSymbols;
      forEachValueRead(op, [&](Value v) {
        if (Operation *def = v.getDefiningOp())
          if ((def = topLevelOp(block, def)) && index.count(def))
            preds.insert(index[def]);
        if (auto load = storageRoot(v).getDefiningOp<LoadOp>())
          loadedSymbols.insert(load.getNameAttr().getAttr());
      });
      for (unsigned p : preds)
        addEdge(p, i);
      if (llvm::isa<AllReduceOp, ReduceScatterOp, AllGatherOp, AllToAllOp,
                    AllReduceStartOp, AllReduceWaitOp, SendOp, RecvOp>(op)) {
        if (lastCollective)
          addEdge(*lastCollective, i);
        lastCollective = i;
      }

      // Readers of a loaded value stay on their side of every store.
      for (StringAttr symbol : loadedSymbols) {
        SymbolOrder &order = symbols[symbol];
        if (order.lastStore)
          addEdge(*order.lastStore, i);
        order.readsSinceStore.push_back(i);
      }
      if (auto load = llvm::dyn_cast<LoadOp>(op)) {
        SymbolOrder &order = symbols[load.getNameAttr().getAttr()];
        if (order.lastStore)
          addEdge(*order.lastStore, i);
        order.readsSinceStore.push_back(i);
      } else if (auto store = llvm::dyn_cast<StoreOp>(op)) {
        SymbolOrder &order = symbols[store.getNameAttr().getAttr()];
        if (order.lastStore)
          addEdge(*order.lastStore, i);
        for (unsigned r : order.readsSinceStore)
          addEdge(r, i);
        order.readsSinceStore.clear();
        order.lastStore = i;
      }
      if (isMemoryEffectFree(op))
        continue;
      if (lastBarrier)
        addEdge(*lastBarrier, i);
      if (llvm::isa<LoadOp, StoreOp>(op)) {
        effectsSinceBarrier.push_back(i);
      } else {
        for (unsigned e : effectsSinceBarrier)
          addEdge(e, i);
        effectsSinceBarrier.clear();
        lastBarrier = i;
      }
    }
    // Duplicate edges are harmless but cost time: drop them.
    for (auto &succ : successors) {
      llvm::sort(succ);
      succ.erase(std::unique(succ.begin(), succ.end()), succ.end());
    }
    predecessorCount.assign(ops.size(), 0);
    for (auto &succ : successors)
      for (unsigned s : succ)
        ++predecessorCount[s];
  }

  void buildMemory() {
    Operation *terminator = block.getTerminator();
    // Buffers that live to the end whatever the order.
    DenseSet<Value> pinned;
    for (Value v : terminator->getOperands())
      pinned.insert(storageRoot(v));
    for (Operation *op : ops)
      if (auto store = llvm::dyn_cast<StoreOp>(op))
        pinned.insert(storageRoot(store.getValue()));

    for (auto [i, op] : llvm::enumerate(ops)) {
      int64_t first = -1;
      for (Operation *user : op->getUsers()) {
        Operation *top = topLevelOp(block, user);
        if (!top)
          continue;
        int64_t at = top == terminator ? int64_t(ops.size()) : index.lookup(top);
        if (first < 0 || at < first)
          first = at;
      }
      need[i] = first < 0 ? int64_t(i) : first;
      // A bucket's collective is started right after its gradients are
      // final (tfc-data-parallel) so that it moves while the backward goes
      // on: it keeps that place instead of sinking to its wait.
      if (llvm::isa<AllReduceStartOp>(op))
        need[i] = int64_t(i);
      for (Value r : op->getResults())
        allocated[i] += allocatedBytes(r);
      llvm::SmallSetVector<Value, 4> roots;
      forEachValueRead(op, [&](Value v) {
        Value root = storageRoot(v);
        if (allocatedBytes(root) > 0 && !pinned.contains(root))
          roots.insert(root);
      });
      for (Value root : roots) {
        buffers[i].push_back(root);
        ++readers[root];
      }
    }
  }
};

struct SchedulePass : public tfc::impl::TfcScheduleBase<SchedulePass> {
  using TfcScheduleBase::TfcScheduleBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal() &&
          llvm::hasSingleElement(func.getBody()))
        schedule(func);
  }

  void schedule(func::FuncOp func) {
    Block &block = func.getBody().front();
    Scheduler scheduler(block);
    int64_t before = peakLiveBytes(block, scheduler.ops);
    SmallVector<Operation *> best = scheduler.ops;
    int64_t peak = before;
    // The greedy order and the plain sinking order; the lower peak wins,
    // and the original order wins unless it is beaten or matched.
    for (bool eager : {true, false}) {
      SmallVector<Operation *> order = scheduler.schedule(eager);
      int64_t p = peakLiveBytes(block, order);
      if (p < peak || (p == peak && best == scheduler.ops)) {
        best = std::move(order);
        peak = p;
      }
    }
    Operation *terminator = block.getTerminator();
    unsigned moved = 0;
    for (auto [op, original] : llvm::zip(best, scheduler.ops)) {
      moved += op != original;
      op->moveBefore(terminator);
    }

    Builder b(func.getContext());
    NamedAttribute entries[] = {
        b.getNamedAttr("peak_bytes_before", b.getI64IntegerAttr(before)),
        b.getNamedAttr("peak_bytes", b.getI64IntegerAttr(peak)),
    };
    func->setAttr(attr::kSchedule, b.getDictionaryAttr(entries));
    if (!print)
      return;
    int64_t at = 0;
    peakLiveBytes(block, best, &at);
    llvm::errs() << "tfc-schedule @" << func.getName()
                 << ": peak_bytes_before=" << before << " peak_bytes=" << peak
                 << " ops_moved=" << moved << "\n";
    if (at < int64_t(best.size())) {
      llvm::errs() << "  peak at op " << at << ": ";
      best[at]->print(llvm::errs(), OpPrintingFlags().skipRegions());
      llvm::errs() << "\n";
    }
  }
};

} // namespace
