#include "train_common.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace tfc::run {

std::vector<OptionSpec> hyperParamOptions() {
  return {{"--lr", nullptr, true, false},           {"--min-lr", nullptr, true, false},
          {"--warmup", nullptr, true, false},       {"--schedule", nullptr, true, false},
          {"--weight-decay", nullptr, true, false}, {"--grad-clip", nullptr, true, false},
          {"--beta1", nullptr, true, false},        {"--beta2", nullptr, true, false},
          {"--eps", nullptr, true, false},          {"--momentum", nullptr, true, false}};
}

const char* scheduleName(int schedule) {
  return schedule == 0 ? "constant" : schedule == 1 ? "linear" : "cosine";
}

std::string hyperParamHelp(const HyperParams& d) {
  char buffer[2048];
  std::snprintf(buffer, sizeof(buffer),
                "  --lr X              peak learning rate (default %g)\n"
                "  --min-lr X          learning rate at the end of the decay (default %g)\n"
                "  --warmup N          linear warm-up steps (default %g)\n"
                "  --schedule S        constant | linear (warm-up, then linear decay to\n"
                "                      --min-lr at the last step) | cosine (warm-up, then\n"
                "                      cosine decay) (default %s)\n"
                "  --weight-decay X    decoupled weight decay of matrices (default %g)\n"
                "  --grad-clip X       clip the global gradient norm to X; <= 0 is off\n"
                "                      (default %g)\n"
                "  --beta1 X --beta2 X --eps X\n"
                "                      AdamW's moments (defaults %g, %g, %g)\n"
                "  --momentum X        SGD's momentum, for models built with\n"
                "                      --optimizer=sgd (default %g)\n",
                d.lr, d.minLr, d.warmup, scheduleName(d.schedule), d.weightDecay, d.gradClip,
                d.beta1, d.beta2, d.eps, d.momentum);
  return buffer;
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

StatusOr<TrainStepRunner> TrainStepRunner::create(const Artifact& artifact, const Args* args) {
  TrainStepRunner runner;
  int32_t index = -1;
  for (int32_t e = 0; e < artifact.entryCount(); ++e) {
    if (std::string(artifact.entry(e).name) == "train_step") index = e;
  }
  if (index < 0) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s has no train_step entry: compile the model with an optimizer, "
                         "e.g. `tfc model.mlir --optimizer=adamw -o model.so`",
                         std::string(artifact.path()).c_str());
  }
  runner.entryIndex_ = index;
  const tfc_entry_t& entry = artifact.entry(index);
  int firstHyper = -1;
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    if (std::string(entry.inputs[i].name) == "lr") {
      firstHyper = i;
      break;
    }
  }
  if (firstHyper < 0) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s: train_step has no 'lr' input; this runner expects the entry "
                         "that `tfc --optimizer=adamw|sgd` builds",
                         std::string(artifact.path()).c_str());
  }
  static const std::set<std::string> kKnown = {"lr",           "min_lr",    "warmup",
                                               "total_steps",  "schedule",  "weight_decay",
                                               "grad_clip",    "beta1",     "beta2",
                                               "eps",          "momentum"};
  bool hasBeta = false, hasMomentum = false;
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    const tfc_tensor_desc_t& desc = entry.inputs[i];
    runner.inputDescs_.push_back(desc);
    runner.inputShapes_.push_back(shapeOf(desc));
    if (i < firstHyper) {
      if (std::string(desc.name) == "dropout_seed" && desc.rank == 0 &&
          desc.dtype == TFC_ABI_I64) {
        runner.dropoutSeedInput_ = i;
        continue;
      }
      runner.dataInputs_.push_back(&entry.inputs[i]);
      continue;
    }
    std::string name = desc.name;
    if (!kKnown.count(name) || desc.rank != 0 || desc.dtype != TFC_ABI_F32) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "%s: train_step input '%s' is not a known 0-d f32 hyper-parameter",
                           std::string(artifact.path()).c_str(), name.c_str());
    }
    hasBeta |= name == "beta1";
    hasMomentum |= name == "momentum";
    runner.hyperNames_.push_back(name);
  }
  runner.hyperValues_.assign(runner.hyperNames_.size(), 0.0f);
  runner.firstHyper_ = firstHyper;
  runner.optimizer_ = hasMomentum && !hasBeta ? Optimizer::kSgd : Optimizer::kAdamW;
  if (args != nullptr) {
    if (runner.optimizer_ == Optimizer::kAdamW && args->has("--momentum")) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "--momentum applies to SGD, but %s was compiled with "
                           "--optimizer=adamw (its options are --beta1, --beta2, --eps)",
                           std::string(artifact.path()).c_str());
    }
    if (runner.optimizer_ == Optimizer::kSgd) {
      for (const char* option : {"--beta1", "--beta2", "--eps"}) {
        if (args->has(option)) {
          return Status::error(TFC_INVALID_ARGUMENT,
                               "%s applies to AdamW, but %s was compiled with --optimizer=sgd "
                               "(its option is --momentum)",
                               option, std::string(artifact.path()).c_str());
        }
      }
    }
  }
  runner.numOutputs_ = entry.num_outputs;
  for (int32_t i = 0; i < entry.num_outputs; ++i) {
    const tfc_tensor_desc_t& desc = entry.outputs[i];
    if (desc.rank != 0 || desc.dtype != TFC_ABI_F32) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "%s: train_step output '%s' is not a 0-d f32 (expected loss, lr, "
                           "grad_norm)",
                           std::string(artifact.path()).c_str(), desc.name);
    }
    std::string name = desc.name;
    if (name == "loss") runner.lossOutput_ = i;
    if (name == "lr") runner.lrOutput_ = i;
    if (name == "grad_norm") runner.gradNormOutput_ = i;
  }
  runner.outputs_.assign(static_cast<size_t>(entry.num_outputs), 0.0f);
  return runner;
}

