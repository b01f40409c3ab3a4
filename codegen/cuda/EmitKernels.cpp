//===- EmitKernels.cpp - the tfc-cuda-emit-kernels pass -------------------===//
//
// Kernels of the planned program -> CUDA C++ (CudaSource.cpp) kept on each
// kernel, which becomes a declaration that the host launches. Collectives
// stay host code (the CPU target's call into the communicator).
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Passes.h"

#include "codegen/cuda/CudaAttrs.h"
#include "codegen/cuda/CudaSource.h"
#include "codegen/cpu/KernelEmitters.h"
#include "codegen/plan/KernelForm.h"
#include "dialects/tfc/TfcOps.h"

#define DEBUG_TYPE "tfc-cuda-emit-kernels"

namespace tfc::cuda {
#define GEN_PASS_DEF_TFCCUDAEMITKERNELS
#include "codegen/cuda/Passes.h.inc"
} // namespace tfc::cuda

using namespace mlir;
using namespace tfc;

namespace {

SmallVector<MemRefType> typesOf(ArrayRef<Value> buffers) {
  SmallVector<MemRefType> types;
  for (Value v : buffers)
    types.push_back(llvm::cast<MemRefType>(v.getType()));
  return types;
}

LogicalResult emitKernel(func::FuncOp kernel, const cuda::EmitOptions &options) {
  FailureOr<std::optional<plan::TensorKernel>> read =
      plan::readTensorKernel(kernel);
  if (failed(read))
    return failure();
  if (!*read)
    return success(); // Already CUDA.
  plan::TensorKernel &k = **read;
  // A collective or a pipeline stage's message is a call into the runtime's
  // communicator, made on the host with the buffers' device addresses (the
  // runtime moves the data): its kernel is the CPU target's code and stays a
  // host function.
  if (llvm::isa<AllReduceOp, ReduceScatterOp, AllGatherOp, AllToAllOp, SendOp,
                RecvOp>(k.op))
    return cpu::emitHostKernel(kernel, k.op, k.operands, k.results);
  SmallVector<Value> operands = k.operands;
  if (llvm::isa<KvCacheUpdateOp>(k.op) && k.results.front() == k.operands[0]) {
    // In place: the kernel takes (update, position[, blocks]) and writes the
    // cache.
    operands.erase(operands.begin());
  }
  FailureOr<cuda::KernelSource> source = cuda::emitKernelSource(
      kernel.getName(), k.op, typesOf(operands), typesOf(k.results), options);
  if (failed(source))
    return failure();
  Builder b(kernel.getContext());
  kernel->setAttr(cuda::attr::kSource, b.getStringAttr(source->code));
  kernel->setAttr(cuda::attr::kThreads, b.getI64IntegerAttr(source->threads));
  if (!source->fallback.empty())
    kernel->setAttr(cuda::attr::kFallback, b.getStringAttr(source->fallback));
  if (const auto &shape = source->launch)
    kernel->setAttr(cuda::attr::kLaunch,
                    b.getDenseI64ArrayAttr({shape->grid[0], shape->grid[1],
                                            shape->grid[2], shape->block[0],
                                            shape->block[1], shape->block[2],
                                            shape->sharedBytes}));
  if (const auto &p = source->product)
    kernel->setAttr(cuda::attr::kLibraryProduct,
                    b.getDenseI64ArrayAttr(
                        {p->aType, p->bType, p->cType, p->biasType, p->transA,
                         p->transB, p->tf32, 0, p->batch, p->m, p->n, p->k,
                         p->strideA, p->strideB}));
  // The code is CUDA now: the kernel is a declaration the host launches.
  kernel.getBody().getBlocks().clear();
  return success();
}

struct EmitKernelsPass
    : public tfc::cuda::impl::TfcCudaEmitKernelsBase<EmitKernelsPass> {
  using TfcCudaEmitKernelsBase::TfcCudaEmitKernelsBase;

  void runOnOperation() override {
    cuda::EmitOptions options;
    options.tf32 = tf32;
    SmallVector<func::FuncOp> kernels =
        plan::kernelsWithBodies(getOperation());
    bool ok = true;
    // Every kernel is tried, so that one run names every op not yet
    // supported.
    for (func::FuncOp kernel : kernels)
      ok &= succeeded(emitKernel(kernel, options));
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
