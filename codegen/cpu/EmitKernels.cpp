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
#include "dialects/tfc/AttrNames.h"
#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

#define DEBUG_TYPE "tfc-cpu-emit-kernels"

namespace tfc::cpu {
#define GEN_PASS_DEF_TFCCPUEMITKERNELS
#include "codegen/cpu/Passes.h.inc"
} // namespace tfc::cpu

using namespace mlir;
using namespace tfc;

namespace {

/// A kernel as tfc-lower-to-kernels writes it: one op, the buffers its
/// operands are read from and the buffers its results go to.
struct TensorKernel {
  Operation *op = nullptr;
  SmallVector<Value> operands, results;
};

/// Reads the tensor-level body of `kernel`; fails with a message naming the
/// kernel when the body is not of that form. Returns std::nullopt for a
/// kernel that already has code (nothing to do).
FailureOr<std::optional<TensorKernel>> readKernel(func::FuncOp kernel) {
  Block &body = kernel.getBody().front();
  if (body.getOps<bufferization::ToTensorOp>().empty() &&
      body.getOps<bufferization::MaterializeInDestinationOp>().empty())
    return std::optional<TensorKernel>();
  TensorKernel k;
  for (Operation &op : body.without_terminator()) {
    if (llvm::isa<bufferization::ToTensorOp,
                  bufferization::MaterializeInDestinationOp>(op))
      continue;
    if (k.op)
      return kernel.emitError("tfc-cpu-emit-kernels: kernel @")
             << kernel.getName() << " computes more than one op";
    k.op = &op;
  }
  if (!k.op)
    return kernel.emitError("tfc-cpu-emit-kernels: kernel @")
           << kernel.getName() << " computes nothing";
  for (Value v : k.op->getOperands()) {
    auto read = v.getDefiningOp<bufferization::ToTensorOp>();
    if (!read)
      return k.op->emitError("tfc-cpu-emit-kernels: an operand of kernel @")
             << kernel.getName() << " is not read from a buffer";
    k.operands.push_back(read.getMemref());
  }
  for (Value r : k.op->getResults()) {
    bufferization::MaterializeInDestinationOp write;
    for (Operation *user : r.getUsers())
      if (auto m = llvm::dyn_cast<bufferization::MaterializeInDestinationOp>(
              user))
        write = m;
    if (!write || !r.hasOneUse())
      return k.op->emitError("tfc-cpu-emit-kernels: a result of kernel @")
             << kernel.getName() << " is not written to exactly one buffer";
    k.results.push_back(write.getDest());
  }
  return std::optional<TensorKernel>(std::move(k));
}

LogicalResult emitKernel(func::FuncOp kernel) {
  FailureOr<std::optional<TensorKernel>> read = readKernel(kernel);
  if (failed(read))
    return failure();
  if (!*read)
    return success(); // Already CPU code.
  TensorKernel &k = **read;
  // The new code goes before the tensor-level body, which the emitters still
  // read (the op's attributes, regions and types; the module through it), and
  // which is erased afterwards.
  Block &body = kernel.getBody().front();
  SmallVector<Operation *> tensorBody;
  for (Operation &op : body.without_terminator())
    tensorBody.push_back(&op);
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  LogicalResult emitted = success();
  auto kv = llvm::dyn_cast<KvCacheUpdateOp>(k.op);
  auto bufferOf = [&](OpOperand &operand) {
    return k.operands[operand.getOperandNumber()];
  };
  if (kv && k.results.front() == bufferOf(kv.getCacheMutable())) {
    // The cache is updated in place: only the update is written.
    emitted = cpu::emitKvCacheWrite(b, k.op->getLoc(),
                                    bufferOf(kv.getUpdateMutable()),
                                    bufferOf(kv.getPositionMutable()),
                                    k.results.front(), kv.getDim());
  } else {
    emitted = cpu::emitKernelBody(b, k.op, k.operands, k.results);
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

struct EmitKernelsPass
    : public tfc::cpu::impl::TfcCpuEmitKernelsBase<EmitKernelsPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> kernels;
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr(attr::kKernel) && !f.isExternal())
        kernels.push_back(f);
    for (func::FuncOp kernel : kernels)
      if (failed(emitKernel(kernel)))
        return signalPassFailure();
  }
};

} // namespace
