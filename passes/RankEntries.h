//===- RankEntries.h - entries that each run on one rank ------*- C++ -*-===//
//
// tfc-pipeline-split (one entry per stage) and tfc-expert-parallel (one per
// rank holding its share of the experts) replace train_step by entries that
// each rank of a group runs one of. A rank then needs storage only for the
// tensors its entry touches; the runtime reads which from the metadata that
// rankEntryMetadata writes (artifact_abi.h: TFC_METADATA_PP_HELD and
// TFC_METADATA_EP_HELD, with the owners beside them).
//
//===----------------------------------------------------------------------===//
#ifndef TFC_PASSES_RANKENTRIES_H
#define TFC_PASSES_RANKENTRIES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>

namespace tfc {

/// The JSON objects {"<tensor>": rank} (owners) and {"<tensor>": [ranks]}
/// (holders) of `entries`, entry i running on rank i of the group. Each
/// entry's trivially dead ops (its copies of loads none of its ops reads)
/// are dropped first. A parameter or state of `module` that some entry does
/// not load or store is held by the ranks whose entries do; one that no entry
/// touches (the KV cache of dropped generation entries) by rank 0, so that
/// checkpoints hold every tensor. `owner` (the tensors whose current value
/// lives on one rank) gains such a tensor's first holder where it names none.
struct RankEntryMetadata {
  std::string owners, held;
};
RankEntryMetadata rankEntryMetadata(mlir::ModuleOp module,
                                    llvm::ArrayRef<mlir::func::FuncOp> entries,
                                    std::map<std::string, int64_t> owner);

} // namespace tfc

#endif // TFC_PASSES_RANKENTRIES_H