void TrainStepRunner::setHyperParams(const HyperParams& p) {
  for (size_t i = 0; i < hyperNames_.size(); ++i) {
    const std::string& name = hyperNames_[i];
    double value = name == "lr"             ? p.lr
                   : name == "min_lr"       ? p.minLr
                   : name == "warmup"       ? p.warmup
                   : name == "total_steps"  ? p.totalSteps
                   : name == "schedule"     ? p.schedule
                   : name == "weight_decay" ? p.weightDecay
                   : name == "grad_clip"    ? p.gradClip
                   : name == "beta1"        ? p.beta1
                   : name == "beta2"        ? p.beta2
                   : name == "eps"          ? p.eps
                                            : p.momentum;
    hyperValues_[i] = static_cast<float>(value);
  }
}

int64_t dropoutSeedForStep(uint64_t seed, int64_t step) {
  // SplitMix64 of (seed, step): unrelated streams for neighbouring steps.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<int64_t>((z ^ (z >> 31)) >> 1);
}

namespace {
tfc_tensor_ref_t makeRef(const tfc_tensor_desc_t& desc, const std::vector<int64_t>& shape,
                         void* data) {
  tfc_tensor_ref_t ref{};
  ref.dtype = static_cast<tfc_dtype_t>(desc.dtype);
  ref.rank = desc.rank;
  ref.shape = shape.empty() ? nullptr : shape.data();
  ref.data = data;
  ref.byte_size = tfc_tensor_desc_byte_size(&desc);
  return ref;
}
}  // namespace

Status TrainStepRunner::step(Context& context, const std::vector<void*>& data, Result* result) {
  std::vector<tfc_tensor_ref_t> inputs, outputs;
  size_t nextData = 0, nextHyper = 0;
  for (size_t i = 0; i < inputDescs_.size(); ++i) {
    void* pointer;
    if (static_cast<int32_t>(i) == dropoutSeedInput_) {
      pointer = &dropoutSeed_;
    } else if (static_cast<int32_t>(i) < firstHyper_) {
      pointer = data[nextData++];
    } else {
      pointer = &hyperValues_[nextHyper++];
    }
    inputs.push_back(makeRef(inputDescs_[i], inputShapes_[i], pointer));
  }
  for (int32_t i = 0; i < numOutputs_; ++i) {
    tfc_tensor_ref_t ref{};
    ref.dtype = TFC_DTYPE_F32;
    ref.rank = 0;
    ref.shape = nullptr;
    ref.data = &outputs_[static_cast<size_t>(i)];
    ref.byte_size = sizeof(float);
    outputs.push_back(ref);
  }
  Status status(tfc_context_call_index(context.get(), entryIndex_, inputs.data(), inputs.size(),
                                       outputs.data(), outputs.size()));
  if (!status.ok()) return status;
  result->loss = outputs_[static_cast<size_t>(lossOutput_)];
  result->lr = lrOutput_ >= 0 ? outputs_[static_cast<size_t>(lrOutput_)] : NAN;
  result->gradNorm = gradNormOutput_ >= 0 ? outputs_[static_cast<size_t>(gradNormOutput_)] : NAN;
  return Status();
}

