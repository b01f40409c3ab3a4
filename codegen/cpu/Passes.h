//===- Passes.h - CPU codegen passes ----------------------------*- C++ -*-===//
#ifndef TFC_CODEGEN_CPU_PASSES_H
#define TFC_CODEGEN_CPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace tfc::cpu {

#define GEN_PASS_DECL
#include "codegen/cpu/Passes.h.inc"

/// On a function made by tfc-cpu-parallel-loops, for
/// tfc-cpu-launch-parallel: array<i64: n, grain>, the part runs over
/// [0, n) in ranges of at least `grain`.
constexpr llvm::StringLiteral kParallelAttr = "tfc.parallel";

/// Lowers the output of tfc-lower-to-kernels (linalg, scf, arith, math,
/// memref, func) to the LLVM dialect, kernels and entries with the
/// bare-pointer calling convention.
/// `parallelMinWork`: tfc-cpu-parallel-loops' min-work.
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm, int64_t parallelMinWork);

#define GEN_PASS_REGISTRATION
#include "codegen/cpu/Passes.h.inc"

} // namespace tfc::cpu

#endif // TFC_CODEGEN_CPU_PASSES_H
