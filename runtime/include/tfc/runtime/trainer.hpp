// Training a decoder-only model (gpt2, llama) compiled with an optimizer on a flat token
// file: the loop that `tfc-run train` and the Python bindings run.
//
//   TFC_RETURN_IF_ERROR(params.init(0));           // or load weights; or resume() below
//   tfc::TrainerOptions options;
//   options.dataPath = "train.bin";
//   options.steps = 2000;
//   options.savePath = "ckpt.safetensors";
//   TFC_ASSIGN_OR_RETURN(tfc::Trainer trainer, tfc::Trainer::create(context, options));
//   TFC_ASSIGN_OR_RETURN(tfc::TrainOutcome outcome,
//       trainer.run([](const tfc::TrainProgress& p) {
//         printf("step %lld loss %.4f\n", (long long)p.step, p.loss);
//         return tfc::Status();  // an error stops the run with it
//       }));
//
// Each step draws a batch as nanoGPT does (tfc::BatchSampler: B random offsets from a
// seeded generator; x = data[i:i+T], y = data[i+1:i+T+1]) and calls train_step (forward,
// loss, backward, clipping, optimizer and the learning-rate schedule, all compiled). Every
// evalEvery steps and at the last one the mean loss of evalBatches held-out batches (the
// same batches each time) is measured with the loss entry. Checkpoints
// (tfc/runtime/checkpoint.hpp) are written at the last step, every saveEvery steps and when
// a stop is requested, with the step and the sampler's position, so that resume() continues
// bit-identically to an uninterrupted run. A NaN or infinite loss or gradient norm, or
// parameters or state that hold one after the update, stop the run with an error and
// without saving (the last good checkpoint is kept).
//
// Thread-safety: one thread at a time, except requestStop().
#ifndef TFC_RUNTIME_TRAINER_HPP_
#define TFC_RUNTIME_TRAINER_HPP_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tfc/runtime/metadata.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/text_output_file.hpp"
#include "tfc/runtime/token_data.hpp"
#include "tfc/runtime/train_step.hpp"

namespace tfc {

struct TrainerOptions {
  std::string dataPath;  // training tokens (.bin, llm.c .bin or 1-D .npy)
  TokenFileDtype dataDtype = TokenFileDtype::kUint16;  // of headerless .bin files
  std::string evalDataPath;                            // held-out tokens; "" for no evaluation
  int64_t evalEvery = 100;
  int64_t evalBatches = 20;
  int64_t steps = 0;             // the step to reach (not a count)
  int64_t totalSteps = 0;        // the schedule's length; 0: steps
  uint64_t seed = 1337;          // the batch sampler's (a resumed run keeps its checkpoint's)
  HyperParams hyper;             // hyper.totalSteps is set from totalSteps / steps
  std::string savePath;          // the checkpoint; "" never saves
  int64_t saveEvery = 0;         // also save every K steps; 0: only at the end and on a stop
  std::string logPath;           // CSV: step,loss,lr,grad_norm,tokens_per_s,eval_loss; "" for none
  std::string logLabel = "log";  // starts the log's error messages (a tool's "--log")
};

// One row of the log.
struct TrainLogRow {
  int64_t step;
  double loss, lr, gradNorm, tokensPerSecond, evalLoss;  // evalLoss NaN when not evaluated
};

// A number as the log writes it: "%.7g", or "" for NaN (not evaluated, not output).
std::string formatLogNumber(double value);

// What the progress callback is told.
struct TrainProgress {
  enum class Event {
    kStep,   // a step (and its evaluation) is done; a save may follow
    kSaved,  // a checkpoint of this step was written
  };
  Event event = Event::kStep;
  TrainLogRow row{};
  int64_t lastStep = 0;                // TrainerOptions::steps
  double smoothedTokensPerSecond = 0;  // an exponential average over steps
  double elapsedSeconds = 0;           // since run() began
  double etaSeconds = 0;               // to lastStep at the average speed so far
  bool stopping = false;               // a stop was requested: this is the last step
  bool diverged = false;  // a NaN or infinite loss or grad norm: run() fails after this call
  // f16 mixed precision: this step's gradients overflowed, its update was skipped and the
  // loss scale lowered; |notice| says so with the step and the scales, for the log.
  bool skipped = false;
  std::string notice;
};
using TrainProgressCallback = std::function<Status(const TrainProgress&)>;

struct TrainOutcome {
  int64_t firstStep = 0, lastStep = 0;  // the steps run() trained
  bool stopped = false;                 // requestStop() ended it before options.steps
  double seconds = 0;
  // Pipeline parallel: the fraction of the run each stage of this rank's replica spent
  // waiting for the others' activations and gradients (its measured bubble and imbalance), in
  // stage order; empty otherwise.
  std::vector<double> stageWaits;
};

class Trainer {
 public:
  // Binds |context|'s train_step (and loss entry when evaluating), opens and checks the data
  // (length, token ids below the vocabulary). The parameters must be set (init, weights)
  // before run(), or come from resume().
  static StatusOr<Trainer> create(const Context& context, const TrainerOptions& options);

