//===- PipelineSplit.cpp - the tfc-pipeline-split pass ---------------------===//
//
// tfc-pipeline-split: the second half of pipeline parallelism (tfc --pp=S).
// train_step, whose ops carry the stages tfc-pipeline-stages gave the loss
// entry (and tfc-autodiff their VJPs), becomes S entries
// `train_step.stage<s>`, one per rank of the group "pp":
//
//  - every op runs on its stage; an op without one runs on the stage of its
//    latest-made operand that has one (the optimizer's update of a parameter
//    where its gradient is made, the clipping norm's running sum stage after
//    stage), or, when none has one, on every stage that needs it (constants,
//    the learning-rate schedule, the step counter);
//  - a value made on stage t and read on stage u is sent (tfc.send, right
//    after it is made) and received (tfc.recv, right before its first reader),
//    each such message with its own tag; the results of the step (loss,
//    grad_norm) are received by every stage;
//  - a parameter read on several stages (GPT-2's tied wte) is updated where
//    its summed gradient is made and its new value sent to, and stored by,
//    every other stage that reads it;
//  - each stage runs its micro-batches' forwards and backwards in the order
//    of the schedule: "1f1b" (PipeDream-Flush: S - 1 - s forwards first, then
//    one backward after each forward) or "gpipe" (all forwards, then all
//    backwards); every op after what it reads, so the order is a valid one.
//
// The ops are those of one process's train_step, in the same order on each
// value's path: the result equals one process with --microbatches=M, bit for
// bit. Sends never wait for their receiver, so no order of the stages'
// programs can deadlock. The module's metadata gets "pp_owner" (the tensors
// whose current value lives on one stage), "pp_held" (the stages that touch
// each tensor, for those some stage does not: the runtime allocates a tensor
// on those stages' ranks only) and the world size S x M (M tensor-parallel
// ranks a stage); the other entries are dropped (a stage holds its own
// layers' current values only).
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/CostModel.h"
#include "passes/Metadata.h"
#include "passes/Passes.h"
#include "passes/RankEntries.h"

#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include <map>

#define DEBUG_TYPE "tfc-pipeline-split"

namespace tfc {
#define GEN_PASS_DEF_TFCPIPELINESPLIT
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

constexpr int64_t kEverywhere = -1;
constexpr int64_t kMaxTag = 32767; // MPI's guaranteed tag range

struct PipelineSplitPass
    : public tfc::impl::TfcPipelineSplitBase<PipelineSplitPass> {
  using TfcPipelineSplitBase::TfcPipelineSplitBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (stages < 1 || (schedule != "1f1b" && schedule != "gpipe")) {
      module.emitError("tfc-pipeline-split: stages must be at least 1 and the "
                       "schedule 1f1b or gpipe, not ")
          << static_cast<int64_t>(stages) << " and '" << schedule << "'";
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>(entry);
    if (!step || step.isExternal()) {
      module.emitError("tfc-pipeline-split: no entry function '")
          << entry << "'; run tfc-train-step first";
      return signalPassFailure();
    }
    if (failed(split(module, step)))
      signalPassFailure();
  }

  LogicalResult split(ModuleOp module, func::FuncOp step) {
    const int64_t s = stages;
    Block &body = step.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Operation *> ops;
    DenseMap<Operation *, int64_t> position;
    for (Operation &op : body.without_terminator()) {
      position[&op] = static_cast<int64_t>(ops.size());
      ops.push_back(&op);
    }

    // Each op's stage, in program order.
    DenseMap<Operation *, int64_t> stageOf;
    for (Operation *op : ops) {
      int64_t stage = kEverywhere;
      if (auto a = op->getAttrOfType<IntegerAttr>(attr::kStage)) {
        stage = a.getInt();
        if (stage < 0 || stage >= s)
          return op->emitError("tfc-pipeline-split: stage ")
                 << stage << " of " << s;
      } else {
        // Where its largest operand is (a parameter's update goes to its
        // gradient, not to the clipping scale), the latest-made among equals.
        std::pair<int64_t, int64_t> best = {-1, -1}; // (bytes, position)
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp();
              def && stageOf.lookup(def) != kEverywhere) {
            std::pair<int64_t, int64_t> key = {tensorBytes(v.getType()),
                                               position.lookup(def)};
            if (key > best) {
              best = key;
              stage = stageOf.lookup(def);
            }
          }
      }
      stageOf[op] = stage;
    }

    // The stages whose own ops read an op's results, through ops that run
    // everywhere (a parameter's load, a reshape of it).
    DenseMap<Operation *, llvm::SmallSetVector<int64_t, 4>> readers;
    for (Operation *op : llvm::reverse(ops)) {
      llvm::SmallSetVector<int64_t, 4> set;
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers()) {
          if (user == ret.getOperation())
            continue;
          int64_t u = stageOf.lookup(user);
          if (u != kEverywhere)
            set.insert(u);
          else if (auto it = readers.find(user); it != readers.end())
            set.insert(it->second.begin(), it->second.end());
        }
      readers[op] = std::move(set);
    }
    // The stages that read each symbol through a load.
    llvm::StringMap<llvm::SmallSetVector<int64_t, 4>> holdersOf;
    for (Operation *op : ops)
      if (auto load = llvm::dyn_cast<LoadOp>(op))
        holdersOf[load.getName()].insert(readers[op].begin(), readers[op].end());
    // A store of a parameter made on one stage is made too on every other
    // stage that reads the parameter.
    DenseMap<Operation *, SmallVector<int64_t>> storedAlsoOn;
    std::map<std::string, int64_t> owner;
    for (Operation *op : ops) {
      auto store = llvm::dyn_cast<StoreOp>(op);
      if (!store || stageOf.lookup(op) == kEverywhere)
        continue;
      int64_t t = stageOf.lookup(op);
      owner[store.getName().str()] = t;
      for (int64_t u : holdersOf.lookup(store.getName()))
        if (u != t)
          storedAlsoOn[op].push_back(u);
    }

