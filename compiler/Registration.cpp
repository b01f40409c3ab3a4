//===- Registration.cpp - dialects and passes every tfc tool knows --------===//
#include "compiler/Registration.h"

#include "dialects/tfc/TfcDialect.h"
#include "codegen/cpu/Passes.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace tfc {

void registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<tfc::TFCDialect, mlir::func::FuncDialect>();
  // What CPU codegen produces, so that its output parses back.
  registry.insert<mlir::arith::ArithDialect, mlir::linalg::LinalgDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
}

void registerPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  tfc::registerTfcPasses();
  tfc::cpu::registerTfcCpuPasses();
}

} // namespace tfc
