//===- Remat.cpp - the tfc-remat pass -------------------------------------===//
//
// Chooses what the backward pass of a training entry keeps from the forward
// pass and what it recomputes, as a minimum cut weighted by bytes over the
// joint forward/backward graph (PyTorch's min-cut rematerialization
// partitioner, functorch's `min_cut_rematerialization_partition`).
//
// Every forward value v is an edge v.in -> v.out whose capacity is the bytes
// of v; data edges are infinite. Values that must be there in the backward
// connect to the sink; results of ops that must run in the forward (matmuls,
// attention: compute bound; anything with effects or regions) are fed from
// the source. A cut separates the source from the sink: its edges are the
// values the backward keeps (saved), and everything the backward needs
// beyond them lies on the sink side and is recomputed from them. The minimum
// cut keeps the fewest bytes; of the minimum cuts we take the one closest to
// the sink, which recomputes least (saving a residual sum rather than the
// branch that feeds it, for the same bytes). Parameters, inputs and
// constants are resident anyway: they are not in the network at all, so
// recomputing from them is free in memory (connecting them to the source
// would instead force every op that reads a parameter, an embedding for
// example, to be saved).
//
// The clones are identical to forward ops: a CSE after this pass merges them
// back, so it runs after the last CSE of the pipeline.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Passes.h"

#include "passes/CostModel.h"
#include "passes/LiveBytes.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <queue>

#define DEBUG_TYPE "tfc-remat"

namespace tfc {
#define GEN_PASS_DEF_TFCREMAT
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

/// Dinic's maximum flow. The networks have a few thousand nodes; Dinic
/// finds the flow in a handful of phases on them.
class MaxFlow {
public:
  static constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

  explicit MaxFlow(int numNodes) : adjacency(numNodes) {}

  void addEdge(int from, int to, int64_t capacity) {
    adjacency[from].push_back(edges.size());
    edges.push_back({to, capacity});
    adjacency[to].push_back(edges.size());
    edges.push_back({from, 0});
  }

  int64_t run(int source, int sink) {
    int64_t flow = 0;
    while (buildLevels(source, sink)) {
      next.assign(adjacency.size(), 0);
      while (int64_t pushed = push(source, sink, kInf))
        flow += pushed;
    }
    return flow;
  }

  /// After run(): the nodes that reach `sink` in the residual graph, the
  /// sink side of the minimum cut closest to the sink. Of the cuts of least
  /// bytes it is the one that recomputes least.
  std::vector<bool> sinkSide(int sink) const {
    std::vector<bool> seen(adjacency.size(), false);
    std::vector<int> stack = {sink};
    seen[sink] = true;
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      // Edge e leaves n; its pair e ^ 1 enters n from edges[e].to.
      for (int e : adjacency[n])
        if (edges[e ^ 1].capacity > 0 && !seen[edges[e].to]) {
          seen[edges[e].to] = true;
          stack.push_back(edges[e].to);
        }
    }
    return seen;
  }

private:
  struct Edge {
    int to;
    int64_t capacity; // residual
  };
  std::vector<Edge> edges; // edge e and its reverse e ^ 1
  std::vector<std::vector<int>> adjacency;
  std::vector<int> level;
  std::vector<size_t> next;

  bool buildLevels(int source, int sink) {
    level.assign(adjacency.size(), -1);
    std::queue<int> queue;
    level[source] = 0;
    queue.push(source);
    while (!queue.empty()) {
      int n = queue.front();
      queue.pop();
      for (int e : adjacency[n])
        if (edges[e].capacity > 0 && level[edges[e].to] < 0) {
          level[edges[e].to] = level[n] + 1;
          queue.push(edges[e].to);
        }
    }
    return level[sink] >= 0;
  }

