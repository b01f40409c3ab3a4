#include "train_common.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace tfc::run {

std::vector<OptionSpec> hyperParamOptions() {
  return {{"--lr", nullptr, true, false},           {"--min-lr", nullptr, true, false},
          {"--warmup", nullptr, true, false},       {"--schedule", nullptr, true, false},
          {"--weight-decay", nullptr, true, false}, {"--grad-clip", nullptr, true, false},
          {"--beta1", nullptr, true, false},        {"--beta2", nullptr, true, false},
          {"--eps", nullptr, true, false},          {"--momentum", nullptr, true, false}};
}

std::string hyperParamHelp(const HyperParams& d) {
  return fmt::format(
      "  --lr X              peak learning rate (default {:g})\n"
      "  --min-lr X          learning rate at the end of the decay (default {:g})\n"
      "  --warmup N          linear warm-up steps (default {:g})\n"
      "  --schedule S        constant | linear (warm-up, then linear decay to\n"
      "                      --min-lr at the last step) | cosine (warm-up, then\n"
      "                      cosine decay) (default {})\n"
      "  --weight-decay X    decoupled weight decay of matrices (default {:g})\n"
      "  --grad-clip X       clip the global gradient norm to X; <= 0 is off\n"
      "                      (default {:g})\n"
      "  --beta1 X --beta2 X --eps X\n"
      "                      AdamW's moments (defaults {:g}, {:g}, {:g})\n"
      "  --momentum X        SGD's momentum, for models built with\n"
      "                      --optimizer=sgd (default {:g})\n",
      d.lr, d.minLr, d.warmup, scheduleName(d.schedule), d.weightDecay, d.gradClip, d.beta1,
      d.beta2, d.eps, d.momentum);
}

bool parseHyperParams(const Command* command, const Args& args, HyperParams* p) {
  struct Number {
    const char* name;
    double* value;
    bool positive;
  };
  Number numbers[] = {{"--lr", &p->lr, false},         {"--min-lr", &p->minLr, false},
                      {"--warmup", &p->warmup, false}, {"--weight-decay", &p->weightDecay, false},
                      {"--grad-clip", &p->gradClip, false}, {"--beta1", &p->beta1, false},
                      {"--beta2", &p->beta2, false},   {"--eps", &p->eps, true},
                      {"--momentum", &p->momentum, false}};
  for (const Number& number : numbers) {
    if (!args.has(number.name)) continue;
    std::string text = args.get(number.name);
    if (!parseDouble(text, number.value)) {
      usageError(command, std::string(number.name) + " '" + text + "' is not a finite number");
      return false;
    }
    if (std::string(number.name) != "--grad-clip" && *number.value < 0) {
      usageError(command, std::string(number.name) + " must not be negative (got " + text + ")");
      return false;
    }
    if (number.positive && *number.value <= 0) {
      usageError(command, std::string(number.name) + " must be positive (got " + text + ")");
      return false;
    }
  }
  if ((p->beta1 >= 1.0) || (p->beta2 >= 1.0)) {
    usageError(command, "--beta1 and --beta2 must be in [0, 1)");
    return false;
  }
  if (args.has("--schedule")) {
    std::string text = args.get("--schedule");
    if (text == "constant" || text == "0") p->schedule = 0;
    else if (text == "linear" || text == "1") p->schedule = 1;
    else if (text == "cosine" || text == "2") p->schedule = 2;
    else {
      usageError(command, "--schedule '" + text + "' is not one of constant, linear, cosine");
      return false;
    }
  }
  return true;
}

Status checkOptimizerOptions(const TrainStep& trainStep, const Args& args,
                             const std::string& path) {
  if (trainStep.optimizer() == Optimizer::kAdamW && args.has("--momentum")) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "--momentum applies to SGD, but %s was compiled with "
                         "--optimizer=adamw (its options are --beta1, --beta2, --eps)",
                         path.c_str());
  }
  if (trainStep.optimizer() == Optimizer::kSgd) {
    for (const char* option : {"--beta1", "--beta2", "--eps"}) {
      if (args.has(option)) {
        return Status::error(TFC_INVALID_ARGUMENT,
                             "%s applies to AdamW, but %s was compiled with --optimizer=sgd "
                             "(its option is --momentum)",
                             option, path.c_str());
      }
    }
  }
  return Status();
}

std::string modelName(const Artifact& artifact) {
  return metadataValue(std::string(artifact.metadataJson()), "model").value_or("");
}

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long total = std::lround(seconds);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  if (seconds >= 10) return fmt::format("{}s", total);
  return fmt::format("{:.1f}s", seconds);
}

std::string formatRate(double perSecond) {
  if (!std::isfinite(perSecond)) return "?";
  if (perSecond >= 1e6) return fmt::format("{:.2f}M", perSecond / 1e6);
  if (perSecond >= 1e4) return fmt::format("{:.1f}k", perSecond / 1e3);
  return fmt::format("{:.0f}", perSecond);
}

}  // namespace tfc::run
