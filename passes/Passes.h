//===- Passes.h - tfc passes ------------------------------------*- C++ -*-===//
#ifndef TFC_PASSES_PASSES_H
#define TFC_PASSES_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace tfc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// The loss entry the training passes work on: `entry` when given, else
/// `loss_train` (the loss with dropout) when the module has one, else `loss`.
inline std::string trainingLossEntry(mlir::ModuleOp module,
                                     llvm::StringRef entry) {
  if (!entry.empty())
    return entry.str();
  return module.lookupSymbol("loss_train") ? "loss_train" : "loss";
}

/// Writes the summary printed by -tfc-summary.
void printModuleSummary(mlir::ModuleOp module, llvm::raw_ostream &os);

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace tfc

#endif // TFC_PASSES_PASSES_H
