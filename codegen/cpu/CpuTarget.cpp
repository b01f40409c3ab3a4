//===- CpuTarget.cpp - the CPU target -------------------------------------===//
//
// What the CPU backend tells the target-neutral compiler: its kernels (the
// emitter families and the hand-written kernel library) and the rules they
// obey, and the passes it contributes (tfc-cpu-emit-kernels; MLIR -> the
// LLVM dialect).
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/CpuTarget.h"

#include "codegen/cpu/Passes.h"
#include "codegen/target/Target.h"
#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace tfc::cpu {
namespace {

class CpuTarget final : public Target {
public:
  llvm::StringRef name() const override { return "cpu"; }
  llvm::StringRef description() const override {
    return "the host CPU: MLIR -> LLVM kernels and the hand-written kernel "
           "library, threaded by the runtime";
  }

  int64_t arenaAlignment() const override { return TFC_ARENA_ALIGNMENT; }

  bool supportsFusedKind(llvm::StringRef kind) const override {
    return llvm::StringSwitch<bool>(kind)
        .Cases("pointwise", "reduction", "row", "linear", "attention", true)
        .Default(false);
  }

  bool supportsLinearEpilogue(Operation *op, Type elementType) const override {
    // tfc_k_linear_ex_f32: gelu (tanh), relu, silu, leaky relu, then a
    // residual add, applied to each output tile in cache; 16-bit floats are
    // widened around the call (LibraryKernels.cpp), the epilogue computed in
    // f32.
    if (!llvm::isa<FloatType>(elementType))
      return false;
    if (auto gelu = llvm::dyn_cast<GeluOp>(op))
      return gelu.getApproximate() == GeluApproximation::Tanh;
    return llvm::isa<ReluOp, SiluOp, LeakyReluOp, AddOp>(op);
  }

  /// An embedding_grad's result over `init` is `init` plus the scattered
  /// rows (DataMovementKernels.cpp skips the copy when they share bytes).
  /// Only `init` may be the operand it takes: `grad`, read after the result
  /// is written, must not have the result's shape (ids of length V).
  static bool scattersOntoInit(Operation *op) {
    auto e = llvm::dyn_cast<EmbeddingGradOp>(op);
    return e && e.getInit() &&
           e.getGrad().getType().getShape() != e.getType().getShape();
  }

  bool mayWriteOverOperand(Operation *op) const override {
    bool readsBeforeWriting =
        isElementwise(op) ||
        // One linalg.generic loading every operand before it stores the
        // results (FusedKernels.cpp).
        (llvm::isa<FusedOp>(op) &&
         llvm::cast<FusedOp>(op).getKind() == "pointwise") ||
        // Reads a whole row of logits (max, sum) before it writes that row,
        // element j after reading element j (RowKernels.cpp): the logits'
        // bytes, the largest buffer of a language model's step, take their
        // gradient.
        llvm::isa<CrossEntropyGradOp>(op) || scattersOntoInit(op);
    // Reads nothing of its operands (the pending buffers of the start): it
    // copies the runtime's reduced flat buffer into its results, which may
    // then take the operands' bytes (no second copy of the bucket).
    if (llvm::isa<AllReduceWaitOp>(op))
      return true;
    return readsBeforeWriting && hasOperandLikeResult(op);
  }

  void buildCodegenPipeline(OpPassManager &pm,
                            const TargetOptions &) const override {
    pm.addPass(createTfcCpuEmitKernels());
    pm.addPass(createTfcCpuKernelTimers());
  }

  void buildLowerToLLVMPipeline(OpPassManager &pm,
                                const TargetOptions &options) const override {
    cpu::buildLowerToLLVMPipeline(pm, options.parallelMinWork);
  }
};

} // namespace

void registerCpuTarget() { registerTarget(std::make_unique<CpuTarget>()); }

} // namespace tfc::cpu
