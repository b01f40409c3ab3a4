//===- LowerToLLVM.cpp - kernels and entries to the LLVM dialect ----------===//
#include "codegen/cpu/Passes.h"

#include "codegen/target/HostToLLVM.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassManager.h"

namespace tfc::cpu {

void buildLowerToLLVMPipeline(mlir::OpPassManager &pm,
                              int64_t parallelMinWork) {
  HostToLLVMSteps steps;
  steps.atStart = [parallelMinWork](mlir::OpPassManager &pm) {
    pm.addPass(createTfcCpuMergeAliasedArgs());
    // Parallel dimensions become scf.parallel, which tfc-cpu-parallel-loops
    // splits over the runtime's threads.
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::createConvertLinalgToParallelLoopsPass());
    pm.addPass(createTfcCpuParallelLoops({parallelMinWork}));
  };
  steps.afterControlFlow = [](mlir::OpPassManager &pm) {
    // tanh and erf become arith that vectorizes; integer powers software
    // loops; what libm still provides, calls; the rest (exp, log, sqrt, ...)
    // LLVM intrinsics.
    pm.addPass(createTfcPolynomialMath());
    pm.addPass(mlir::createConvertMathToFuncs());
    pm.addPass(mlir::createConvertMathToLibmPass());
  };
  steps.afterFunctions = [](mlir::OpPassManager &pm) {
    pm.addPass(mlir::createConvertMathToLLVMPass());
  };
  steps.onLLVM = [](mlir::OpPassManager &pm) {
    pm.addPass(createTfcCpuLaunchParallel());
  };
  buildHostToLLVMPipeline(pm, steps);
}

} // namespace tfc::cpu
