//===- Pipeline.cpp - tfc's named compilation phases ----------------------===//
#include "compiler/Pipeline.h"

#include "codegen/cpu/Passes.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

namespace tfc {

llvm::StringRef phaseName(Phase phase) {
  switch (phase) {
  case Phase::Input:
    return "input";
  case Phase::Graph:
    return "graph";
  case Phase::Kernels:
    return "kernels";
  }
  return "unknown";
}

std::optional<Phase> parsePhase(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("input", Phase::Input)
      .Case("graph", Phase::Graph)
      .Case("kernels", Phase::Kernels)
      .Default(std::nullopt);
}

Phase lastPhase() { return Phase::Kernels; }

std::string listPhases() { return "input, graph, kernels"; }

void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options,
                   Phase from, Phase to) {
  to = std::min(to, options.compileTo);
  auto runs = [&](Phase p) { return from <= p && p <= to; };
  // graph: the training entries when asked for, then the cleanup that every
  // later phase relies on (folded reshapes and transposes, no duplicated
  // loads, no dead gradient ops).
  if (runs(Phase::Graph) && !options.optimizer.empty()) {
    pm.addPass(createTfcAutodiff());
    TfcTrainStepOptions trainStep;
    trainStep.optimizer = options.optimizer;
    trainStep.noDecay = options.noDecay;
    pm.addPass(createTfcTrainStep(trainStep));
  }
  if (runs(Phase::Graph) && options.optLevel >= 1) {
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  // -O2: what to keep for the backward (on the unfused graph, where every
  // value has its own bytes), then kernels, then their order.
  // tfc-remat runs after the last CSE, which would merge its recomputed
  // clones back into the forward values they copy.
  if (runs(Phase::Graph) && options.optLevel >= 2) {
    if (options.remat) {
      TfcRematOptions remat;
      remat.memoryBudget = options.rematBudget;
      pm.addPass(createTfcRemat(remat));
    }
    if (options.fuse)
      pm.addPass(createTfcFuse());
    if (options.schedule)
      pm.addPass(createTfcSchedule());
  }
  if (runs(Phase::Kernels)) {
    pm.addPass(cpu::createTfcLowerToKernels());
    pm.addPass(cpu::createTfcPlanMemory());
    // Cheap, and a wrong plan corrupts memory silently: always checked.
    pm.addPass(cpu::createTfcVerifyMemoryPlan());
  }
}

void describePipeline(llvm::raw_ostream &os) {
  os << "Phases (--compile-to=<phase>; each includes the ones before):\n"
        "  input   parse and verify the tfc module\n"
        "  graph   with --optimizer: tfc-autodiff, tfc-train-step;\n"
        "          canonicalize, cse                       (-O1 and above)\n"
        "          tfc-remat: recompute cheap forward values in the backward\n"
        "            instead of keeping them (--no-remat, --remat-budget)\n"
        "          tfc-fuse: pointwise chains, reductions and norms with\n"
        "            their prologue, linear with its activation and\n"
        "            residual, attention as one kernel (--no-fuse)\n"
        "          tfc-schedule: an op order with a lower peak of live\n"
        "            bytes (--no-schedule)                 (-O2 and above)\n"
        "  kernels tfc-lower-to-kernels: every op (or fused group) a CPU\n"
        "          kernel, one buffer per intermediate; tfc-plan-memory: the\n"
        "          buffers in one arena per entry by liveness, in place where\n"
        "          legal (the planned program); tfc-verify-memory-plan\n"
        "Then --emit=llvm|asm|obj|so lowers kernels through MLIR's LLVM\n"
        "dialect to LLVM IR, object code for --cpu, and a shared object.\n"
        "--report=FILE.json writes what the passes decided, per entry.\n"
        "Not yet in this build: CUDA codegen.\n";
}

} // namespace tfc
