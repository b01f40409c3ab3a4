//===- Passes.h - CUDA codegen passes ---------------------------*- C++ -*-===//
#ifndef TFC_CODEGEN_CUDA_PASSES_H
#define TFC_CODEGEN_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace tfc::cuda {

#define GEN_PASS_DECL
#include "codegen/cuda/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/cuda/Passes.h.inc"

/// Registers the CUDA target ("cuda") with codegen/target's registry.
void registerCudaTarget();

/// The architectures --cuda-arch accepts: "sm_80, sm_86, ...".
llvm::StringRef supportedArchitectures();
bool isSupportedArchitecture(llvm::StringRef arch);

} // namespace tfc::cuda

#endif // TFC_CODEGEN_CUDA_PASSES_H
