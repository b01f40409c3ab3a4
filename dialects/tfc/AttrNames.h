//===- AttrNames.h - discardable attribute names tfc stages share -*- C++ -*-===//
//
// Every `tfc.*` discardable attribute that more than one stage reads or
// writes (frontend, graph passes, the planned program, codegen, the report,
// the artifact writer) is named here once. Spelling one of these as a string
// literal anywhere else is a bug waiting to happen: a typo is a silently
// missing attribute.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_DIALECTS_TFC_ATTRNAMES_H
#define TFC_DIALECTS_TFC_ATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace tfc::attr {

//===----------------------------------------------------------------------===//
// Graph level (frontend, tfc-autodiff, tfc-train-step)
//===----------------------------------------------------------------------===//

/// On an entry's argument or result: the name tools show and bind by.
constexpr llvm::StringLiteral kName = "tfc.name";
/// On a result of a `*_grad` entry: the parameter it is the gradient of.
constexpr llvm::StringLiteral kGradOf = "tfc.grad_of";
/// On the module: free-form JSON (model and config) copied into the artifact.
constexpr llvm::StringLiteral kMetadata = "tfc.metadata";
/// On a result of a `*_grad` entry (tfc-zero-shard): {group, size}; the
/// result is the rank's block of the flattened gradient, padded to a
/// multiple of size, and tfc-train-step updates that block only.
constexpr llvm::StringLiteral kZeroShard = "tfc.zero_shard";
/// On a tfc.param, set by the model library: how Megatron-LM's tensor
/// parallelism splits it, "column" (a linear's output features) or "row" (its
/// input features); tfc-tensor-parallel reads it, nothing else does.
constexpr llvm::StringLiteral kShard = "tfc.shard";
/// With kShard "column": the output is this many equal blocks split alike
/// (GPT-2's fused [Q | K | V]); absent: one.
constexpr llvm::StringLiteral kShardBlocks = "tfc.shard_blocks";
/// Set by tfc-tensor-parallel on each tfc.param it split: the axis of the
/// full tensor that ranks split (i64); with kShardBlocks and kShardRanks.
constexpr llvm::StringLiteral kShardAxis = "tfc.shard_axis";
/// With kShardAxis: the number of ranks that split it (the group "tp").
constexpr llvm::StringLiteral kShardRanks = "tfc.shard_ranks";

/// On an op: a running sum over micro-batches (tfc-microbatch). tfc-fuse
/// never joins it into a later consumer, which would keep every addend alive
/// until that consumer instead of one accumulator.
constexpr llvm::StringLiteral kAccumulator = "tfc.accumulator";

/// Pipeline parallelism: on an op of the loss entry, the stage that runs it
/// (tfc-pipeline-stages; ops without one are computed on every stage that
/// needs them); tfc-autodiff gives the ops of its VJP the same stage and
/// kBackward, tfc-microbatch each clone its micro-batch (kMicrobatch), by
/// which tfc-pipeline-split orders each stage's program.
constexpr llvm::StringLiteral kStage = "tfc.stage";
constexpr llvm::StringLiteral kBackward = "tfc.backward";
constexpr llvm::StringLiteral kMicrobatch = "tfc.microbatch";

/// Expert parallelism: on a collective of a rank's entry, its place in the
/// program (tfc-expert-parallel), which keeps CSE from merging two of them.
constexpr llvm::StringLiteral kCollectiveIndex = "tfc.collective_index";

/// On an entry: what tfc-fuse, tfc-remat and tfc-schedule decided (for
/// --report); carried from the graph function to the planned entry.
constexpr llvm::StringLiteral kFusion = "tfc.fusion";
constexpr llvm::StringLiteral kRemat = "tfc.remat";
constexpr llvm::StringLiteral kSchedule = "tfc.schedule";

