//===- CostModel.h - FLOPs and bytes of tfc ops -----------------*- C++ -*-===//
//
// The first-principles cost of running an op as one kernel: the arithmetic it
// does (FLOPs) and the bytes it must move between memory and the core (every
// operand read once, every result written once; a gather reads only the rows
// it gathers). Fusion, rematerialization and the --report all count with this
// one model, so that their numbers agree. It is an estimate at tensor
// granularity, not a simulation of caches: see docs/performance.md.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_PASSES_COSTMODEL_H
#define TFC_PASSES_COSTMODEL_H

#include <cstdint>

namespace mlir {
class Operation;
class Type;
} // namespace mlir

namespace tfc {

struct OpCost {
  int64_t flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  /// Bytes one rank sends over the link between processes (collectives
  /// only): a ring all-reduce of B bytes over n ranks sends 2 (n-1)/n B.
  int64_t linkBytes = 0;

  int64_t bytes() const { return bytesRead + bytesWritten; }
  OpCost &operator+=(const OpCost &o) {
    flops += o.flops;
    bytesRead += o.bytesRead;
    bytesWritten += o.bytesWritten;
    linkBytes += o.linkBytes;
    return *this;
  }
};

/// Bytes of a ranked tensor or memref type (i1 counts one byte); 0 otherwise.
int64_t tensorBytes(mlir::Type type);

/// The cost of `op` run as its own kernel. Ops that move no data at run time
/// (tfc.load, tfc.store, tfc.constant, tfc.reshape, tfc.param, tfc.state)
/// cost nothing. A tfc.fused op reads its operands and writes its results
/// once and does the arithmetic of its body.
OpCost estimateCost(mlir::Operation *op);

/// Only the arithmetic of `op` (what estimateCost(op).flops is).
int64_t estimateFlops(mlir::Operation *op);

/// Ops whose time is set by arithmetic, not memory: matmul, linear,
/// attention and its gradient (and fused groups built around them). They are
/// never recomputed unless a memory budget asks for it, and their bytes are
/// reported apart from the memory-bound rest.
bool isComputeBound(mlir::Operation *op);

/// Ops that produce no kernel: their results are views, symbols or
/// constants.
bool isFreeOp(mlir::Operation *op);

} // namespace tfc

#endif // TFC_PASSES_COSTMODEL_H