    // Who receives each value made on one stage, and the tag of each message
    // (in program order, so that both sides agree).
    auto runsOn = [&](Operation *op, int64_t u) {
      int64_t t = stageOf.lookup(op);
      return t == kEverywhere || t == u ||
             llvm::is_contained(storedAlsoOn.lookup(op), u);
    };
    DenseMap<std::pair<Value, int64_t>, int64_t> tagOf;
    int64_t nextTag = 0;
    for (Operation *op : ops) {
      int64_t t = stageOf.lookup(op);
      if (t == kEverywhere)
        continue;
      for (Value r : op->getResults()) {
        llvm::SmallSetVector<int64_t, 4> to;
        for (Operation *user : r.getUsers()) {
          if (user == ret.getOperation()) {
            for (int64_t u = 0; u < s; ++u)
              to.insert(u);
            continue;
          }
          for (int64_t u = 0; u < s; ++u)
            if (runsOn(user, u))
              to.insert(u);
        }
        for (int64_t u : to)
          if (u != t)
            tagOf[{r, u}] = nextTag++;
      }
    }
    if (nextTag > kMaxTag + 1)
      return step.emitError("tfc-pipeline-split: ")
             << nextTag << " messages between stages per step; MPI guarantees "
             << kMaxTag + 1 << " tags (use fewer micro-batches)";

    // The schedule: the order of each stage's micro-batch blocks.
    int64_t microbatches = 1;
    for (Operation *op : ops)
      if (auto k = op->getAttrOfType<IntegerAttr>(attr::kMicrobatch))
        microbatches = std::max(microbatches, k.getInt() + 1);

    OpBuilder b(module.getContext());
    SmallVector<func::FuncOp> made;
    for (int64_t u = 0; u < s; ++u) {
      // Block (micro-batch k, forward or backward) -> its place on stage u.
      const int64_t m = microbatches;
      const int64_t warmup =
          schedule == "gpipe" ? m : std::min<int64_t>(s - 1 - u, m);
      std::map<std::pair<int64_t, bool>, int64_t> slotOfBlock;
      int64_t next = 0;
      for (int64_t k = 0; k < warmup; ++k)
        slotOfBlock[{k, false}] = next++;
      for (int64_t k = 0; k < m; ++k) {
        if (warmup + k < m)
          slotOfBlock[{warmup + k, false}] = next++;
        slotOfBlock[{k, true}] = next++;
      }
      // Each op of stage u at its block's place, and never before what it
      // reads or an earlier store of what it loads; stores stay last.
      DenseMap<Operation *, int64_t> slot;
      std::map<std::string, int64_t> storedAt;
      int64_t latest = -1; // the latest place of the ops so far
      SmallVector<Operation *> mine;
      for (Operation *op : ops) {
        if (!runsOn(op, u))
          continue;
        int64_t at = -1;
        bool backward = op->hasAttr(attr::kBackward);
        if (auto k = op->getAttrOfType<IntegerAttr>(attr::kMicrobatch))
          at = slotOfBlock[{k.getInt(), backward}];
        else if (op->hasAttr(attr::kStage))
          at = slotOfBlock[{0, backward}];
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp(); def && slot.count(def))
            at = std::max(at, slot.lookup(def));
        if (auto load = llvm::dyn_cast<LoadOp>(op))
          if (auto it = storedAt.find(load.getName().str()); it != storedAt.end())
            at = std::max(at, it->second);
        // A store after every op before it: a load is a view of the
        // parameter, which the store overwrites.
        if (auto store = llvm::dyn_cast<StoreOp>(op)) {
          at = std::max(at, latest);
          storedAt[store.getName().str()] = at;
        }
        latest = std::max(latest, at);
        slot[op] = at;
        mine.push_back(op);
      }
      llvm::stable_sort(mine, [&](Operation *x, Operation *y) {
        return slot.lookup(x) < slot.lookup(y);
      });

