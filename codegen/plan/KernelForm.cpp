//===- KernelForm.cpp - reading a kernel of the planned program -----------===//
#include "codegen/plan/KernelForm.h"

#include "dialects/tfc/AttrNames.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

using namespace mlir;

namespace tfc::plan {

SmallVector<func::FuncOp> kernelsWithBodies(ModuleOp module) {
  SmallVector<func::FuncOp> kernels;
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr(attr::kKernel) && !f.isExternal())
      kernels.push_back(f);
  return kernels;
}

FailureOr<std::optional<TensorKernel>> readTensorKernel(func::FuncOp kernel) {
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
      return kernel.emitError("kernel @")
             << kernel.getName() << " computes more than one op";
    k.op = &op;
  }
  if (!k.op)
    return kernel.emitError("kernel @")
           << kernel.getName() << " computes nothing";
  for (Value v : k.op->getOperands()) {
    auto read = v.getDefiningOp<bufferization::ToTensorOp>();
    if (!read)
      return k.op->emitError("an operand of kernel @")
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
      return k.op->emitError("a result of kernel @")
             << kernel.getName() << " is not written to exactly one buffer";
    k.results.push_back(write.getDest());
  }
  return std::optional<TensorKernel>(std::move(k));
}

} // namespace tfc::plan
