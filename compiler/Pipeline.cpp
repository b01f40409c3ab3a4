//===- Pipeline.cpp - tfc's named compilation phases ----------------------===//
#include "compiler/Pipeline.h"

#include "codegen/plan/Passes.h"
#include "dialects/tfc/AttrNames.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

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
  case Phase::Codegen:
    return "codegen";
  case Phase::Llvm:
    return "llvm";
  }
  return "unknown";
}

std::optional<Phase> parsePhase(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("input", Phase::Input)
      .Case("graph", Phase::Graph)
      .Case("kernels", Phase::Kernels)
      .Case("codegen", Phase::Codegen)
      .Case("llvm", Phase::Llvm)
      .Default(std::nullopt);
}

Phase lastPhase() { return Phase::Llvm; }

std::string listPhases() { return "input, graph, kernels, codegen, llvm"; }

Phase phaseReached(mlir::ModuleOp module) {
  if (!module.getOps<mlir::LLVM::LLVMFuncOp>().empty())
    return Phase::Llvm;
  bool planned = false, tensorKernels = false;
  for (auto f : module.getOps<mlir::func::FuncOp>()) {
    planned |= f->hasAttr(attr::kEntry);
    if (f->hasAttr(attr::kKernel) && !f.isExternal())
      tensorKernels |=
          !f.getBody().getOps<mlir::bufferization::ToTensorOp>().empty();
  }
  if (!planned)
    return Phase::Input;
  return tensorKernels ? Phase::Kernels : Phase::Codegen;
}

void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options,
                   Phase from, Phase to) {
  to = std::min(to, options.compileTo);
  auto runs = [&](Phase p) { return from <= p && p <= to; };
  // graph: the training entries when asked for, then the cleanup that every
  // later phase relies on (folded reshapes and transposes, no duplicated
  // loads, no dead gradient ops).
  if (runs(Phase::Graph) && options.tensorParallel > 0) {
    TfcTensorParallelOptions tp;
    tp.size = options.tensorParallel;
    pm.addPass(createTfcTensorParallel(tp));
  }
  if (runs(Phase::Graph) && options.precision != "f32" &&
      !options.optimizer.empty()) {
    TfcAutocastOptions autocast;
    autocast.precision = options.precision;
    autocast.initScale = options.lossScale;
    pm.addPass(createTfcAutocast(autocast));
  } else if (runs(Phase::Graph) && options.precision != "f32") {
    TfcConvertPrecisionOptions precision;
    precision.precision = options.precision;
    pm.addPass(createTfcConvertPrecision(precision));
  }
  if (runs(Phase::Graph) && !options.optimizer.empty()) {
    // One stage is no pipeline (--pp=1 compiles as without it).
    if (options.pipelineParallel > 1) {
      TfcPipelineStagesOptions stages;
      stages.stages = options.pipelineParallel;
      pm.addPass(createTfcPipelineStages(stages));
    }
    pm.addPass(createTfcAutodiff());
    if (options.microbatches > 1) {
      TfcMicrobatchOptions microbatch;
      microbatch.count = options.microbatches;
      pm.addPass(createTfcMicrobatch(microbatch));
    }
    if (options.dataParallel > 0) {
      TfcDataParallelOptions dp;
      dp.size = options.dataParallel;
      dp.bucketMb = options.dpBucketMb;
      dp.overlap = options.dpOverlap;
      pm.addPass(createTfcDataParallel(dp));
      if (options.zero == 1)
        pm.addPass(createTfcZeroShard());
    }
    TfcTrainStepOptions trainStep;
    trainStep.optimizer = options.optimizer;
    trainStep.noDecay = options.noDecay;
    pm.addPass(createTfcTrainStep(trainStep));
    if (options.expertParallel > 1) {
      TfcExpertParallelOptions ep;
      ep.size = options.expertParallel;
      pm.addPass(createTfcExpertParallel(ep));
    }
    if (options.pipelineParallel > 1) {
      TfcPipelineSplitOptions split;
      split.stages = options.pipelineParallel;
      split.schedule = options.ppSchedule;
      pm.addPass(createTfcPipelineSplit(split));
    }
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
    if (options.fuse) {
      TfcFuseOptions fuse;
      fuse.target = options.target->name().str();
      pm.addPass(createTfcFuse(fuse));
    }
    if (options.schedule)
      pm.addPass(createTfcSchedule());
  }
  if (runs(Phase::Kernels)) {
    plan::TfcLowerToKernelsOptions lower;
    lower.target = options.target->name().str();
    pm.addPass(plan::createTfcLowerToKernels(lower));
    pm.addPass(plan::createTfcPlanMemory());
    // Cheap, and a wrong plan corrupts memory silently: always checked.
    pm.addPass(plan::createTfcVerifyMemoryPlan());
  }
  if (runs(Phase::Codegen))
    options.target->buildCodegenPipeline(pm, options.targetOptions);
  if (runs(Phase::Llvm))
    options.target->buildLowerToLLVMPipeline(pm, options.targetOptions);
}

void describePipeline(llvm::raw_ostream &os) {
  os << "Phases (--compile-to=<phase>; each includes the ones before):\n"
        "  input   parse and verify the tfc module\n"
        "  graph   with --precision=bf16|f16: tfc-convert-precision, or\n"
        "            with --optimizer tfc-autocast (mixed precision);\n"
        "          with --optimizer: tfc-pipeline-stages (--pp),\n"
        "            tfc-autodiff, tfc-microbatch (--microbatches),\n"
        "            tfc-train-step, tfc-pipeline-split (--pp);\n"
        "          canonicalize, cse                       (-O1 and above)\n"
        "          tfc-remat: recompute cheap forward values in the backward\n"
        "            instead of keeping them (--no-remat, --remat-budget)\n"
        "          tfc-fuse: pointwise chains, reductions and norms with\n"
        "            their prologue, linear with its activation and\n"
        "            residual, attention as one kernel (--no-fuse)\n"
        "          tfc-schedule: an op order with a lower peak of live\n"
        "            bytes (--no-schedule)                 (-O2 and above)\n"
        "  kernels tfc-lower-to-kernels: every op (or fused group) a\n"
        "          kernel, one buffer per intermediate; tfc-plan-memory: the\n"
        "          buffers in one arena per entry by liveness, in place where\n"
        "          legal (the planned program); tfc-verify-memory-plan\n"
        "  codegen the target's code for every kernel (cpu:\n"
        "          tfc-cpu-emit-kernels: loops, or the kernel library)\n"
        "  llvm    the program in MLIR's LLVM dialect\n"
        "Then --emit=llvm|asm|obj|so: LLVM IR, object code for --cpu, and a\n"
        "shared object. A module written by --compile-to=kernels or codegen\n"
        "compiles on from where it stopped.\n"
        "--report=FILE.json writes what the passes decided, per entry.\n";
}

} // namespace tfc
