//===- DataMovementKernels.cpp - gathers, slices, caches, transposes ------===//
#include "codegen/cpu/KernelEmitters.h"

using namespace mlir;

namespace tfc::cpu {

FailureOr<bool> emitDataMovementKernel(OpBuilder &, Operation *, ValueRange,
                                       ValueRange) {
  return failure();
}

LogicalResult emitKvCacheWrite(OpBuilder &, Location loc, Value, Value, Value,
                               int64_t) {
  return emitError(loc, "CPU codegen: kv_cache_update is not lowered yet");
}

} // namespace tfc::cpu
