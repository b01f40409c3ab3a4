//===- EmitKernels.cpp - the tfc-cpu-emit-kernels pass --------------------===//
//
// Kernels of the planned program (their op on tensors, between to_tensor of
// the operand buffers and materialize_in_destination into the result
// buffers) -> CPU code on those buffers, written by the emitter families
// (KernelEmitters.h).
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "codegen/cpu/KernelEmitters.h"
#include "codegen/plan/KernelForm.h"
#include "dialects/tfc/TfcOps.h"

#define DEBUG_TYPE "tfc-cpu-emit-kernels"

namespace tfc::cpu {
#define GEN_PASS_DEF_TFCCPUEMITKERNELS
#include "codegen/cpu/Passes.h.inc"
} // namespace tfc::cpu

using namespace mlir;
using namespace tfc;

LogicalResult cpu::emitHostKernel(func::FuncOp kernel, Operation *tensorOp,
                                  ArrayRef<Value> operands,
                                  ArrayRef<Value> results) {
  // The new code goes before the tensor-level body, which the emitters still
  // read (the op's attributes, regions and types; the module through it), and
  // which is erased afterwards.
  Block &body = kernel.getBody().front();
  SmallVector<Operation *> tensorBody;
  for (Operation &op : body.without_terminator())
    tensorBody.push_back(&op);
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  LogicalResult emitted = success();
  auto kv = llvm::dyn_cast<KvCacheUpdateOp>(tensorOp);
  auto bufferOf = [&](OpOperand &operand) {
    return operands[operand.getOperandNumber()];
  };
  if (kv && kv.getBlocks() &&
      results.front() == bufferOf(kv.getCacheMutable())) {
    // A paged cache, updated in place: the update goes through the table.
    cpu::emitPagedKvWrite(b, tensorOp, bufferOf(kv.getUpdateMutable()),
                          bufferOf(kv.getPositionMutable()),
                          operands[3] /* blocks */, results.front());
  } else if (kv && results.front() == bufferOf(kv.getCacheMutable())) {
    // The cache is updated in place: only the update is written.
    emitted = cpu::emitKvCacheWrite(b, tensorOp->getLoc(),
                                    bufferOf(kv.getUpdateMutable()),
                                    bufferOf(kv.getPositionMutable()),
                                    results.front(), kv.getDim());
  } else {
    emitted = cpu::emitKernelBody(b, tensorOp, operands, results);
  }
  for (Operation *op : llvm::reverse(tensorBody))
    op->erase();
  if (failed(emitted))
    return failure();
  // Private in MLIR becomes internal in LLVM IR (func-to-llvm keeps external
  // linkage otherwise), so that LLVM may inline and specialize kernels.
  kernel->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(kernel.getContext(),
                                         LLVM::Linkage::Internal));
  return success();
}

namespace {

LogicalResult emitKernel(func::FuncOp kernel) {
  FailureOr<std::optional<plan::TensorKernel>> read =
      plan::readTensorKernel(kernel);
  if (failed(read))
    return failure();
  if (!*read)
    return success(); // Already CPU code.
  plan::TensorKernel &k = **read;
  return cpu::emitHostKernel(kernel, k.op, k.operands, k.results);
}

struct EmitKernelsPass
    : public tfc::cpu::impl::TfcCpuEmitKernelsBase<EmitKernelsPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> kernels =
        plan::kernelsWithBodies(getOperation());
    for (func::FuncOp kernel : kernels)
      if (failed(emitKernel(kernel)))
        return signalPassFailure();
  }
};

} // namespace