/// Module state of f16 mixed-precision training (tfc-autocast declares it,
/// tfc-autodiff seeds the backward with the scale and unscales the
/// gradients, tfc-train-step skips overflowed steps and updates both): the
/// dynamic loss scale (0-d f32) and the steps since it last changed.
constexpr llvm::StringLiteral kLossScaleState = "amp.loss_scale";
constexpr llvm::StringLiteral kGoodStepsState = "amp.good_steps";

//===----------------------------------------------------------------------===//
// The planned program (tfc-lower-to-kernels, tfc-plan-memory, targets)
//===----------------------------------------------------------------------===//

/// On the module: the target the planned program was lowered for ("cpu").
constexpr llvm::StringLiteral kTarget = "tfc.target";
/// On a planned entry function: the entry's name in the artifact.
constexpr llvm::StringLiteral kEntry = "tfc.entry";
/// On a kernel function (private, called by entries).
constexpr llvm::StringLiteral kKernel = "tfc.kernel";
/// On an entry's argument: its role and index in the artifact's tables.
constexpr llvm::StringLiteral kParamIndex = "tfc.param_index";
constexpr llvm::StringLiteral kStateIndex = "tfc.state_index";
constexpr llvm::StringLiteral kInputIndex = "tfc.input_index";
constexpr llvm::StringLiteral kOutputIndex = "tfc.output_index";
constexpr llvm::StringLiteral kArena = "tfc.arena";
/// On a kernel call: a result may take the bytes of an operand of its shape
/// and element size that dies at the call.
constexpr llvm::StringLiteral kInPlaceOk = "tfc.in_place_ok";

/// On a planned entry: the arena, every intermediate's bytes added up, and
/// the most bytes live at once (a lower bound for any placement).
constexpr llvm::StringLiteral kArenaBytes = "tfc.arena_bytes";
constexpr llvm::StringLiteral kIntermediateBytes = "tfc.intermediate_bytes";
constexpr llvm::StringLiteral kLiveBoundBytes = "tfc.live_bound_bytes";
/// On a planned entry: what its kernels do by the cost model.
constexpr llvm::StringLiteral kNumKernels = "tfc.num_kernels";
constexpr llvm::StringLiteral kFlops = "tfc.flops";
constexpr llvm::StringLiteral kBytesRead = "tfc.bytes_read";
constexpr llvm::StringLiteral kBytesWritten = "tfc.bytes_written";
constexpr llvm::StringLiteral kComputeBoundBytes = "tfc.compute_bound_bytes";
/// On a planned entry: bytes one rank sends to others per call (collectives).
constexpr llvm::StringLiteral kLinkBytes = "tfc.link_bytes";
constexpr llvm::StringLiteral kCostByKernel = "tfc.cost_by_kernel";
/// On a kernel function: one launch's cost by the cost model, as
/// array<i64: flops, bytes_read, bytes_written>, and the graph ops it
/// computes ("fused.linear: linear, add, gelu"), for the artifact's per-kernel
/// table (profiles).
constexpr llvm::StringLiteral kKernelCost = "tfc.kernel_cost";
constexpr llvm::StringLiteral kKernelOps = "tfc.kernel_ops";

/// A device target's compiled kernels, for the artifact's device fields
/// (tfc_artifact_t.device_*), set by the target's codegen: on the module, the
/// device ("cuda"), the architecture ("sm_90"), the kernels' names in launch
/// index order, their machine code (bytes) and their portable form (PTX
/// text); on each device kernel, its launch index.
constexpr llvm::StringLiteral kDevice = "tfc.device";
constexpr llvm::StringLiteral kDeviceArch = "tfc.device_arch";
constexpr llvm::StringLiteral kDeviceKernels = "tfc.device_kernels";
constexpr llvm::StringLiteral kDeviceImage = "tfc.device_image";
constexpr llvm::StringLiteral kDevicePortable = "tfc.device_portable";
constexpr llvm::StringLiteral kDeviceKernelIndex = "tfc.device_kernel_index";

} // namespace tfc::attr

#endif // TFC_DIALECTS_TFC_ATTRNAMES_H
