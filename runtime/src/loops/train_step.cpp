#include "tfc/runtime/train_step.hpp"

#include <cmath>
#include <set>

#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/metadata.hpp"

namespace tfc {

const char* scheduleName(int schedule) {
  return schedule == 0 ? "constant" : schedule == 1 ? "linear" : "cosine";
}

int64_t dropoutSeedForStep(uint64_t seed, int64_t step) {
  // SplitMix64 of (seed, step): unrelated streams for neighbouring steps.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<int64_t>((z ^ (z >> 31)) >> 1);
}

StatusOr<TrainStep> TrainStep::create(const Artifact& artifact) {
  const std::string path(artifact.path());
  // Pipeline parallel (tfc --pp=S): the rank of stage s of the mesh runs stage s's entry.
  TFC_ASSIGN_OR_RETURN(PipelineLayout pp, pipelineLayout(std::string(artifact.metadataJson())));
  std::string entryName = "train_step";
  if (pp.size > 1) {
    // Arithmetic on the world rank, not the group (whose making is collective, and which
    // the context refuses to make in a world of another size, with a better message).
    TFC_ASSIGN_OR_RETURN(ProcessMesh mesh, processMesh(std::string(artifact.metadataJson())));
    TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
    entryName = pp.entryOf(entryName, mesh.stageOf(world->rank()));
  }
  // Expert parallel (tfc --ep=N): world rank r runs the entry of its experts.
  TFC_ASSIGN_OR_RETURN(PipelineLayout ep, expertLayout(std::string(artifact.metadataJson())));
  if (ep.size > 1) {
    TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
    entryName = ep.entryOf(entryName, world->rank());
  }
  bool found = false;
  for (int32_t e = 0; e < artifact.entryCount(); ++e) {
    found |= std::string(artifact.entry(e).name) == entryName;
  }
  if (!found && pp.size > 1) {
    return Status::error(TFC_FAILED_PRECONDITION, "%s has no %s entry for this pipeline stage",
                         path.c_str(), entryName.c_str());
  }
  if (!found) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s has no train_step entry: compile the model with an optimizer, "
                         "e.g. `tfc model.mlir --optimizer=adamw -o model.so`",
                         path.c_str());
  }
  TrainStep step;
  TFC_ASSIGN_OR_RETURN(step.entry_, BoundEntry::create(artifact, entryName));
  const tfc_entry_t& entry = step.entry_.desc();
  std::optional<size_t> firstHyper = step.entry_.findInput("lr");
  if (!firstHyper) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s: train_step has no 'lr' input; this runner expects the entry "
                         "that `tfc --optimizer=adamw|sgd` builds",
                         path.c_str());
  }
  static const std::set<std::string> kKnown = {
      "lr",        "min_lr", "warmup", "total_steps", "schedule", "weight_decay",
      "grad_clip", "beta1",  "beta2",  "eps",         "momentum"};
  bool hasBeta = false, hasMomentum = false;
  for (size_t i = 0; i < static_cast<size_t>(entry.num_inputs); ++i) {
    const tfc_tensor_desc_t& desc = entry.inputs[i];
    std::string name = desc.name;
    if (i < *firstHyper) {
      if (name == "dropout_seed" && desc.rank == 0 && desc.dtype == TFC_ABI_I64) {
        step.dropoutSeedInput_ = static_cast<int>(i);
      } else {
        step.dataInputs_.push_back(i);
      }
      continue;
    }
    if (!kKnown.count(name) || desc.rank != 0 || desc.dtype != TFC_ABI_F32) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "%s: train_step input '%s' is not a known 0-d f32 hyper-parameter",
                           path.c_str(), name.c_str());
    }
    hasBeta |= name == "beta1";
    hasMomentum |= name == "momentum";
    step.hyperInputs_.emplace_back(i, name);
  }
  step.optimizer_ = hasMomentum && !hasBeta ? Optimizer::kSgd : Optimizer::kAdamW;
  for (int32_t i = 0; i < entry.num_outputs; ++i) {
    const tfc_tensor_desc_t& desc = entry.outputs[i];
    if (desc.rank != 0 || desc.dtype != TFC_ABI_F32) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "%s: train_step output '%s' is not a 0-d f32 (expected loss, lr, "
                           "grad_norm)",
                           path.c_str(), desc.name);
    }
    std::string name = desc.name;
    if (name == "loss") step.lossOutput_ = i;
    if (name == "lr") step.lrOutput_ = i;
    if (name == "grad_norm") step.gradNormOutput_ = i;
    if (name == "loss_scale") step.lossScaleOutput_ = i;
    if (name == "next_loss_scale") step.nextLossScaleOutput_ = i;
    if (name == "overflow") step.overflowOutput_ = i;
  }
  if ((step.overflowOutput_ >= 0) !=
      (step.lossScaleOutput_ >= 0 && step.nextLossScaleOutput_ >= 0)) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s: train_step outputs some of loss_scale, next_loss_scale, overflow "
                         "but not all three",
                         path.c_str());
  }
  return step;
}

