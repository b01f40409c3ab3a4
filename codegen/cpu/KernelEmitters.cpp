//===- KernelEmitters.cpp - dispatch to the emitter families --------------===//
#include "codegen/cpu/KernelEmitters.h"

using namespace mlir;

namespace tfc::cpu {

LogicalResult emitKernelBody(OpBuilder &b, Operation *op, ValueRange operands,
                             ValueRange results) {
  using Family = FailureOr<bool> (*)(OpBuilder &, Operation *, ValueRange,
                                     ValueRange);
  for (Family family : {emitFusedKernel, emitElementwiseKernel, emitLibraryKernel,
                        emitRowKernel, emitDataMovementKernel}) {
    FailureOr<bool> handled = family(b, op, operands, results);
    if (succeeded(handled))
      return success(*handled); // false: the family reported an error.
  }
  return op->emitError("CPU codegen: no kernel for '")
         << op->getName() << "' yet";
}

} // namespace tfc::cpu
