//===- ArtifactWriter.h - planned program -> model.so -----------*- C++ -*-===//
//
// The last step of compilation, in two halves around the target's `llvm`
// phase: readArtifactTables takes what the runtime's tables describe
// (parameters, state, entries and their arguments) from the planned program
// and strips what LLVM cannot translate; buildArtifactModule translates the
// lowered module to LLVM IR and adds the entry trampolines and tables of
// runtime/include/tfc/artifact_abi.h. Then object code, and one shared
// object.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H
#define TFC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

/// One tensor of the tables: a parameter, a state tensor, an input or output.
struct ArtifactTensor {
  std::string name;
  int32_t dtype = 0; // TFC_ABI_*
  llvm::SmallVector<int64_t> shape;
  std::string init;
  uint32_t flags = 0;
};

/// One kernel launch of an entry (tfc_kernel_desc_t).
struct ArtifactKernel {
  std::string name, ops;
  int64_t flops = 0, bytesRead = 0, bytesWritten = 0;
};

/// Where an entry's function argument comes from in a call.
enum class ArtifactArgKind { Param, State, Input, Output, Arena };

struct ArtifactEntry {
  std::string name;   // "forward"
  std::string symbol; // "tfc_entry_forward": the lowered entry function
  std::vector<ArtifactTensor> inputs, outputs;
  int64_t arenaBytes = 0;
  std::vector<std::pair<ArtifactArgKind, int64_t>> args;
  std::vector<ArtifactKernel> kernels; // its kernel launches, in call order
};

/// A device target's kernels (tfc_artifact_t.device_*); empty for the CPU.
struct ArtifactDevice {
  int32_t kind = 0; // TFC_DEVICE_*
  std::string arch;
  std::vector<std::string> kernels; // in launch-index order
  std::string image, portable;      // machine code; PTX text
};

/// What the artifact's tables say.
struct ArtifactTables {
  std::vector<ArtifactTensor> params, state;
  std::vector<ArtifactEntry> entries;
  std::string metadata = "{}";
  ArtifactDevice device;
};

/// Reads the tables from a planned module (after tfc-lower-to-kernels and
/// tfc-plan-memory, before its lowering to the LLVM dialect), then removes
/// what LLVM cannot translate (tfc.param, tfc.state, the roles of entry
/// arguments) and names each entry function as its trampoline calls it.
llvm::Expected<ArtifactTables> readArtifactTables(mlir::ModuleOp module);

/// A TargetMachine for the host triple and `options.cpu`.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const ArtifactOptions &options);

/// Translates `module` (in the LLVM dialect: the output of the target's
/// `llvm` phase) to an LLVM module with the trampolines and tables of
/// `tables`, optimized at `options.optLevel`.
llvm::Expected<std::unique_ptr<llvm::Module>>
buildArtifactModule(mlir::ModuleOp module, const ArtifactTables &tables,
                    llvm::LLVMContext &context, llvm::TargetMachine &target,
                    const ArtifactOptions &options);

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

/// Appends the checksum trailer of tfc/artifact_checksum.h to the linked file
/// at `path` (the temporary of `outputPath`, which messages name), which the
/// runtime checks before it loads the artifact.
llvm::Error appendChecksumTrailer(const std::string &path,
                                  const std::string &outputPath);

/// The kernel library to link: $TFC_KERNELS_LIB, else
/// <dir of argv0>/../lib/libtfc_cpu_kernels.a.
llvm::Expected<std::string> findKernelsLibrary(const char *argv0);

} // namespace tfc

#endif // TFC_CODEGEN_ARTIFACT_ARTIFACTWRITER_H
