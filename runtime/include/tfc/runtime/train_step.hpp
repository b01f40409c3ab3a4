// The training entries of a model compiled with an optimizer (`tfc --optimizer=adamw|sgd`):
// train_step (data inputs, an optional dropout_seed, then 0-d f32 hyper-parameters; outputs
// loss, lr, grad_norm) and loss (the same data inputs; one 0-d f32 output), each bound to
// buffers of its own (tfc::BoundEntry). The data inputs are the ones before "lr":
// tokens, targets for decoder-only models; src, tgt_in, targets for encoder-decoders.
#ifndef TFC_RUNTIME_TRAIN_STEP_HPP_
#define TFC_RUNTIME_TRAIN_STEP_HPP_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tfc/runtime/bound_entry.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"

namespace tfc {

// The run-time hyper-parameters that tfc-train-step adds to train_step, all 0-d f32.
struct HyperParams {
  double lr = 3e-4;
  double minLr = 0.0;
  double warmup = 0.0;
  double totalSteps = 0.0;  // the step at which the schedule ends
  int schedule = 0;         // 0 constant, 1 warm-up + linear decay, 2 warm-up + cosine
  double weightDecay = 0.1;
  double gradClip = 1.0;                         // <= 0: off
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;  // AdamW
  double momentum = 0.9;                         // SGD
};

// "constant", "linear", "cosine".
const char* scheduleName(int schedule);

// The optimizer a train_step was built with, from its inputs.
enum class Optimizer { kAdamW, kSgd };

// The dropout seed of step |step| (1-based) of a run with seed |seed|: a resumed run draws
// the same masks as an uninterrupted one.
int64_t dropoutSeedForStep(uint64_t seed, int64_t step);

class TrainStep {
 public:
  TrainStep() = default;

  // Binds |artifact|'s train_step, checking its hyper-parameter inputs and 0-d outputs
  // (FAILED_PRECONDITION naming the model and what is wrong).
  static StatusOr<TrainStep> create(const Artifact& artifact);

  Optimizer optimizer() const { return optimizer_; }
  const char* optimizerName() const { return optimizer_ == Optimizer::kAdamW ? "adamw" : "sgd"; }

  // The data inputs, in order, and their buffers (fill them before step()).
  size_t numDataInputs() const { return dataInputs_.size(); }
  const tfc_tensor_desc_t& dataDesc(size_t i) const { return entry_.desc().inputs[dataInputs_[i]]; }
  HostTensor& dataInput(size_t i) { return entry_.input(dataInputs_[i]); }
  std::vector<std::string> dataInputNames() const;

  void setHyperParams(const HyperParams& params);
  // Whether train_step takes a `dropout_seed` (the model was traced with dropout), and the
  // seed of the next step's masks (see dropoutSeedForStep).
  bool hasDropout() const { return dropoutSeedInput_ >= 0; }
  void setDropoutSeed(int64_t seed);
  bool hasGradNorm() const { return gradNormOutput_ >= 0; }

  // Whether train_step does dynamic loss scaling (f16 mixed precision, `tfc --precision=f16
  // --optimizer=...`): it outputs loss_scale, next_loss_scale and overflow.
  bool hasLossScale() const { return overflowOutput_ >= 0; }

  struct Result {
    float loss = 0, lr = 0, gradNorm = 0;  // lr, gradNorm NaN when train_step lacks them
    // With loss scaling: the scale this step used and the next one, and whether a gradient
    // was not finite (the update was skipped: parameters and optimizer state unchanged).
    float lossScale = NAN, nextLossScale = NAN;
    bool overflow = false;
  };
  // One optimizer step on the data in dataInput(...).
  StatusOr<Result> step(Context& context);

 private:
  BoundEntry entry_;
  Optimizer optimizer_ = Optimizer::kAdamW;
  std::vector<size_t> dataInputs_;
  std::vector<std::pair<size_t, std::string>> hyperInputs_;  // index, name
  int dropoutSeedInput_ = -1;
  int lossOutput_ = 0, lrOutput_ = -1, gradNormOutput_ = -1;
  int lossScaleOutput_ = -1, nextLossScaleOutput_ = -1, overflowOutput_ = -1;
};

// The `loss` entry: the mean loss of one batch, without updating anything.
class LossEntry {
 public:
  LossEntry() = default;

  // Binds |artifact|'s loss entry, which must take the same data inputs as |trainStep|
  // (FAILED_PRECONDITION otherwise, or when there is none).
  static StatusOr<LossEntry> create(const Artifact& artifact, const TrainStep& trainStep);

  HostTensor& dataInput(size_t i) { return entry_.input(i); }
  StatusOr<float> eval(Context& context);

 private:
  BoundEntry entry_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_TRAIN_STEP_HPP_
