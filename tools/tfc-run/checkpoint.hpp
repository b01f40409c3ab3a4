// Training checkpoints: ONE .safetensors file holding every parameter (under its own name),
// every state tensor of the context (optimizer moments, the step counter, ...) under
// "state.<name>", and "__metadata__" with the format, the artifact's module hash and model
// metadata, and whatever the trainer adds (step, sampler position, hyper-parameters).
// Written atomically by the runtime's safetensors writer (temporary file in the same
// folder, fsync, rename): a failed or interrupted save leaves the previous file as it was.
#ifndef TFC_TOOLS_TFC_RUN_CHECKPOINT_HPP_
#define TFC_TOOLS_TFC_RUN_CHECKPOINT_HPP_

#include <map>
#include <string>

#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc::run {

// The value of __metadata__["format"] in every checkpoint tfc-run writes.
constexpr const char* kCheckpointFormat = "tfc-train-checkpoint-v1";
// The prefix of state tensors' names in a checkpoint.
constexpr const char* kStatePrefix = "state.";

// Writes |params| and |context|'s state with |metadata| (plus format, module_hash and
// model_metadata, which this function fills) to |path|.
Status saveCheckpoint(const std::string& path, const Artifact& artifact, const Params& params,
                      const Context& context, std::map<std::string, std::string> metadata);

// Reads the checkpoint at |path| into |params| and |context|'s state and returns its
// metadata. Refused, with nothing changed: a file that is not a tfc-run checkpoint, one
// written for another model (a different module hash: both are named), a missing,
// unexpected or mis-shaped tensor.
StatusOr<std::map<std::string, std::string>> loadCheckpoint(const std::string& path,
                                                            const Artifact& artifact,
                                                            Params& params, Context& context);

// Reads the parameters of |path| into |params| for inference (call, generate, export):
// plain weights, or a training checkpoint of this model, whose state tensors ("state.*":
// optimizer moments, the step) are skipped with a one-line note on stderr. A checkpoint of
// another model is refused naming both module hashes. Any other tensor that is not a
// parameter is refused (naming it) unless |allowUnexpected|.
Status loadParameters(const std::string& path, const Artifact& artifact, Params& params,
                      bool allowUnexpected);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_CHECKPOINT_HPP_
