// Pieces shared by `tfc-run train` and `tfc-seed-experiment`: the hyper-parameter
// options (tfc::HyperParams), the optimizer's options, and progress formatting.
#ifndef TFC_TOOLS_TFC_RUN_TRAIN_COMMON_HPP_
#define TFC_TOOLS_TFC_RUN_TRAIN_COMMON_HPP_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/train_step.hpp"

namespace tfc::run {

// The options both commands accept for HyperParams, for their OptionSpec lists.
std::vector<OptionSpec> hyperParamOptions();
// The --help lines for them (defaults shown are |defaults|').
std::string hyperParamHelp(const HyperParams& defaults);
// Reads the hyper-parameter options of |args| over |params|. On a usage error prints it
// and returns false.
bool parseHyperParams(const Command* command, const Args& args, HyperParams* params);
// Refuses options of |args| that do not apply to |trainStep|'s optimizer (--momentum for
// AdamW; --beta1, --beta2, --eps for SGD), naming the model |path|.
Status checkOptimizerOptions(const TrainStep& trainStep, const Args& args, const std::string& path);

// The "model" field of the artifact's metadata ("" when absent).
std::string modelName(const Artifact& artifact);

// "1h02m", "3m05s", "12s".
std::string formatDuration(double seconds);
// "812", "12.3k", "1.20M".
std::string formatRate(double perSecond);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_TRAIN_COMMON_HPP_
