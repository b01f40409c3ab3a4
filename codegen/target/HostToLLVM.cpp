//===- HostToLLVM.cpp - entries and kernels to the LLVM dialect -----------===//
#include "codegen/target/HostToLLVM.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace tfc {

void buildHostToLLVMPipeline(mlir::OpPassManager &pm,
                             const HostToLLVMSteps &steps) {
  if (steps.atStart)
    steps.atStart(pm);
  // Before lower-affine: views of the arena are pointer arithmetic, and the
  // offsets of subviews at run-time positions (dynamic_slice,
  // kv_cache_update) expand to affine.apply.
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  if (steps.afterControlFlow)
    steps.afterControlFlow(pm);
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  // Bare pointers: the artifact ABI passes buffers as plain pointers.
  mlir::ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(mlir::createConvertFuncToLLVMPass(funcOptions));
  if (steps.afterFunctions)
    steps.afterFunctions(pm);
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertIndexToLLVMPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  if (steps.onLLVM)
    steps.onLLVM(pm);
  pm.addPass(mlir::createCanonicalizerPass());
}

} // namespace tfc
