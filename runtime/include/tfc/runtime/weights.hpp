// Loading a model's weights from whatever a user has at hand, as every inference command of
// tfc-run and Python's Params.load_weights do:
//  - a .safetensors file of its parameters (tfc-run export, Params.save),
//  - a training checkpoint of this model (checkpoint.hpp): its parameters, its state tensors
//    (optimizer moments, the step) skipped,
//  - a Hugging Face checkpoint as save_pretrained writes it (a directory, or an index *.json):
//    Params::loadPretrained, dtypes converted, buffers skipped.
// Nothing is printed: what a user should hear of (tensors skipped, dtypes converted) comes
// back as notes, one line each, for the caller to show.
#ifndef TFC_RUNTIME_WEIGHTS_HPP_
#define TFC_RUNTIME_WEIGHTS_HPP_

#include <string>
#include <vector>

#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc {

// Where loaded weights live. Copied: in the process's own memory, whose large buffers the
// runtime puts on transparent huge pages, so that decode, which streams every weight once a
// token, reads them faster (gpt2-124m, 2 threads: 28-32 tokens/s mapped, 36-39 copied;
// docs/performance.md). Mapped: the weights stay a copy-on-write mapping of the file, in
// 4 KiB pages of the page cache that processes loading the same file share, and are read
// in on first use. Both peak at about the weights' size: a copy releases the file's pages
// piece by piece as it goes.
enum class WeightsMemory { kCopied, kMapped };

struct WeightsLoadOptions {
  WeightsMemory memory = WeightsMemory::kCopied;
  // Take a training checkpoint's parameters (inference). Off (training from weights), a
  // checkpoint's state tensors are refused as tensors that are not parameters.
  bool acceptCheckpoint = true;
  // Ignore (with a note) tensors that are neither parameters nor a checkpoint's state,
  // instead of refusing the file naming them.
  bool allowUnexpected = false;
};

// True if |path| is a directory or an index (*.json): a Hugging Face checkpoint as
// save_pretrained writes it, rather than one .safetensors file.
bool isPretrainedCheckpoint(const std::string& path);

// Loads |params| from |path| (any of the three kinds above) and returns the notes, e.g.
// "PATH is a training checkpoint: taking its 28 parameters, ignoring its 57 state tensors
// (optimizer moments, step)" or "note: PATH: converted 147 tensors bf16 -> f32". Refused,
// with nothing changed: a checkpoint of another model (both module hashes named), a missing,
// mis-shaped or mis-typed parameter, a tensor that is not a parameter (named; unless
// allowUnexpected). A single file refused for its names or dtypes is told it may be a Hugging
// Face checkpoint, which loads from its directory.
StatusOr<std::vector<std::string>> loadWeights(const std::string& path, Params& params,
                                               const WeightsLoadOptions& options = {});

}  // namespace tfc

#endif  // TFC_RUNTIME_WEIGHTS_HPP_
