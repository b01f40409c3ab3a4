//===- Target.h - what a code generation target is to the compiler -*- C++ -*-===//
//
// A target is one implementation of this interface, in the way IREE's
// TargetBackend and Triton's backends are. The target-neutral compiler (graph
// passes, tfc-lower-to-kernels, tfc-plan-memory and its verifier, the report,
// the artifact's tables) never names a target: it asks the one selected with
// `--target=` (or a pass's `target=` option) what it can do, and lets it add
// its passes.
//
//   - What target-neutral passes ask: the fused kinds and linear epilogues
//     the target has kernels for (tfc-fuse), whether a kernel may write its
//     result over a dying operand (tfc-lower-to-kernels marks such calls for
//     tfc-plan-memory), the alignment of every buffer in the arena.
//   - What a target contributes: the passes that turn the planned program's
//     kernels (tensor ops between bufferization.to_tensor and
//     bufferization.materialize_in_destination) into its own code (the
//     `codegen` phase), and the lowering of the whole program to the LLVM
//     dialect (the `llvm` phase), from which the artifact writer makes
//     model.so.
//
// Targets register themselves once per process (registerTarget); tools call
// the registration functions of the targets they link (compiler/Registration).
//
//===----------------------------------------------------------------------===//
#ifndef TFC_CODEGEN_TARGET_TARGET_H
#define TFC_CODEGEN_TARGET_TARGET_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
class Operation;
class Type;
} // namespace mlir

namespace tfc {

/// What the user chose for a target on the command line.
struct TargetOptions {
  /// CPU: "native", or an LLVM CPU name such as "x86-64-v4".
  std::string cpu = "native";
  /// CUDA: the GPU architecture kernels are compiled for.
  std::string cudaArch = "sm_90";
  /// CUDA: f32 products on tensor cores through TF32 (--cuda-tf32).
  bool cudaTf32 = false;
  /// CPU: the least work (loop-body operations over all iterations) of a
  /// generated loop that runs on the runtime's threads; 0 threads every
  /// parallel loop, a negative value none.
  int64_t parallelMinWork = int64_t{1} << 16;
  /// Where a target writes what it makes besides IR (CUDA: each kernel's
  /// .cu and .ptx), when --dump-ir asks; empty: nowhere.
  std::string dumpDir;
};

class Target {
public:
  virtual ~Target();

  /// The name of `--target=` and of the passes' `target=` option: "cpu".
  virtual llvm::StringRef name() const = 0;
  /// One line for --help.
  virtual llvm::StringRef description() const = 0;

  //===--------------------------------------------------------------------===//
  // What target-neutral passes may ask
  //===--------------------------------------------------------------------===//

  /// Byte alignment of every buffer in an entry's arena (the arena itself is
  /// aligned by the runtime to at least this).
  virtual int64_t arenaAlignment() const = 0;

  /// Whether the target has kernels for `tfc.fused` groups of this kind
  /// ("pointwise", "reduction", "row", "linear"), and for tfc.attention
  /// ("attention": tfc-fuse then rewrites the unfused attention sequence).
  virtual bool supportsFusedKind(llvm::StringRef kind) const = 0;

  /// Whether a "linear" kernel over elements of `elementType` can apply
  /// `epilogueOp` (an activation such as tfc.gelu, or the residual tfc.add)
  /// to its output tile before storing it.
  virtual bool supportsLinearEpilogue(mlir::Operation *epilogueOp,
                                      mlir::Type elementType) const = 0;

  /// Whether `op`'s kernel reads every operand element before it writes the
  /// result element at the same index, so that a result may take the bytes
  /// of an operand of its shape and element size that dies at the call.
  virtual bool mayWriteOverOperand(mlir::Operation *op) const = 0;

  //===--------------------------------------------------------------------===//
  // What a target contributes
  //===--------------------------------------------------------------------===//

  /// The `codegen` phase: kernels of the planned program become the
  /// target's code.
  virtual void buildCodegenPipeline(mlir::OpPassManager &pm,
                                    const TargetOptions &options) const = 0;

  /// What is wrong with `options` for this target (an unknown
  /// architecture, ...), as a message naming the option; empty when they
  /// are fine. The driver checks before doing any work.
  virtual std::string checkOptions(const TargetOptions &) const { return {}; }

  /// Why this target cannot build an artifact (model.so) yet; empty when it
  /// can. The driver refuses --emit=so and the llvm phase with this reason.
  virtual std::string artifactUnavailable() const { return {}; }

  /// The `llvm` phase: the planned program, entries and kernels, in the LLVM
  /// dialect, ready for translation to LLVM IR.
  virtual void buildLowerToLLVMPipeline(mlir::OpPassManager &pm,
                                        const TargetOptions &options) const = 0;
};

/// Whether some operand of `op` has the shape and element size of some
/// result: the precondition of every "result may take a dying operand's
/// bytes" rule (Target::mayWriteOverOperand).
bool hasOperandLikeResult(mlir::Operation *op);

/// Makes `target` known under its name; a second target of the same name
/// replaces nothing and is dropped.
void registerTarget(std::unique_ptr<Target> target);

/// The registered target of that name, or null.
const Target *lookupTarget(llvm::StringRef name);

/// The names of the registered targets, sorted: "cpu".
std::vector<std::string> registeredTargetNames();

/// "cpu, cuda" for messages.
std::string listTargets();

} // namespace tfc

#endif // TFC_CODEGEN_TARGET_TARGET_H
