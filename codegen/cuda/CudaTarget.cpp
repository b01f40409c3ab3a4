//===- CudaTarget.cpp - the CUDA target -----------------------------------===//
//
// What the CUDA backend tells the target-neutral compiler, and the passes it
// adds: tfc-cuda-emit-kernels (CUDA C++ per kernel), tfc-cuda-compile-kernels
// (NVRTC: one cubin and PTX for the artifact) and, after the entries are
// lowered to the LLVM dialect as host code, tfc-cuda-launch-kernels (kernel
// calls become launches through the runtime).
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Passes.h"

#include "codegen/target/HostToLLVM.h"
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
    return "NVIDIA GPUs: CUDA C++ kernels compiled by NVRTC (--cuda-arch), "
           "launched by the runtime through the CUDA driver";
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

  void buildCodegenPipeline(OpPassManager &pm,
                            const TargetOptions &options) const override {
    TfcCudaEmitKernelsOptions emit;
    emit.tf32 = options.cudaTf32;
    pm.addPass(createTfcCudaEmitKernels(emit));
    TfcCudaCompileKernelsOptions compile;
    compile.arch = options.cudaArch;
    compile.dumpDir = options.dumpDir;
    pm.addPass(createTfcCudaCompileKernels(compile));
  }

  void buildLowerToLLVMPipeline(OpPassManager &pm,
                                const TargetOptions &) const override {
    // Entries are host code on device addresses: views of the arena are
    // pointer arithmetic, kernels bare-pointer calls that
    // tfc-cuda-launch-kernels turns into launches.
    HostToLLVMSteps steps;
    steps.onLLVM = [](OpPassManager &pm) {
      pm.addPass(createTfcCudaLaunchKernels());
    };
    buildHostToLLVMPipeline(pm, steps);
  }
};

} // namespace

void registerCudaTarget() { registerTarget(std::make_unique<CudaTarget>()); }

} // namespace tfc::cuda
