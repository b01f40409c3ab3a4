//===- Passes.h - tfc passes ------------------------------------*- C++ -*-===//
#ifndef TFC_PASSES_PASSES_H
#define TFC_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace tfc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Writes the summary printed by -tfc-summary.
void printModuleSummary(mlir::ModuleOp module, llvm::raw_ostream &os);

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace tfc

#endif // TFC_PASSES_PASSES_H
