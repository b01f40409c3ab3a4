//===- KernelUtils.cpp - helpers shared by the kernel emitters ------------===//
#include "codegen/cpu/KernelEmitters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace tfc::cpu {

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

Value floatConst(OpBuilder &b, Location loc, Type type, double v) {
  return b.create<arith::ConstantOp>(loc, b.getFloatAttr(type, v));
}

func::FuncOp declareExternal(OpBuilder &b, Operation *anchor, StringRef name,
                             FunctionType type) {
  auto module = anchor->getParentOfType<ModuleOp>();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto func = b.create<func::FuncOp>(module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

Value loadScalar(OpBuilder &b, Location loc, Value memref) {
  return b.create<memref::LoadOp>(loc, memref, ValueRange{});
}

Value pointerOf(OpBuilder &b, Location loc, Value memref) {
  Value index =
      b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, memref);
  Value i64 = b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
  return b.create<LLVM::IntToPtrOp>(
      loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

void emitRuntimeError(OpBuilder &b, Location loc, Operation *anchor,
                      StringRef message) {
  auto module = anchor->getParentOfType<ModuleOp>();
  // One global per distinct message, named by a hash of its text.
  std::string name =
      "tfc_error_" + std::to_string(llvm::hash_value(message) & 0xffffffffu);
  Value text;
  {
    auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
    if (auto global = module.lookupSymbol<LLVM::GlobalOp>(name)) {
      text = b.create<LLVM::AddressOfOp>(loc, ptrType, global.getSymName());
    } else {
      OpBuilder::InsertionGuard guard(b);
      std::string terminated(message);
      terminated.push_back('\0');
      text = LLVM::createGlobalString(loc, b, name, terminated,
                                      LLVM::Linkage::Internal);
    }
  }
  auto fnType = b.getFunctionType({text.getType()}, {});
  auto fn = declareExternal(b, anchor, "tfc_kernels_error", fnType);
  b.create<func::CallOp>(loc, fn, ValueRange{text});
}

} // namespace tfc::cpu
