//===- PipelineStages.cpp - the tfc-pipeline-stages pass -------------------===//
//
// tfc-pipeline-stages: the first half of pipeline parallelism (tfc --pp=S).
// It cuts the loss entry's ops, in program order, into S stages of about
// equal FLOPs (the cost model's), and marks each op with its stage
// (tfc.stage); tfc-autodiff gives each VJP its op's stage, and
// tfc-pipeline-split later turns train_step into one program per stage with
// the values that cross stages sent and received.
//
// Where to cut: only between two ops where the fewest bytes cross, which in a
// transformer is between two sublayers (the residual stream alone: after the
// embedding, after each attention's and each MLP's residual add). A value
// "crosses" a cut when an op before it makes it and an op after it reads it,
// except values that every stage can make itself at no cost: function inputs,
// constants, loads of frozen parameters and positions, and ops of those alone
// (the causal mask, rotary tables). A parameter read on both sides (GPT-2's
// tied wte) does not cross: each stage that reads it holds a copy, and the
// split sums its gradient over them. Among those cuts the S - 1 that minimize
// the largest stage's FLOPs (an exact dynamic program over the candidates).
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/CostModel.h"
#include "passes/Metadata.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <limits>

#define DEBUG_TYPE "tfc-pipeline-stages"

namespace tfc {
#define GEN_PASS_DEF_TFCPIPELINESTAGES
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

struct PipelineStagesPass
    : public tfc::impl::TfcPipelineStagesBase<PipelineStagesPass> {
  using TfcPipelineStagesBase::TfcPipelineStagesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (stages < 1) {
      module.emitError("tfc-pipeline-stages: stages ")
          << static_cast<int64_t>(stages) << " must be at least 1";
      return signalPassFailure();
    }
    std::string name = trainingLossEntry(module, entry);
    auto loss = module.lookupSymbol<func::FuncOp>(name);
    if (!loss || loss.isExternal()) {
      module.emitError("tfc-pipeline-stages: no entry function '") << name << "'";
      return signalPassFailure();
    }
    if (failed(assign(module, loss)))
      signalPassFailure();
  }

  LogicalResult assign(ModuleOp module, func::FuncOp loss) {
    const int64_t s = stages;
    Block &body = loss.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    const int64_t n = static_cast<int64_t>(ops.size());

    // Values every stage makes itself.
    DenseSet<Value> free;
    for (Value a : body.getArguments())
      free.insert(a);
    for (Operation *op : ops) {
      bool isFree = false;
      if (llvm::isa<LoadOp>(op)) {
        // Each stage loads what it reads; an op reading a trainable
        // parameter is not free (its gradient is that stage's).
        isFree = true;
      } else if (llvm::isa<StoreOp>(op)) {
        return op->emitError("tfc-pipeline-stages: the loss entry writes state");
      } else {
        isFree = llvm::all_of(op->getOperands(),
                              [&](Value v) { return free.contains(v); }) &&
                 !llvm::any_of(op->getOperands(), [&](Value v) {
                   auto l = v.getDefiningOp<LoadOp>();
                   auto p = l ? module.lookupSymbol<ParamOp>(l.getNameAttr())
                              : ParamOp();
                   return p && !p.getFrozen();
                 });
      }
      if (isFree)
        for (Value r : op->getResults())
          free.insert(r);
    }

    // The bytes crossing a cut before op i (i = 1 .. n-1): values made by ops
    // before i and read at or after i.
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(ops))
      position[op] = static_cast<int64_t>(i);
    std::vector<int64_t> lastUse(n, -1);
    for (auto [i, op] : llvm::enumerate(ops))
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          lastUse[i] = std::max(lastUse[i], user == body.getTerminator()
                                                ? n
                                                : position.lookup(user));
    std::vector<int64_t> crossing(n + 1, 0);
    for (int64_t i = 0; i < n; ++i) {
      Operation *op = ops[i];
      if (llvm::all_of(op->getResults(), [&](Value r) { return free.contains(r); }))
        continue;
      int64_t bytes = 0;
      for (Value r : op->getResults())
        bytes += tensorBytes(r.getType());
      // Live over the cuts i+1 .. lastUse[i].
      for (int64_t c = i + 1; c <= std::min(lastUse[i], n - 1); ++c)
        crossing[c] += bytes;
    }
    std::vector<int64_t> flops(n + 1, 0); // prefix sums
    for (int64_t i = 0; i < n; ++i)
      flops[i + 1] = flops[i] + estimateFlops(ops[i]);