      // The stage's function: the same signature as train_step.
      b.setInsertionPoint(step);
      auto f = b.create<func::FuncOp>(
          step.getLoc(), (entry + ".stage" + llvm::Twine(u)).str(),
          step.getFunctionType());
      for (NamedAttribute a : step->getDiscardableAttrs())
        f->setAttr(a.getName(), a.getValue());
      f.setAllArgAttrs(step.getAllArgAttrs());
      f.setAllResultAttrs(step.getAllResultAttrs());
      Block *fb = f.addEntryBlock();
      IRMapping mapping;
      for (auto [from, to] : llvm::zip(body.getArguments(), fb->getArguments()))
        mapping.map(from, to);
      b.setInsertionPointToEnd(fb);
      auto receive = [&](Value v) {
        if (mapping.contains(v))
          return;
        Operation *def = v.getDefiningOp();
        auto recv = b.create<RecvOp>(
            v.getLoc(), v.getType(), b.getStringAttr(group),
            b.getI64IntegerAttr(stageOf.lookup(def)),
            b.getI64IntegerAttr(tagOf.lookup({v, u})));
        mapping.map(v, recv.getResult());
      };
      for (Operation *op : mine) {
        for (Value v : op->getOperands())
          receive(v);
        Operation *copy = b.clone(*op, mapping);
        copy->removeAttr(attr::kStage);
        copy->removeAttr(attr::kBackward);
        copy->removeAttr(attr::kMicrobatch);
        if (stageOf.lookup(op) != u)
          continue;
        for (Value r : op->getResults())
          for (int64_t to = 0; to < s; ++to)
            if (auto it = tagOf.find({r, to}); it != tagOf.end())
              b.create<SendOp>(r.getLoc(), mapping.lookup(r),
                               b.getStringAttr(group), b.getI64IntegerAttr(to),
                               b.getI64IntegerAttr(it->second));
      }
      SmallVector<Value> results;
      for (Value v : ret.getOperands()) {
        receive(v);
        results.push_back(mapping.lookup(v));
      }
      b.create<func::ReturnOp>(ret.getLoc(), results);
      made.push_back(f);
    }

    // A stage holds its own layers' current values only: no other entry.
    SmallVector<func::FuncOp> dropped;
    for (auto f : module.getOps<func::FuncOp>())
      if (!llvm::is_contained(made, f))
        dropped.push_back(f);
    for (auto f : dropped)
      f.erase();

    // The tensors a stage does not touch need no storage on its ranks.
    RankEntryMetadata tensors = rankEntryMetadata(module, made, owner);
    auto meta = module->getAttrOfType<StringAttr>(attr::kMetadata);
    std::string json = meta ? meta.getValue().str() : "";
    json = withMetadataEntry(json, TFC_METADATA_PP_OWNER, tensors.owners);
    json = withMetadataEntry(json, TFC_METADATA_PP_HELD, tensors.held);
    json = withMetadataEntry(json, TFC_METADATA_PP_SIZE, std::to_string(s));
    // S stages of M tensor-parallel ranks each (tfc-tensor-parallel wrote M);
    // with data parallelism tfc-data-parallel wrote N x M x S already.
    int64_t world =
        s * metadataInt(json, TFC_METADATA_TP_SIZE).value_or(int64_t{1});
    if (metadataInt(json, TFC_METADATA_WORLD_SIZE).value_or(int64_t{0}) < world)
      json = withMetadataEntry(json, TFC_METADATA_WORLD_SIZE,
                               std::to_string(world));
    json = withMetadataEntry(json, "pp_schedule", "\"" + schedule + "\"");
    module->setAttr(attr::kMetadata, b.getStringAttr(json));
    return success();
  }
};

} // namespace
