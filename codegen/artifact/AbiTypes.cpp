//===- AbiTypes.cpp - artifact_abi.h's structs as LLVM types --------------===//
#include "codegen/artifact/AbiTypes.h"

#include "tfc/artifact_abi.h"

#include "mlir/IR/Types.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/LLVMContext.h"

namespace tfc {

AbiTypes getAbiTypes(llvm::LLVMContext &ctx) {
  AbiTypes t;
  t.ptr = llvm::PointerType::get(ctx, 0);
  t.i32 = llvm::Type::getInt32Ty(ctx);
  t.i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type *ptr = t.ptr, *i32 = t.i32, *i64 = t.i64;
  t.tensorDesc = llvm::StructType::create(
      ctx, {ptr, i32, i32, ptr, ptr, i32, i32}, "tfc_tensor_desc_t");
  t.entry = llvm::StructType::create(
      ctx, {ptr, i32, i32, ptr, ptr, i64, i64, ptr, ptr}, "tfc_entry_t");
  t.kernelDesc = llvm::StructType::create(ctx, {ptr, ptr, i64, i64, i64},
                                          "tfc_kernel_desc_t");
  t.artifact = llvm::StructType::create(
      ctx,
      {i32, i32, i32, i32, ptr, ptr, ptr, ptr, i32, i32, i32, i32, ptr, ptr,
       ptr, i32, i32, ptr, ptr, ptr, i64, ptr},
      "tfc_artifact_t");
  t.hostApi =
      llvm::StructType::create(ctx, {i32, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr},
                               "tfc_host_api_t");
  return t;
}

int32_t abiElementType(mlir::Type type) {
  if (type.isF32())
    return TFC_ABI_F32;
  if (type.isF16())
    return TFC_ABI_F16;
  if (type.isBF16())
    return TFC_ABI_BF16;
  if (type.isInteger(32))
    return TFC_ABI_I32;
  if (type.isInteger(64))
    return TFC_ABI_I64;
  return 0;
}

} // namespace tfc
