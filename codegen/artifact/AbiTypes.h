//===- AbiTypes.h - artifact_abi.h's structs as LLVM types ------*- C++ -*-===//
//
// The structs of runtime/include/tfc/artifact_abi.h as the artifact writer
// emits them into LLVM IR. Defined here once; test/Codegen/artifact's
// abi-layout unit test checks every size and field offset under the host's
// data layout against the C header compiled by the C++ compiler, so the two
// cannot drift apart silently.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_ARTIFACT_ABITYPES_H
#define TFC_CODEGEN_ARTIFACT_ABITYPES_H

#include <cstdint>

namespace mlir {
class Type;
} // namespace mlir

namespace llvm {
class IntegerType;
class LLVMContext;
class PointerType;
class StructType;
} // namespace llvm

namespace tfc {

struct AbiTypes {
  llvm::PointerType *ptr;
  llvm::IntegerType *i32, *i64;
  /// tfc_tensor_desc_t {name, dtype, rank, shape, init, flags, reserved}
  llvm::StructType *tensorDesc;
  /// tfc_entry_t {name, num_inputs, num_outputs, inputs, outputs,
  ///              arena_bytes, num_kernels, call, kernels}
  llvm::StructType *entry;
  /// tfc_kernel_desc_t {name, ops, flops, bytes_read, bytes_written}
  llvm::StructType *kernelDesc;
  /// tfc_artifact_t {magic, abi_version, struct_size, reserved, target,
  ///                 compiler_version, module_hash, metadata_json,
  ///                 num_params, num_state, num_entries, reserved2,
  ///                 params, state, entries, device, num_device_kernels,
  ///                 device_arch, device_kernels, device_image,
  ///                 device_image_bytes, device_ptx}
  llvm::StructType *artifact;
  /// tfc_host_api_t {struct_size, user, parallel_for, report_error,
  ///                 kernel_begin, kernel_end, device_launch, device_copy,
  ///                 device_constant, collective, collective_start,
  ///                 collective_wait, device_matmul}
  llvm::StructType *hostApi;

  /// Field numbers of tfc_host_api_t that compiled code reads.
  static constexpr unsigned kHostUser = 1;
  static constexpr unsigned kHostParallelFor = 2;
  static constexpr unsigned kHostReportError = 3;
};

/// The artifact ABI's code of an element type (TFC_ABI_F32, ...; the values
/// of tfc_dtype_t), or 0 for a type the ABI has none for.
int32_t abiElementType(mlir::Type type);

/// The struct types, created in `ctx` (named "tfc_tensor_desc_t", ...).
AbiTypes getAbiTypes(llvm::LLVMContext &ctx);

} // namespace tfc

#endif // TFC_CODEGEN_ARTIFACT_ABITYPES_H