  // Loads checkpoint |path| of this model (parameters, state, step, sampler position and
  // seed) and returns its metadata. Refused, naming the file: another model's, another
  // batch or sequence length, a step counter that disagrees with the metadata.
  StatusOr<std::map<std::string, std::string>> resume(const std::string& path);

  int64_t batch() const { return batch_; }
  // Data parallel (mpirun): this process's rank and the number of processes; 0 and 1 alone.
  // Only rank 0 writes the log and the checkpoints.
  int rank() const { return rank_; }
  int worldSize() const { return world_; }
  // Tensor parallel (tfc --tp=M): the ranks that split each layer (1 without); the world is
  // worldSize() / M data-parallel replicas (tfc --dp), each reading its slice of the batch.
  int64_t tensorParallelSize() const { return tp_.size; }
  int64_t pipelineParallelSize() const { return pp_.size; }
  // Expert parallel (tfc --ep=N): the ranks that share the experts (also data-parallel).
  int64_t expertParallelSize() const { return ep_.size; }
  // The ranks of one replica (its tensor-parallel slices or pipeline stages) read the same rows.
  int64_t dataParallelSize() const { return world_ / (tp_.size * pp_.size); }
  // The mesh of replicas x stages x slices the artifact was compiled for (communicator.hpp).
  const ProcessMesh& mesh() const { return mesh_; }
  int64_t seq() const { return seq_; }
  // The step of the parameters (0, or the resumed checkpoint's).
  int64_t step() const { return step_; }
  uint64_t seed() const { return seed_; }
  const TrainStep& trainStep() const { return *trainStep_; }
  const TokenData& data() const { return *data_; }
  const TrainerOptions& options() const { return options_; }
  // The log rows so far (on resume with a log, its rows up to the checkpoint's step first).
  const std::vector<TrainLogRow>& history() const { return history_; }
  // The last checkpoint written or resumed from; "" when none.
  const std::string& lastCheckpoint() const { return lastCheckpoint_; }

  // Trains from step() + 1 to options().steps, calling |onProgress| (may be empty) after each
  // step and each save. A stop request ends the run after the current step, saving it.
  StatusOr<TrainOutcome> run(const TrainProgressCallback& onProgress);

  // Asks run() to save and return after the current step. Async-signal-safe (for SIGINT).
  void requestStop() { stopRequested_->store(true); }

  // Writes a checkpoint of the current parameters and state at step() to options().savePath.
  Status save();

 private:
  Status openLog();
  StatusOr<double> evaluate();
  std::map<std::string, std::string> checkpointMetadata() const;

  TrainerOptions options_;
  Context context_;
  Params params_;
  Artifact artifact_;
  std::unique_ptr<TrainStep> trainStep_;
  std::unique_ptr<LossEntry> lossEntry_;
  std::unique_ptr<TokenData> data_, evalData_;
  std::unique_ptr<BatchSampler> sampler_;
  int rank_ = 0, world_ = 1;
  // Tensor parallel (tfc --tp=M): the M consecutive ranks that split each layer read the same
  // batch (with --dp=N: world rank d x M + t reads slice d of N); checkpoints hold whole
  // tensors, gathered from the ranks' slices.
  TensorParallelLayout tp_;
  PipelineLayout pp_;
  PipelineLayout ep_;
  ProcessMesh mesh_;
  std::unique_ptr<std::atomic<bool>> stopRequested_ = std::make_unique<std::atomic<bool>>(false);
  std::optional<TextOutputFile> log_;
  std::vector<TrainLogRow> history_;
  std::string lastCheckpoint_;
  int64_t batch_ = 0, seq_ = 0, step_ = 0;
  uint64_t seed_ = 0;
  bool resumed_ = false;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_TRAINER_HPP_
