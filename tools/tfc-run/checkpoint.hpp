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

// Reads the parameters of |path| into |params| for inference (call, generate, export):
// plain weights, or a training checkpoint of this model, whose state tensors ("state.*":
// optimizer moments, the step) are skipped with a one-line note on stderr. A checkpoint of
// another model is refused naming both module hashes. Any other tensor that is not a
// parameter is refused (naming it) unless |allowUnexpected|.
Status loadParameters(const std::string& path, const Artifact& artifact, Params& params,
                      bool allowUnexpected);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_CHECKPOINT_HPP_
