//===- Pipeline.h - tfc's named compilation phases --------------*- C++ -*-===//
//
// The compiler runs in named phases, each testable alone with
// `tfc --compile-to=<phase>`. input, graph and kernels are the same for every
// target; codegen and llvm are what the target (codegen/target) contributes.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_COMPILER_PIPELINE_H
#define TFC_COMPILER_PIPELINE_H

#include "codegen/target/Target.h"

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir {
class ModuleOp;
class OpPassManager;
} // namespace mlir

namespace tfc {

enum class Phase {
  /// Parsed and verified input, unchanged.
  Input,
  /// Graph-level cleanup: canonicalization, CSE, dead symbols.
  Graph,
  /// The planned program: every op a call of a kernel on arena buffers
  /// (tfc-lower-to-kernels, tfc-plan-memory, tfc-verify-memory-plan); the
  /// kernels still hold their op on tensors.
  Kernels,
  /// The target's code for every kernel (CPU: tfc-cpu-emit-kernels).
  Codegen,
  /// The whole program in the LLVM dialect, what the artifact writer
  /// translates to LLVM IR and links into model.so.
  Llvm,
};

/// "input", "graph", ...
llvm::StringRef phaseName(Phase phase);
std::optional<Phase> parsePhase(llvm::StringRef name);
/// The last phase this build of tfc can reach.
Phase lastPhase();
/// "input, graph, ..." for help and error messages.
std::string listPhases();

/// The phase a module read from a file has already reached: Input for a
/// graph, Kernels for a planned program (an entry with `tfc.entry`), Codegen
/// when its kernels already hold target code, Llvm when it is in the LLVM
/// dialect. A module continues from the phase after this one.
Phase phaseReached(mlir::ModuleOp module);

struct PipelineOptions {
  /// The target of the planned program (codegen/target); never null once
  /// the driver has resolved --target.
  const Target *target = nullptr;
  TargetOptions targetOptions;
  /// 0 runs no optimization; 1..3 run the graph cleanup (and, as they land,
  /// fusion, rematerialization and memory planning).
  int optLevel = 2;
  /// Stop after this phase.
  Phase compileTo = Phase::Graph;
  /// When set ("adamw" or "sgd"), the graph phase first differentiates the
  /// `loss` entry (tfc-autodiff) and builds `train_step` (tfc-train-step).
  std::string optimizer;
  /// > 0 with an optimizer: average the gradients over this many
  /// data-parallel processes (tfc-data-parallel) and record it in the
  /// artifact; 0: one process, no collectives.
  int64_t dataParallel = 0;
  /// 1 with dataParallel: ZeRO-1, the optimizer state sharded over the ranks
  /// (tfc-zero-shard); 0: every rank holds all of it.
  int64_t zero = 0;
  /// Tensor-parallel ranks (tfc-tensor-parallel, before autodiff; recorded
  /// in the artifact); 0: none.
  int64_t tensorParallel = 0;
  /// With an optimizer: micro-batches a train_step accumulates the gradients
  /// of (tfc-microbatch, before autodiff); 1: none.
  int64_t microbatches = 1;
  /// With an optimizer: pipeline stages (tfc-pipeline-stages before autodiff,
  /// tfc-pipeline-split after train-step); 0: none. `ppSchedule`: 1f1b or
  /// gpipe.
  int64_t pipelineParallel = 0;
  std::string ppSchedule = "1f1b";
  /// Expert parallel over this many ranks (tfc-expert-parallel after
  /// train-step; the driver also sets dataParallel to it); 0: none.
  int64_t expertParallel = 0;
  /// With dataParallel: gradient bucket size in MB (tfc-data-parallel's
  /// bucket-mb: 0 one collective per gradient, < 0 blocking all-reduces)
  /// and whether a bucket's wait is deferred to the end of the backward.
  double dpBucketMb = 25.0;
  bool dpOverlap = true;
  /// "bf16" or "f16": without `optimizer`, the graph phase first converts
  /// parameters, state and the entries using them to it
  /// (tfc-convert-precision); with it, mixed-precision training: the loss
  /// entries' matmuls and attention in it, f32 master weights
  /// (tfc-autocast, before tfc-autodiff). "f32": nothing.
  std::string precision = "f32";
  /// f16 training: the initial dynamic loss scale (tfc-autocast init-scale).
  double lossScale = 65536.0;
  /// Parameters excluded from weight decay (names or `prefix*`).
  std::vector<std::string> noDecay;
  /// The -O2 graph optimizations, each switchable (--no-fuse, ...).
  bool fuse = true;
  bool remat = true;
  bool schedule = true;
  /// tfc-remat's memory-budget: bytes of saved activations (0: none).
  int64_t rematBudget = 0;
};

/// Adds the passes of the phases in [from, to] (and not past
/// `options.compileTo`).
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options,
                   Phase from = Phase::Input, Phase to = Phase::Llvm);

/// A human-readable list of phases and their passes, for `tfc --help`.
void describePipeline(llvm::raw_ostream &os);

} // namespace tfc

#endif // TFC_COMPILER_PIPELINE_H
