//===- ArtifactWriter.h - planned program -> model.so -----------*- C++ -*-===//
//
// The last step of compilation: from a module after tfc-lower-to-kernels,
// build the LLVM module of the artifact (kernels, entries, the entry
// trampolines of runtime/include/tfc/artifact_abi.h and its tables), emit
// object code for the target CPU and link one shared object.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H
#define TFC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H

#include "llvm/Support/Error.h"
#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
class raw_pwrite_stream;
} // namespace llvm

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace tfc {

struct ArtifactOptions {
  /// "native", or an LLVM CPU name such as "x86-64-v3", "x86-64-v4".
  std::string cpu = "native";
  /// LLVM optimization level, 0-3.
  int optLevel = 2;
  /// Recorded in the artifact.
  std::string compilerVersion;
  std::string moduleHash;
};

/// A TargetMachine for the host triple and `options.cpu`.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const ArtifactOptions &options);

/// Lowers `module` (the output of tfc-lower-to-kernels; it is modified) to the
/// LLVM dialect and then to an LLVM module with the artifact's tables and
/// trampolines, optimized at `options.optLevel`.
llvm::Expected<std::unique_ptr<llvm::Module>>
buildArtifactModule(mlir::ModuleOp module, llvm::LLVMContext &context,
                    llvm::TargetMachine &target, const ArtifactOptions &options);

enum class ObjectKind { Assembly, Object };

/// Writes `module` as assembly or object code.
llvm::Error emitCode(llvm::Module &module, llvm::TargetMachine &target,
                     ObjectKind kind, llvm::raw_pwrite_stream &os);

/// Links `objectPath` with the kernel library into the shared object
/// `outputPath` (written to a temporary file and renamed), exporting only the
/// artifact symbol. Uses $TFC_LINKER, else c++ or cc from PATH.
llvm::Error linkSharedObject(const std::string &objectPath,
                             const std::string &kernelsLibrary,
                             const std::string &outputPath);

/// The kernel library to link: $TFC_KERNELS_LIB, else
/// <dir of argv0>/../lib/libtfc_cpu_kernels.a.
llvm::Expected<std::string> findKernelsLibrary(const char *argv0);

} // namespace tfc

#endif // TFC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H
