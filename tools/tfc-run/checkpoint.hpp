// Loading weights for inference commands (call, generate, export), which accept a training
// checkpoint (tfc/runtime/checkpoint.hpp) in place of plain weights.
#ifndef TFC_TOOLS_TFC_RUN_CHECKPOINT_HPP_
#define TFC_TOOLS_TFC_RUN_CHECKPOINT_HPP_

#include <map>
#include <string>

#include "tfc/runtime/checkpoint.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc::run {

// Where loaded weights live. Copied (the default of every command): in the process's own
// memory, whose large buffers the runtime puts on transparent huge pages, so that decode,
// which streams every weight once a token, reads them faster (gpt2-124m, 2 threads: 28-32
// tokens/s mapped, 36-39 copied; docs/performance.md). Mapped (`--mmap`): the weights stay
// a copy-on-write mapping of the file, in 4 KiB pages of the page cache that processes
// loading the same file share, and are read in on first use. Both peak at about the
// weights' size: a copy releases the file's pages piece by piece as it goes.
enum class WeightsMemory { kCopied, kMapped };

// Reads the parameters of |path| into |params| for inference (call, generate, export):
// plain weights, or a training checkpoint of this model, whose state tensors ("state.*":
// optimizer moments, the step) are skipped with a one-line note on stderr. A checkpoint of
// another model is refused naming both module hashes. Any other tensor that is not a
// parameter is refused (naming it) unless |allowUnexpected|. A Hugging Face checkpoint
// (isPretrainedCheckpoint) is loaded by loadPretrainedWeights instead.
Status loadParameters(const std::string& path, const Artifact& artifact, Params& params,
                      bool allowUnexpected, WeightsMemory memory = WeightsMemory::kCopied);

// True if |path| is a directory or an index (*.json): a Hugging Face checkpoint as
// save_pretrained writes it, rather than one .safetensors file.
bool isPretrainedCheckpoint(const std::string& path);

// Loads the Hugging Face checkpoint at |path| (Params::loadPretrained: shards, converted
// dtypes, a dropped "transformer."-like prefix, buffers skipped) and notes on stderr, one
// line each, the tensors skipped (how many, the first few names) and the dtype conversions
// ("converted 147 tensors bf16 -> f32").
Status loadPretrainedWeights(const std::string& path, Params& params,
                             WeightsMemory memory = WeightsMemory::kCopied);

// --weights for every command: loadPretrainedWeights for a Hugging Face checkpoint,
// otherwise Params::loadSafetensors (strict names and dtypes; for train, which takes no
// training checkpoint as --weights).
Status loadWeights(const std::string& path, Params& params,
                   WeightsMemory memory = WeightsMemory::kCopied);

// The parameters of |artifact| from |weights| (loadParameters; none when empty) and a
// context on |threads| threads (0: all cores) and, for a CUDA artifact, GPU |device|: what
// generate and serve run on.
StatusOr<Context> openInferenceContext(const Artifact& artifact, const std::string& weights,
                                       bool allowUnexpected, WeightsMemory memory,
                                       int64_t threads, int32_t device);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_CHECKPOINT_HPP_
