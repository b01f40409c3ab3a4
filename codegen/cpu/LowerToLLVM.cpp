//===- LowerToLLVM.cpp - kernels and entries to the LLVM dialect ----------===//
#include "codegen/cpu/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace tfc::cpu {

void buildLowerToLLVMPipeline(mlir::OpPassManager &pm,
                              int64_t parallelMinWork) {
  pm.addPass(createTfcCpuMergeAliasedArgs());
  // Parallel dimensions become scf.parallel, which tfc-cpu-parallel-loops
  // splits over the runtime's threads.
  pm.addNestedPass<mlir::func::FuncOp>(
      mlir::createConvertLinalgToParallelLoopsPass());
  pm.addPass(createTfcCpuParallelLoops({parallelMinWork}));
  // Before lower-affine: the offsets of subviews at run-time positions
  // (dynamic_slice, kv_cache_update) expand to affine.apply.
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  // tanh and erf become arith that vectorizes; integer powers software
  // loops; what libm still provides, calls; the rest (exp, log, sqrt, ...)
  // LLVM intrinsics.
  pm.addPass(createTfcPolynomialMath());
  pm.addPass(mlir::createConvertMathToFuncs());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  mlir::ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(mlir::createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertIndexToLLVMPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  pm.addPass(createTfcCpuLaunchParallel());
  pm.addPass(mlir::createCanonicalizerPass());
}

} // namespace tfc::cpu
