// Pieces shared by `tfc-run train` and `tfc-run seed-experiment`: the hyper-parameters of
// a compiled train_step, a runner that calls it with preallocated buffers, the model's
// vocabulary size, and progress formatting.
#ifndef TFC_TOOLS_TFC_RUN_TRAIN_COMMON_HPP_
#define TFC_TOOLS_TFC_RUN_TRAIN_COMMON_HPP_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc::run {

// The run-time hyper-parameters that tfc-train-step adds to train_step, all 0-d f32.
struct HyperParams {
  double lr = 3e-4;
  double minLr = 0.0;
  double warmup = 0.0;
  double totalSteps = 0.0;  // set by the command (the step to reach)
  int schedule = 0;         // 0 constant, 1 warm-up + linear decay, 2 warm-up + cosine
  double weightDecay = 0.1;
  double gradClip = 1.0;  // <= 0: off
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;  // AdamW
  double momentum = 0.9;                         // SGD
};

// The options both commands accept for HyperParams, for their OptionSpec lists.
std::vector<OptionSpec> hyperParamOptions();
// The --help lines for them (defaults shown are |defaults|').
std::string hyperParamHelp(const HyperParams& defaults);
// Reads the hyper-parameter options of |args| over |params|. On a usage error prints it
// and returns false.
bool parseHyperParams(const Command* command, const Args& args, HyperParams* params);
const char* scheduleName(int schedule);

// The optimizer a train_step was built with, from its inputs.
enum class Optimizer { kAdamW, kSgd };

// Calls train_step (or evaluates the loss entry) with preallocated input and output
// buffers: the data inputs are the ones before "lr".
class TrainStepRunner {
 public:
  // Finds train_step in |artifact| and checks its hyper-parameter inputs. |args| (may be
  // null) is checked for options that do not apply to the model's optimizer.
  static StatusOr<TrainStepRunner> create(const Artifact& artifact, const Args* args);

  Optimizer optimizer() const { return optimizer_; }
  const char* optimizerName() const { return optimizer_ == Optimizer::kAdamW ? "adamw" : "sgd"; }
  // The data inputs (tokens, targets; or src, tgt_in, targets), in order.
  const std::vector<const tfc_tensor_desc_t*>& dataInputs() const { return dataInputs_; }

  void setHyperParams(const HyperParams& params);
  // Whether train_step takes a `dropout_seed` (the model was traced with dropout), and
  // the seed of the next step's masks: callers derive it from their seed and the step
  // number, so a resumed run draws the same masks as an uninterrupted one.
  bool hasDropout() const { return dropoutSeedInput_ >= 0; }
  void setDropoutSeed(int64_t seed) { dropoutSeed_ = seed; }
  bool hasGradNorm() const { return gradNormOutput_ >= 0; }

  struct Result {
    float loss = 0, lr = 0, gradNorm = 0;
  };
  // One optimizer step on |data| (one buffer per data input, of its exact size).
  Status step(Context& context, const std::vector<void*>& data, Result* result);

 private:
  TrainStepRunner() = default;
  std::string entryName_ = "train_step";
  Optimizer optimizer_ = Optimizer::kAdamW;
  std::vector<const tfc_tensor_desc_t*> dataInputs_;
  std::vector<std::string> hyperNames_;
  std::vector<float> hyperValues_;
  std::vector<std::vector<int64_t>> inputShapes_;
  int lossOutput_ = 0, lrOutput_ = -1, gradNormOutput_ = -1;
  std::vector<float> outputs_;  // every output of train_step is a 0-d f32
  int32_t numOutputs_ = 0;
  int32_t entryIndex_ = -1;
  std::vector<tfc_tensor_desc_t> inputDescs_;
  int32_t firstHyper_ = 0;
  int32_t dropoutSeedInput_ = -1;
  int64_t dropoutSeed_ = 0;
};

// The dropout seed of step |step| (1-based) of a run with seed |seed|.
int64_t dropoutSeedForStep(uint64_t seed, int64_t step);

// Evaluates the `loss` entry (inputs as train_step's data inputs, one 0-d f32 output).
class LossEvaluator {
 public:
  static StatusOr<LossEvaluator> create(const Artifact& artifact,
                                        const std::vector<const tfc_tensor_desc_t*>& expected);
  Status eval(Context& context, const std::vector<void*>& data, float* loss);

 private:
  int32_t entryIndex_ = -1;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<tfc_tensor_desc_t> descs_;
};

// The model's vocabulary size: "vocab_size" in the artifact's metadata config, else the
// last dimension of the forward entry's logits; 0 when neither is known.
int64_t modelVocabSize(const Artifact& artifact);
// The "model" field of the artifact's metadata ("" when absent).
std::string modelName(const Artifact& artifact);

// "1h02m", "3m05s", "12s".
std::string formatDuration(double seconds);
// "812", "12.3k", "1.20M".
std::string formatRate(double perSecond);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_TRAIN_COMMON_HPP_
