// --weights for every command: the runtime's weights loader (tfc/runtime/weights.hpp), its
// notes on stderr.
#ifndef TFC_TOOLS_TFC_RUN_WEIGHTS_HPP_
#define TFC_TOOLS_TFC_RUN_WEIGHTS_HPP_

#include <string>

#include "cli.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/weights.hpp"

namespace tfc::run {

// What inference commands (call, generate, serve, export, profile) load: plain weights, a
// training checkpoint of this model or a Hugging Face checkpoint, with --allow-unexpected and
// --mmap where the command has them.
WeightsLoadOptions inferenceWeightsOptions(const Args& args);
// What train (and tfc-seed-experiment) load as --weights: no training checkpoint (--resume
// continues one), no unexpected tensors.
WeightsLoadOptions trainingWeightsOptions();

// tfc::loadWeights, each note printed as a line "PROGRAM: NOTE" on stderr (programName()).
Status loadWeightsNoting(const std::string& path, Params& params,
                         const WeightsLoadOptions& options = {});

// The parameters of |artifact| from |weights| (loadWeightsNoting; none when empty) and a
// context on |threads| threads (0: all cores) and, for a CUDA artifact, GPU |device|: what
// generate and serve run on.
StatusOr<Context> openInferenceContext(const Artifact& artifact, const std::string& weights,
                                       const WeightsLoadOptions& options, int64_t threads,
                                       int32_t device);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_WEIGHTS_HPP_
