//===- CudaTarget.cpp - the CUDA target -----------------------------------===//
//
// What the CUDA backend tells the target-neutral compiler, and the passes it
// adds: tfc-cuda-emit-kernels (CUDA C++ per kernel) and
// tfc-cuda-compile-kernels (NVRTC). The host side of a CUDA artifact (kernel
// launches from the entries, the runtime's driver-API executor) is not built
// yet, so this target stops at the codegen phase and says so.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Passes.h"

#include "codegen/target/Target.h"
#include "dialects/tfc/TfcOps.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace tfc::cuda {
namespace {

class CudaTarget final : public Target {
public:
  llvm::StringRef name() const override { return "cuda"; }
  llvm::StringRef description() const override {
    return "NVIDIA GPUs: CUDA C++ kernels compiled by NVRTC (--cuda-arch); "
           "kernels only so far, no artifact yet";
  }

  /// cudaMalloc's alignment, and enough for 128-bit vector loads of any
  /// buffer.
  int64_t arenaAlignment() const override { return 256; }

  bool supportsFusedKind(llvm::StringRef kind) const override {
    return kind == "pointwise";
  }

  bool supportsLinearEpilogue(Operation *, Type) const override {
    return false;
  }

  bool mayWriteOverOperand(Operation *op) const override {
    // Each thread reads its operand elements, then writes its result
    // element at the same index (CudaSource.cpp, pointwise family).
    bool pointwise = isElementwise(op) ||
                     (llvm::isa<FusedOp>(op) &&
                      llvm::cast<FusedOp>(op).getKind() == "pointwise");
    return pointwise && hasOperandLikeResult(op);
  }

  std::string checkOptions(const TargetOptions &options) const override {
    if (isSupportedArchitecture(options.cudaArch))
      return {};
    return "unknown --cuda-arch='" + options.cudaArch + "' (expected one of " +
           supportedArchitectures().str() + ")";
  }

  std::string artifactUnavailable() const override {
    return "the CUDA target writes and compiles kernels (--compile-to="
           "codegen) but cannot build an artifact yet: the host launch code "
           "and the runtime's CUDA executor are not written";
  }

  void buildCodegenPipeline(OpPassManager &pm,
                            const TargetOptions &options) const override {
    pm.addPass(createTfcCudaEmitKernels());
    TfcCudaCompileKernelsOptions compile;
    compile.arch = options.cudaArch;
    compile.dumpDir = options.dumpDir;
    pm.addPass(createTfcCudaCompileKernels(compile));
  }

  void buildLowerToLLVMPipeline(OpPassManager &,
                                const TargetOptions &) const override {}
};

} // namespace

void registerCudaTarget() { registerTarget(std::make_unique<CudaTarget>()); }

} // namespace tfc::cuda