    // Candidates: the cuts with the fewest crossing bytes (> 0: a cut before
    // anything was computed splits nothing) and work on both sides.
    int64_t least = std::numeric_limits<int64_t>::max();
    for (int64_t c = 1; c < n; ++c)
      if (crossing[c] > 0 && flops[c] > 0 && flops[c] < flops[n])
        least = std::min(least, crossing[c]);
    SmallVector<int64_t> candidates;
    for (int64_t c = 1; c < n; ++c)
      if (crossing[c] == least && flops[c] > 0 && flops[c] < flops[n] &&
          (candidates.empty() || flops[c] > flops[candidates.back()]))
        candidates.push_back(c); // one cut per distinct amount of work
    if (candidates.empty() && s > 1)
      return loss.emitError("tfc-pipeline-stages: '")
             << loss.getName() << "' has no place to cut into " << s
             << " pipeline stages (no value alone between two parts that "
                "compute)";
    if (static_cast<int64_t>(candidates.size()) < s - 1)
      return loss.emitError("tfc-pipeline-stages: '")
             << loss.getName() << "' has " << candidates.size()
             << " places to cut (where the fewest bytes, " << least
             << ", cross: between sublayers), so it splits into at most "
             << candidates.size() + 1 << " pipeline stages, not " << s;

    // The S - 1 cuts minimizing the largest stage's FLOPs: best[k][j] is the
    // least maximum over the first k stages ending at candidate j.
    const int64_t c = static_cast<int64_t>(candidates.size());
    SmallVector<int64_t> cuts;
    if (s > 1) {
      const int64_t inf = std::numeric_limits<int64_t>::max();
      std::vector<std::vector<int64_t>> best(s, std::vector<int64_t>(c, inf));
      std::vector<std::vector<int64_t>> from(s, std::vector<int64_t>(c, -1));
      for (int64_t j = 0; j < c; ++j)
        best[1][j] = flops[candidates[j]];
      for (int64_t k = 2; k < s; ++k)
        for (int64_t j = 0; j < c; ++j)
          for (int64_t p = 0; p < j; ++p) {
            if (best[k - 1][p] == inf)
              continue;
            int64_t cost = std::max(best[k - 1][p],
                                    flops[candidates[j]] - flops[candidates[p]]);
            if (cost < best[k][j]) {
              best[k][j] = cost;
              from[k][j] = p;
            }
          }
      int64_t bestCost = inf, last = -1;
      for (int64_t j = 0; j < c; ++j) {
        if (best[s - 1][j] == inf)
          continue;
        int64_t cost = std::max(best[s - 1][j], flops[n] - flops[candidates[j]]);
        if (cost < bestCost) {
          bestCost = cost;
          last = j;
        }
      }
      for (int64_t k = s - 1, j = last; k >= 1; j = from[k][j], --k)
        cuts.push_back(candidates[j]);
      std::reverse(cuts.begin(), cuts.end());
    }

    // Mark the ops; free ones stay unmarked (made wherever needed).
    OpBuilder b(module.getContext());
    SmallVector<int64_t> stageFlops(s, 0);
    int64_t stage = 0;
    for (int64_t i = 0; i < n; ++i) {
      while (stage < static_cast<int64_t>(cuts.size()) && i >= cuts[stage])
        ++stage;
      stageFlops[stage] += flops[i + 1] - flops[i];
      if (llvm::all_of(ops[i]->getResults(),
                       [&](Value r) { return free.contains(r); }))
        continue;
      ops[i]->setAttr(attr::kStage, b.getI64IntegerAttr(stage));
    }

    // For --report and the runtime: the stages, each one's forward FLOPs per
    // micro-batch, and the bubble the schedule predicts from them.
    std::string list = "[";
    for (auto [k, f] : llvm::enumerate(stageFlops))
      list += (k ? ", " : "") + std::to_string(f);
    list += "]";
    auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata);
    std::string json = meta ? meta.getValue().str() : "";
    json = withMetadataEntry(json, "pp_stage_flops", list);
    json = withMetadataEntry(json, TFC_METADATA_PP_SIZE, std::to_string(s));
    module->setAttr(attr::kMetadata, b.getStringAttr(json));
    return success();
  }
};

} // namespace
