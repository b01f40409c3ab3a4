//===- Passes.h - target-neutral planning passes ----------------*- C++ -*-===//
#ifndef TFC_CODEGEN_PLAN_PASSES_H
#define TFC_CODEGEN_PLAN_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace tfc {

class Target;

namespace plan {

#define GEN_PASS_DECL
#include "codegen/plan/Passes.h.inc"

/// The target a planned module was lowered for (its `tfc.target`), or the
/// target named `fallback` when the module has none. Emits an error on the
/// module and returns null when that target is not registered.
const Target *targetOf(mlir::ModuleOp module, llvm::StringRef fallback = "cpu");

#define GEN_PASS_REGISTRATION
#include "codegen/plan/Passes.h.inc"

} // namespace plan
} // namespace tfc

#endif // TFC_CODEGEN_PLAN_PASSES_H
