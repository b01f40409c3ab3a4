//===- LiveBytes.h - which values own memory, and how much is live -*- C++ -*-===//
//
// What tfc-remat and tfc-schedule (and the memory report) agree on about the
// memory of an entry: which values need a buffer of their own in the entry's
// arena, which are views of another value's buffer, and how many bytes are
// live at the worst point of a given order of the ops.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_PASSES_LIVEBYTES_H
#define TFC_PASSES_LIVEBYTES_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>

namespace tfc {

/// The value whose buffer `v` uses: a tfc.reshape is a view of its operand,
/// so reshapes are followed to the value that owns the bytes.
mlir::Value storageRoot(mlir::Value v);

/// Values that live whatever the order of the ops and cost the arena
/// nothing: the entry's inputs (block arguments), parameters and state
/// (tfc.load) and constants (stored in the artifact).
bool isResident(mlir::Value v);

/// The bytes `v` adds to the arena: its tensor bytes if it owns its buffer,
/// 0 for views (tfc.reshape) and resident values.
int64_t allocatedBytes(mlir::Value v);

/// The op of `block` that holds `op` (op itself when it is in `block`), so
/// that a use inside a region counts as a use by the op that owns the region.
mlir::Operation *topLevelOp(mlir::Block &block, mlir::Operation *op);

/// Calls `fn` on every value `op` reads: its operands, then the values its
/// regions use from above (a tfc.fused body reads only its operands, but
/// other region ops may capture).
void forEachValueRead(mlir::Operation *op,
                      llvm::function_ref<void(mlir::Value)> fn);

/// Peak live bytes of `block` run in `order` (a topological order of the
/// block's ops without its terminator): the maximum over the ops of the sum
/// of allocatedBytes of the values live there. A buffer is live from the op
/// that defines it to the last op that reads it or a view of it, both
/// included; a buffer returned by the terminator or written by tfc.store
/// lives to the end. `at`, when given, receives the position in `order`
/// where the peak is reached first.
int64_t peakLiveBytes(mlir::Block &block,
                      llvm::ArrayRef<mlir::Operation *> order,
                      int64_t *at = nullptr);

/// The same for the block's current order.
int64_t peakLiveBytes(mlir::Block &block);

} // namespace tfc

#endif // TFC_PASSES_LIVEBYTES_H