StatusOr<LossEvaluator> LossEvaluator::create(
    const Artifact& artifact, const std::vector<const tfc_tensor_desc_t*>& expected) {
  LossEvaluator evaluator;
  int32_t index = -1;
  for (int32_t e = 0; e < artifact.entryCount(); ++e) {
    if (std::string(artifact.entry(e).name) == "loss") index = e;
  }
  std::string path(artifact.path());
  if (index < 0) {
    return Status::error(TFC_FAILED_PRECONDITION, "%s has no 'loss' entry to evaluate with",
                         path.c_str());
  }
  const tfc_entry_t& entry = artifact.entry(index);
  bool fits = static_cast<size_t>(entry.num_inputs) == expected.size() && entry.num_outputs == 1 &&
              entry.outputs[0].rank == 0 && entry.outputs[0].dtype == TFC_ABI_F32;
  for (int32_t i = 0; fits && i < entry.num_inputs; ++i) {
    fits = entry.inputs[i].dtype == expected[static_cast<size_t>(i)]->dtype &&
           shapeOf(entry.inputs[i]) == shapeOf(*expected[static_cast<size_t>(i)]);
  }
  if (!fits) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s: the 'loss' entry's inputs differ from train_step's data inputs",
                         path.c_str());
  }
  evaluator.entryIndex_ = index;
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    evaluator.descs_.push_back(entry.inputs[i]);
    evaluator.shapes_.push_back(shapeOf(entry.inputs[i]));
  }
  return evaluator;
}

Status LossEvaluator::eval(Context& context, const std::vector<void*>& data, float* loss) {
  std::vector<tfc_tensor_ref_t> inputs;
  for (size_t i = 0; i < descs_.size(); ++i) inputs.push_back(makeRef(descs_[i], shapes_[i], data[i]));
  tfc_tensor_ref_t output{};
  output.dtype = TFC_DTYPE_F32;
  output.data = loss;
  output.byte_size = sizeof(float);
  return Status(tfc_context_call_index(context.get(), entryIndex_, inputs.data(), inputs.size(),
                                       &output, 1));
}

int64_t modelVocabSize(const Artifact& artifact) {
  std::optional<int64_t> vocab = metadataInt(std::string(artifact.metadataJson()), "vocab_size");
  if (vocab && *vocab > 0) return *vocab;
  for (int32_t e = 0; e < artifact.entryCount(); ++e) {
    const tfc_entry_t& entry = artifact.entry(e);
    if (std::string(entry.name) != "forward") continue;
    for (int32_t i = 0; i < entry.num_outputs; ++i) {
      if (std::string(entry.outputs[i].name) == "logits" && entry.outputs[i].rank >= 1) {
        return entry.outputs[i].shape[entry.outputs[i].rank - 1];
      }
    }
  }
  return 0;
}

std::string modelName(const Artifact& artifact) {
  return metadataValue(std::string(artifact.metadataJson()), "model").value_or("");
}

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buffer[32];
  long total = std::lround(seconds);
  if (total >= 3600) {
    std::snprintf(buffer, sizeof(buffer), "%ldh%02ldm", total / 3600, (total % 3600) / 60);
  } else if (total >= 60) {
    std::snprintf(buffer, sizeof(buffer), "%ldm%02lds", total / 60, total % 60);
  } else if (seconds >= 10) {
    std::snprintf(buffer, sizeof(buffer), "%lds", total);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.1fs", seconds);
  }
  return buffer;
}

std::string formatRate(double perSecond) {
  char buffer[32];
  if (!std::isfinite(perSecond)) return "?";
  if (perSecond >= 1e6) std::snprintf(buffer, sizeof(buffer), "%.2fM", perSecond / 1e6);
  else if (perSecond >= 1e4) std::snprintf(buffer, sizeof(buffer), "%.1fk", perSecond / 1e3);
  else std::snprintf(buffer, sizeof(buffer), "%.0f", perSecond);
  return buffer;
}

}  // namespace tfc::run
