//===- Registration.cpp - dialects and passes every tfc tool knows --------===//
#include "compiler/Registration.h"

#include "codegen/cpu/CpuTarget.h"
#include "codegen/cpu/Passes.h"
#ifdef TFC_HAVE_CUDA_TARGET
#include "codegen/cuda/Passes.h"
#endif
#include "codegen/plan/Passes.h"
#include "dialects/tfc/TfcDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace tfc {

void registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<tfc::TFCDialect, mlir::func::FuncDialect>();
  // The planned program's kernels (to_tensor, materialize_in_destination),
  // and what CPU codegen produces, so that every phase's output parses back.
  registry.insert<mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::linalg::LinalgDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
}

void registerTargets() {
  static bool once = [] {
    tfc::cpu::registerCpuTarget();
#ifdef TFC_HAVE_CUDA_TARGET
    tfc::cuda::registerCudaTarget();
#endif
    return true;
  }();
  (void)once;
}

void registerPasses() {
  registerTargets();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  tfc::registerTfcPasses();
  tfc::plan::registerTfcPlanPasses();
  tfc::cpu::registerTfcCpuPasses();
#ifdef TFC_HAVE_CUDA_TARGET
  tfc::cuda::registerTfcCudaPasses();
#endif
}

} // namespace tfc
