// Training checkpoints: ONE .safetensors file holding every parameter (under its own name),
// every state tensor of the context (optimizer moments, the step counter, ...) under
// "state.<name>", and "__metadata__" with the format, the artifact's module hash and model
// metadata, and whatever the trainer adds (step, sampler position, hyper-parameters).
// Written atomically by the runtime's safetensors writer (temporary file in the same
// folder, fsync, rename): a failed or interrupted save leaves the previous file as it was.
#ifndef TFC_RUNTIME_CHECKPOINT_HPP_
#define TFC_RUNTIME_CHECKPOINT_HPP_

#include <map>
#include <string>

#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc {

// The value of __metadata__["format"] in every training checkpoint.
constexpr const char* kCheckpointFormat = "tfc-train-checkpoint-v1";
// The prefix of state tensors' names in a checkpoint.
constexpr const char* kStatePrefix = "state.";

// Writes |params| and |context|'s state with |metadata| (plus format, module_hash and
// model_metadata, which this function fills) to |path|. State that a ZeRO-1 artifact keeps
// as one block per rank (zeroShardedState) is all-gathered and written whole, in its
// parameter's shape, and so is every tensor a tensor-parallel artifact splits (tp_shards):
// then every rank must call this, and rank 0 alone writes.
Status saveCheckpoint(const std::string& path, const Artifact& artifact, const Params& params,
                      const Context& context, std::map<std::string, std::string> metadata);

// Reads the checkpoint at |path| into |params| and |context|'s state and returns its
// metadata. A sharded state (zeroShardedState) is read from the whole tensor: this rank's
// block of it, so a checkpoint resumes on another number of ranks than wrote it. Refused, with nothing changed: a file that is not a training checkpoint, one
// written for another model (a different module hash: both are named), a missing,
// unexpected or mis-shaped tensor.
StatusOr<std::map<std::string, std::string>> loadCheckpoint(const std::string& path,
                                                            const Artifact& artifact,
                                                            Params& params, Context& context);

// The state a ZeRO-1 artifact (tfc --zero=1) keeps as one block per rank, by state index,
// with the index of the parameter it is a block of (TFC_METADATA_ZERO_SHARDS); empty for
// any other artifact. A corrupt list is INVALID_ARGUMENT.
StatusOr<std::map<int32_t, int32_t>> zeroShardedState(const Artifact& artifact);

// Refuses (FAILED_PRECONDITION) a checkpoint at |path| whose metadata's module hash is not
// |artifact|'s, naming both; |hint| says what to do instead.
Status checkCheckpointModel(const std::string& path,
                            const std::map<std::string, std::string>& metadata,
                            const Artifact& artifact, const char* hint);

}  // namespace tfc

#endif  // TFC_RUNTIME_CHECKPOINT_HPP_