  int64_t push(int n, int sink, int64_t limit) {
    if (n == sink)
      return limit;
    for (size_t &i = next[n]; i < adjacency[n].size(); ++i) {
      Edge &edge = edges[adjacency[n][i]];
      if (edge.capacity <= 0 || level[edge.to] != level[n] + 1)
        continue;
      if (int64_t pushed =
              push(edge.to, sink, std::min(limit, edge.capacity))) {
        edge.capacity -= pushed;
        edges[adjacency[n][i] ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }
};

/// What the backward keeps and what it recomputes.
struct Cut {
  llvm::SetVector<Value> saved;
  DenseSet<Value> recomputed;      // forward values the backward recomputes
  llvm::SetVector<Operation *> ops; // their ops, in program order
  int64_t savedBytes = 0;
};

/// The joint forward/backward graph of one training entry.
class JointGraph {
public:
  JointGraph(func::FuncOp func) : block(func.getBody().front()) {
    for (auto [i, op] : llvm::enumerate(block.getOperations()))
      position[&op] = i;
    Operation *terminator = block.getTerminator();
    for (Value v : terminator->getOperands())
      returned.insert(v);

    // Forward: what the loss (the first result) depends on.
    SmallVector<Operation *> worklist;
    auto reach = [&](Value v) {
      if (Operation *def = v.getDefiningOp())
        if ((def = topLevelOp(block, def)) && forward.insert(def).second)
          worklist.push_back(def);
    };
    reach(terminator->getOperand(0));
    while (!worklist.empty())
      forEachValueRead(worklist.pop_back_val(), reach);
    for (Operation &op : block.without_terminator())
      if (forward.contains(&op))
        forwardOps.push_back(&op);

    // What the backward reads from the forward.
    for (Operation &op : block.without_terminator()) {
      if (forward.contains(&op))
        continue;
      forEachValueRead(&op, [&](Value v) {
        if (isForwardValue(v) && !isFree(v))
          needed.insert(v);
      });
    }
  }

  Block &block;
  DenseMap<Operation *, int64_t> position;
  DenseSet<Operation *> forward;
  SmallVector<Operation *> forwardOps; // program order
  llvm::SetVector<Value> needed;        // forward values the backward reads
  DenseSet<Value> returned;

  bool isForwardValue(Value v) const {
    Operation *def = v.getDefiningOp();
    return def && def->getBlock() == &block && forward.contains(def);
  }

  /// Values that cost nothing to keep and are never recomputed: inputs,
  /// parameters, state, constants, and the entry's results (they live to the
  /// end anyway).
  bool isFree(Value v) const { return isResident(v) || returned.contains(v); }

  /// Ops that the cut may never move to the backward.
  static bool mustStayInForward(Operation *op) {
    return !isMemoryEffectFree(op) || op->getNumRegions() > 0;
  }

  /// Saved bytes without rematerialization: every buffer the backward reads.
  int64_t bytesWithoutRemat() const {
    DenseSet<Value> roots;
    int64_t bytes = 0;
    for (Value v : needed) {
      Value root = storageRoot(v);
      if (!isFree(root) && roots.insert(root).second)
        bytes += allocatedBytes(root);
    }
    return bytes;
  }

  /// The minimum cut when the compute-bound ops in `allowed` may be
  /// recomputed too.
  Cut minCut(const DenseSet<Operation *> &allowed) const {
    // Node 0 is the source, 1 the sink, then v.in and v.out per value.
    DenseMap<Value, int> node;
    SmallVector<Value> values;
    for (Operation *op : forwardOps)
      for (Value r : op->getResults())
        if (!isFree(r)) {
          node[r] = 2 + 2 * values.size();
          values.push_back(r);
        }
    const int source = 0, sink = 1;
    MaxFlow network(2 + 2 * values.size());
    for (Value v : values) {
      int in = node[v], out = in + 1;
      Operation *def = v.getDefiningOp();
      // A view keeps no bytes of its own: cut at what it views.
      network.addEdge(in, out,
                      llvm::isa<ReshapeOp>(def) ? MaxFlow::kInf
                                                : tensorBytes(v.getType()));
      forEachValueRead(def, [&](Value operand) {
        auto it = node.find(operand);
        if (it != node.end())
          network.addEdge(it->second + 1, in, MaxFlow::kInf);
      });
      if (mustStayInForward(def) ||
          (isComputeBound(def) && !allowed.contains(def)))
        network.addEdge(source, in, MaxFlow::kInf);
      if (needed.contains(v))
        network.addEdge(out, sink, MaxFlow::kInf);
    }
    network.run(source, sink);
    std::vector<bool> sinkSide = network.sinkSide(sink);

    // Saved: the cut edges. Recomputed: what the backward needs on the sink
    // side, back to the saved and free values.
    Cut cut;
    SmallVector<Value> worklist;
    auto require = [&](Value v) {
      auto it = node.find(v);
      if (it == node.end())
        return; // free
      assert(sinkSide[it->second + 1] && "a value the backward reads is cut off");
      if (!sinkSide[it->second]) {
        if (cut.saved.insert(v))
          cut.savedBytes += tensorBytes(v.getType());
      } else if (cut.recomputed.insert(v).second) {
        worklist.push_back(v);
      }
    };
    for (Value v : needed)
      require(v);
    DenseSet<Operation *> recomputedOps;
    while (!worklist.empty()) {
      Operation *def = worklist.pop_back_val().getDefiningOp();
      if (recomputedOps.insert(def).second)
        forEachValueRead(def, require);
    }
    for (Operation *op : forwardOps)
      if (recomputedOps.contains(op))
        cut.ops.insert(op);
    return cut;
  }
};

/// "<result types> flops=N", for the printed cut.
std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(op->getResultTypes(), os);
  os << " flops=" << estimateFlops(op);
  return s;
}

struct RematPass : public tfc::impl::TfcRematBase<RematPass> {
  using TfcRematBase::TfcRematBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal() ||
          !(func.getName() == "train_step" || func.getName().ends_with("_grad")))
        continue;
      if (!llvm::hasSingleElement(func.getBody()) || func.getNumResults() == 0)
        continue;
      rematerialize(func);
    }
  }

  void rematerialize(func::FuncOp func) {
    JointGraph graph(func);
    DenseSet<Operation *> allowed;
    SmallVector<Operation *> candidates;
    for (Operation *op : graph.forwardOps)
      if (isComputeBound(op) && !JointGraph::mustStayInForward(op) &&
          estimateFlops(op) > 0)
        candidates.push_back(op);
    if (recomputeMatmuls)
      allowed.insert(candidates.begin(), candidates.end());
    Cut cut = graph.minCut(allowed);

    // Over budget: let compute-bound ops be recomputed too, the most bytes
    // per FLOP first, keeping each one only if the cut gets smaller.
    SmallVector<Operation *> allowedInOrder;
    if (memoryBudget > 0 && cut.savedBytes > memoryBudget) {
      auto resultBytes = [](Operation *op) {
        int64_t bytes = 0;
        for (Value r : op->getResults())
          bytes += tensorBytes(r.getType());
        return bytes;
      };
      llvm::stable_sort(candidates, [&](Operation *a, Operation *b) {
        double ra = double(resultBytes(a)) / estimateFlops(a);
        double rb = double(resultBytes(b)) / estimateFlops(b);
        if (ra != rb)
          return ra > rb;
        return resultBytes(a) > resultBytes(b);
      });
      for (Operation *op : candidates) {
        if (cut.savedBytes <= memoryBudget)
          break;
        if (!allowed.insert(op).second)
          continue;
        Cut tried = graph.minCut(allowed);
        if (tried.savedBytes < cut.savedBytes) {
          cut = std::move(tried);
          allowedInOrder.push_back(op);
        } else {
          allowed.erase(op);
        }
      }
    }

    int64_t savedBefore = graph.bytesWithoutRemat();
    int64_t forwardFlops = 0;
    for (Operation *op : graph.forwardOps)
      forwardFlops += estimateFlops(op);
    int64_t recomputedFlops = 0;
    for (Operation *op : cut.ops)
      recomputedFlops += estimateFlops(op);
    SmallVector<Operation *> recomputedOps(cut.ops.begin(), cut.ops.end());

    rewrite(graph, cut);

    int64_t totalFlops = 0;
    for (Operation &op : graph.block)
      totalFlops += estimateFlops(&op);
    Builder b(func.getContext());
    auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
    NamedAttribute entries[] = {
        b.getNamedAttr("saved_bytes_before", i64(savedBefore)),
        b.getNamedAttr("saved_bytes", i64(cut.savedBytes)),
        b.getNamedAttr("recomputed_ops", i64(recomputedOps.size())),
        b.getNamedAttr("recomputed_flops", i64(recomputedFlops)),
        b.getNamedAttr("forward_flops", i64(forwardFlops)),
        b.getNamedAttr("total_flops", i64(totalFlops)),
        b.getNamedAttr("memory_budget", i64(memoryBudget)),
    };
    func->setAttr(attr::kRemat, b.getDictionaryAttr(entries));

    if (!print)
      return;
    llvm::raw_ostream &os = llvm::errs();
    os << "tfc-remat @" << func.getName()
       << ": saved_bytes_before=" << savedBefore
       << " saved_bytes=" << cut.savedBytes
       << " recomputed_ops=" << recomputedOps.size()
       << " recomputed_flops=" << recomputedFlops
       << " forward_flops=" << forwardFlops << " total_flops=" << totalFlops
       << " memory_budget=" << memoryBudget << "\n";
    for (Operation *op : allowedInOrder)
      os << "  allow " << op->getName() << " " << describe(op) << "\n";
    for (Value v : cut.saved)
      os << "  save " << v.getDefiningOp()->getName() << " " << v.getType()
         << " bytes=" << tensorBytes(v.getType()) << "\n";
    for (Operation *op : recomputedOps)
      os << "  recompute " << op->getName() << " " << describe(op) << "\n";
  }

  /// Clones every recomputed op just before the first backward op that
  /// reads it (directly or through another clone), in program order, and
  /// points the backward at the clones. The forward keeps its originals.
  void rewrite(JointGraph &graph, const Cut &cut) {
    if (cut.ops.empty())
      return;
    Block &block = graph.block;
    Operation *terminator = block.getTerminator();
    auto isBackwardUse = [&](OpOperand &use) {
      Operation *user = topLevelOp(block, use.getOwner());
      return user && user != terminator && !graph.forward.contains(user);
    };

    // Where each clone goes: before the earliest backward reader, found
    // from the last recomputed op to the first.
    DenseMap<Operation *, Operation *> anchor;
    auto earlier = [&](Operation *a, Operation *b) {
      if (!a)
        return b;
      if (!b)
        return a;
      return graph.position.lookup(a) <= graph.position.lookup(b) ? a : b;
    };
    for (Operation *op : llvm::reverse(cut.ops)) {
      Operation *first = nullptr;
      // Clones read every result through the mapping; the backward only the
      // recomputed ones.
      for (Value r : op->getResults()) {
        for (OpOperand &use : r.getUses()) {
          Operation *user = topLevelOp(block, use.getOwner());
          if (cut.ops.contains(user))
            first = earlier(first, anchor.lookup(user));
          else if (cut.recomputed.contains(r) && isBackwardUse(use))
            first = earlier(first, user);
        }
      }
      assert(first && "recomputed op without a backward reader");
      anchor[op] = first;
    }

    OpBuilder b(block.getParent()->getContext());
    IRMapping mapping;
    for (Operation *op : cut.ops) {
      b.setInsertionPoint(anchor[op]);
      b.clone(*op, mapping);
    }
    for (Operation *op : cut.ops)
      for (Value r : op->getResults())
        if (cut.recomputed.contains(r))
          r.replaceUsesWithIf(mapping.lookup(r), isBackwardUse);
  }
};

} // namespace
