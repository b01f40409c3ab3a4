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
  if (runs(Phase::Kernels))
    pm.addPass(cpu::createTfcLowerToKernels());
}

void describePipeline(llvm::raw_ostream &os) {
  os << "Phases (--compile-to=<phase>; each includes the ones before):\n"
        "  input   parse and verify the tfc module\n"
        "  graph   with --optimizer: tfc-autodiff, tfc-train-step;\n"
        "          canonicalize, cse                       (-O1 and above)\n"
        "  kernels tfc-lower-to-kernels: every op a CPU kernel, buffers in\n"
        "          one arena per entry (the planned program)\n"
        "Then --emit=llvm|asm|obj|so lowers kernels through MLIR's LLVM\n"
        "dialect to LLVM IR, object code for --cpu, and a shared object.\n"
        "Not yet in this build: fused (tfc-fuse, tfc-remat), memory reuse\n"
        "(tfc-plan-memory), CUDA codegen.\n";
}

} // namespace tfc