std::vector<std::string> TrainStep::dataInputNames() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < dataInputs_.size(); ++i) names.push_back(dataDesc(i).name);
  return names;
}

void TrainStep::setHyperParams(const HyperParams& p) {
  for (const auto& [index, name] : hyperInputs_) {
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
    *entry_.input(index).mutableDataAs<float>() = static_cast<float>(value);
  }
}

void TrainStep::setDropoutSeed(int64_t seed) {
  if (dropoutSeedInput_ >= 0) {
    *entry_.input(static_cast<size_t>(dropoutSeedInput_)).mutableDataAs<int64_t>() = seed;
  }
}

StatusOr<TrainStep::Result> TrainStep::step(Context& context) {
  TFC_RETURN_IF_ERROR(entry_.call(context));
  auto value = [&](int output) {
    return output >= 0 ? *entry_.output(static_cast<size_t>(output)).dataAs<float>() : NAN;
  };
  Result result;
  result.loss = value(lossOutput_);
  result.lr = value(lrOutput_);
  result.gradNorm = value(gradNormOutput_);
  result.lossScale = value(lossScaleOutput_);
  result.nextLossScale = value(nextLossScaleOutput_);
  result.overflow = overflowOutput_ >= 0 && value(overflowOutput_) != 0;
  return result;
}

StatusOr<LossEntry> LossEntry::create(const Artifact& artifact, const TrainStep& trainStep) {
  const std::string path(artifact.path());
  bool found = false;
  for (int32_t e = 0; e < artifact.entryCount(); ++e) {
    found |= std::string(artifact.entry(e).name) == "loss";
  }
  if (!found) {
    return Status::error(TFC_FAILED_PRECONDITION, "%s has no 'loss' entry to evaluate with",
                         path.c_str());
  }
  LossEntry loss;
  TFC_ASSIGN_OR_RETURN(loss.entry_, BoundEntry::create(artifact, "loss"));
  const tfc_entry_t& entry = loss.entry_.desc();
  bool fits = static_cast<size_t>(entry.num_inputs) == trainStep.numDataInputs() &&
              entry.num_outputs == 1 && entry.outputs[0].rank == 0 &&
              entry.outputs[0].dtype == TFC_ABI_F32;
  for (size_t i = 0; fits && i < trainStep.numDataInputs(); ++i) {
    fits = entry.inputs[i].dtype == trainStep.dataDesc(i).dtype &&
           shapeOf(entry.inputs[i]) == shapeOf(trainStep.dataDesc(i));
  }
  if (!fits) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s: the 'loss' entry's inputs differ from train_step's data inputs",
                         path.c_str());
  }
  return loss;
}

StatusOr<float> LossEntry::eval(Context& context) {
  TFC_RETURN_IF_ERROR(entry_.call(context));
  return *entry_.output(0).dataAs<float>();
}

}  // namespace tfc
