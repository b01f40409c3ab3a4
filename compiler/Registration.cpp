//===- Registration.cpp - dialects and passes every tfc tool knows --------===//
#include "compiler/Registration.h"

#include "dialects/tfc/TfcDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace tfc {

void registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<tfc::TFCDialect, mlir::func::FuncDialect>();
}

void registerPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  tfc::registerTfcPasses();
}

} // namespace tfc
