//===- Pipeline.cpp - tfc's named compilation phases ----------------------===//
#include "compiler/Pipeline.h"

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
  }
  return "unknown";
}

std::optional<Phase> parsePhase(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("input", Phase::Input)
      .Case("graph", Phase::Graph)
      .Default(std::nullopt);
}

Phase lastPhase() { return Phase::Graph; }

std::string listPhases() { return "input, graph"; }

void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options) {
  if (options.compileTo == Phase::Input)
    return;
  // graph: cleanup that every later phase relies on (folded reshapes and
  // transposes, no duplicated loads).
  if (options.optLevel >= 1) {
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
}

void describePipeline(llvm::raw_ostream &os) {
  os << "Phases (--compile-to=<phase>; each includes the ones before):\n"
        "  input   parse and verify the tfc module\n"
        "  graph   canonicalize, cse                       (-O1 and above)\n"
        "Not yet available in this build: fused (tfc-fuse, tfc-remat),\n"
        "planned (tfc-schedule, tfc-plan-memory), llvm, so (CPU/CUDA codegen).\n";
}

} // namespace tfc
