#include "tfc/runtime/trainer.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "tfc/runtime/checkpoint.hpp"
#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/file.hpp"
#include "tfc/runtime/metadata.hpp"

namespace tfc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kCsvHeader = "step,loss,lr,grad_norm,tokens_per_s,eval_loss\n";
// The evaluation sampler's seed, derived from the run's: the same batches each time.
constexpr uint64_t kEvalSeedMix = 0x5EEDE7A1ull;

std::string csvRow(const TrainLogRow& row) {
  return std::to_string(row.step) + "," + formatLogNumber(row.loss) + "," +
         formatLogNumber(row.lr) + "," + formatLogNumber(row.gradNorm) + "," +
         formatLogNumber(row.tokensPerSecond) + "," + formatLogNumber(row.evalLoss) + "\n";
}

// "nan", "inf", "-inf" or the value, for messages.
std::string numberText(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format(FMT_STRING("{:g}"), value);
}

// Rows of an existing log up to |lastStep| (for a resumed run's log).
std::vector<TrainLogRow> readLog(const std::string& path, int64_t lastStep) {
  std::vector<TrainLogRow> rows;
  // Only a regular file holds earlier rows: a device such as /dev/full or /dev/zero reads
  // as an endless line of NUL bytes, and opening a FIFO would block (the writer refuses
  // both with a message).
  auto fd = openRegularFileForRead(path);
  if (!fd.ok()) return rows;
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t got = ::read(*fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  ::close(*fd);
  std::istringstream file(text);
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;
    std::vector<std::string> fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, ',')) fields.push_back(field);
    while (fields.size() < 6) fields.push_back("");
    auto number = [](const std::string& value) {
      return value.empty() ? NAN : std::atof(value.c_str());
    };
    TrainLogRow row{std::atoll(fields[0].c_str()),
                    number(fields[1]),
                    number(fields[2]),
                    number(fields[3]),
                    number(fields[4]),
                    number(fields[5])};
    if (row.step <= lastStep) rows.push_back(row);
  }
  return rows;
}

// The name of the first f32 parameter or state tensor holding a NaN or an infinity, or "".
std::string firstNonFinite(const Artifact& artifact, const Params& params, const Context& context) {
  auto finite = [](const tfc_tensor_ref_t& ref) {
    if (ref.dtype != TFC_DTYPE_F32) return true;
    const float* values = static_cast<const float*>(ref.data);
    for (size_t i = 0; i < ref.byte_size / sizeof(float); ++i) {
      if (!std::isfinite(values[i])) return false;
    }
    return true;
  };
  for (int32_t i = 0; i < artifact.paramCount(); ++i) {
    auto ref = params.tensor(i);
    if (ref.ok() && !finite(*ref)) return artifact.param(i).name;
  }
  for (int32_t i = 0; i < artifact.stateCount(); ++i) {
    auto ref = context.state(i);
    if (ref.ok() && !finite(*ref)) return std::string(kStatePrefix) + artifact.state(i).name;
  }
  return "";
}

StatusOr<std::unique_ptr<TokenData>> openTokens(const std::string& path, TokenFileDtype dtype,
                                                int64_t seq, int64_t vocab) {
  TFC_ASSIGN_OR_RETURN(TokenData data, TokenData::open(path, dtype));
  TFC_RETURN_IF_ERROR(data.checkLength(seq));
  if (vocab > 0) TFC_RETURN_IF_ERROR(data.checkVocab(vocab));
  return std::make_unique<TokenData>(std::move(data));
}

std::string lastGoodCheckpoint(const std::string& last) {
  return last.empty() ? std::string("No checkpoint was written in this run.")
                      : "The last good checkpoint " + last + " is kept.";
}

}  // namespace

std::string formatLogNumber(double value) {
  if (std::isnan(value)) return "";
  return fmt::format(FMT_STRING("{:.7g}"), value);
}

StatusOr<Trainer> Trainer::create(const Context& context, const TrainerOptions& options) {
  Trainer trainer;
  trainer.options_ = options;
  trainer.context_ = context;
  trainer.params_ = context.params();
  trainer.artifact_ = context.artifact();
  trainer.seed_ = options.seed;
  const Artifact& artifact = trainer.artifact_;
  const std::string path(artifact.path());
  if (options.steps < 1) {
    return Status::error(TFC_INVALID_ARGUMENT, "the step to reach is %lld; give at least 1",
                         static_cast<long long>(options.steps));
  }
  // Before anything is read or written: a checkpoint or log written over the data or the
  // model destroys it (a log over the running model's .so even kills the process).
  TFC_RETURN_IF_ERROR(checkDistinctFiles(
      {{"the model", path, ""},
       {"the training data", options.dataPath, ""},
       {"the evaluation data", options.evalDataPath, ""}},
      {{"the checkpoint", options.savePath, ""}, {"the log", options.logPath, ""}}));
  TFC_ASSIGN_OR_RETURN(TrainStep step, TrainStep::create(artifact));
  trainer.trainStep_ = std::make_unique<TrainStep>(std::move(step));
  TrainStep& trainStep = *trainer.trainStep_;
  if (trainStep.numDataInputs() != 2 || std::string(trainStep.dataDesc(0).name) != "tokens" ||
      std::string(trainStep.dataDesc(1).name) != "targets" ||
      trainStep.dataDesc(0).dtype != TFC_ABI_I32 || trainStep.dataDesc(1).dtype != TFC_ABI_I32 ||
      trainStep.dataDesc(0).rank != 2 ||
      shapeOf(trainStep.dataDesc(0)) != shapeOf(trainStep.dataDesc(1))) {
    std::string names;
    for (const std::string& name : trainStep.dataInputNames())
      names += (names.empty() ? "" : ", ") + name;
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s: the trainer reads a token stream for decoder-only models, whose "
                         "train_step takes tokens and targets (I32 [B, T]); this one takes %s",
                         path.c_str(), names.c_str());
  }
  trainer.batch_ = trainStep.dataDesc(0).shape[0];
  trainer.seq_ = trainStep.dataDesc(0).shape[1];
  // Data parallel: the context already refused a world of another size than the compiled one;
  // here a world of several processes running an artifact compiled for one is refused too
  // (each would train its own copy of the model).
  TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
  trainer.rank_ = world->rank();
  trainer.world_ = world->size();
  if (trainer.world_ > 1 &&
      !metadataInt(std::string(artifact.metadataJson()), TFC_METADATA_WORLD_SIZE).has_value()) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s was compiled for one process but runs in a world of %d (mpirun "
                         "-np %d): compile it with tfc --dp=%d for data-parallel training",
                         path.c_str(), trainer.world_, trainer.world_, trainer.world_);
  }
  TFC_ASSIGN_OR_RETURN(trainer.tp_,
                       tensorParallelLayout(std::string(artifact.metadataJson())));
  TFC_ASSIGN_OR_RETURN(trainer.pp_, pipelineLayout(std::string(artifact.metadataJson())));
  TFC_ASSIGN_OR_RETURN(trainer.mesh_, processMesh(std::string(artifact.metadataJson())));
  TFC_ASSIGN_OR_RETURN(trainer.ep_, expertLayout(std::string(artifact.metadataJson())));
  const int64_t vocab = modelVocabSize(artifact);
  TFC_ASSIGN_OR_RETURN(trainer.data_,
                       openTokens(options.dataPath, options.dataDtype, trainer.seq_, vocab));
  if (!options.evalDataPath.empty()) {
    TFC_ASSIGN_OR_RETURN(trainer.evalData_,
                         openTokens(options.evalDataPath, options.dataDtype, trainer.seq_, vocab));
    TFC_ASSIGN_OR_RETURN(LossEntry loss, LossEntry::create(artifact, trainStep));
    trainer.lossEntry_ = std::make_unique<LossEntry>(std::move(loss));
  }
  // World rank d x M + t (artifact_abi.h's layout) reads slice d of the global batch: the M
  // ranks of one data-parallel replica (tensor-parallel slices or pipeline stages) read the
  // same rows.
  trainer.sampler_ = std::make_unique<BatchSampler>(
      trainer.data_.get(), trainer.batch_, trainer.seq_, trainer.seed_,
      trainer.rank_ / (trainer.tp_.size * trainer.pp_.size), trainer.dataParallelSize());
  return trainer;
}

StatusOr<std::map<std::string, std::string>> Trainer::resume(const std::string& path) {
  // Saving over the checkpoint resumed from is the usual way to continue a run (the write is
  // atomic); a log over it would destroy it.
  TFC_RETURN_IF_ERROR(checkDistinctFiles(
      {{"the resumed checkpoint", path, ""}},
      {{"the checkpoint", options_.savePath, "the resumed checkpoint"},
       {"the log", options_.logPath, ""}}));
  TFC_ASSIGN_OR_RETURN(auto metadata, loadCheckpoint(path, artifact_, params_, context_));
  auto field = [&](const char* key) -> std::string {
    auto it = metadata.find(key);
    return it == metadata.end() ? "" : it->second;
  };
  auto parse = [](const std::string& text, uint64_t* out) {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
    char* end = nullptr;
    errno = 0;
    *out = std::strtoull(text.c_str(), &end, 10);
    return errno == 0 && *end == '\0';
  };
  uint64_t step = 0, rngState = 0, drawn = 0;
  if (!parse(field("step"), &step) || step > static_cast<uint64_t>(INT64_MAX) ||
      !parse(field("sampler.rng_state"), &rngState) || !parse(field("sampler.batches"), &drawn)) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: the checkpoint's metadata lacks a valid step or sampler position "
                         "(step, sampler.rng_state, sampler.batches)",
                         path.c_str());
  }
  if (field("batch") != std::to_string(batch_) || field("seq") != std::to_string(seq_)) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: written with batch %s and seq %s; this model trains with %lld and "
                         "%lld",
                         path.c_str(), field("batch").c_str(), field("seq").c_str(),
                         static_cast<long long>(batch_), static_cast<long long>(seq_));
  }
  // Batches and dropout masks follow the checkpoint's seed, so a resumed run draws what the
  // uninterrupted one would have.
  uint64_t savedSeed = 0;
  if (parse(field("sampler.seed"), &savedSeed)) seed_ = savedSeed;
  for (int32_t i = 0; i < artifact_.stateCount(); ++i) {
    const tfc_tensor_desc_t& desc = artifact_.state(i);
    if (std::string(desc.name) == "train.step" && desc.dtype == TFC_ABI_I64 && desc.rank == 0) {
      TFC_ASSIGN_OR_RETURN(tfc_tensor_ref_t ref, context_.state(i));
      if (ref.data == nullptr) break;  // another pipeline stage's: its ranks check it
      int64_t counter = 0;
      std::memcpy(&counter, ref.data, sizeof(counter));
      // With f16 loss scaling a skipped step does not advance train.step (the optimizer's
      // step count), so it may trail the trainer's step, never lead it.
      bool consistent = trainStep_->hasLossScale()
                            ? counter >= 0 && counter <= static_cast<int64_t>(step)
                            : counter == static_cast<int64_t>(step);
      if (!consistent) {
        return Status::error(TFC_INVALID_ARGUMENT,
                             "%s: its metadata says step %llu but its state.train.step is %lld",
                             path.c_str(), static_cast<unsigned long long>(step),
                             static_cast<long long>(counter));
      }
    }
  }
  sampler_->restore(rngState, drawn);
  step_ = static_cast<int64_t>(step);
  lastCheckpoint_ = path;
  resumed_ = true;
  return metadata;
}

std::map<std::string, std::string> Trainer::checkpointMetadata() const {
  const HyperParams& h = options_.hyper;
  std::string hyper = fmt::format(
      FMT_STRING("{{\"lr\": {:g}, \"min_lr\": {:g}, \"warmup\": {:g}, \"schedule\": \"{}\", "
                 "\"weight_decay\": {:g}, \"grad_clip\": {:g}, \"beta1\": {:g}, "
                 "\"beta2\": {:g}, \"eps\": {:g}, \"momentum\": {:g}}}"),
      h.lr, h.minLr, h.warmup, scheduleName(h.schedule), h.weightDecay, h.gradClip, h.beta1,
      h.beta2, h.eps, h.momentum);
  return {
      {"step", std::to_string(step_)},
      {"sampler.rng_state", std::to_string(sampler_->rngState())},
      {"sampler.batches", std::to_string(sampler_->batchesDrawn())},
      {"sampler.seed", std::to_string(seed_)},
      {"data", data_->path()},
      {"batch", std::to_string(batch_)},
      {"seq", std::to_string(seq_)},
      {"optimizer", trainStep_->optimizerName()},
      {"total_steps", std::to_string(options_.totalSteps ? options_.totalSteps : options_.steps)},
      {"hyperparameters", hyper},
  };
}

Status Trainer::save() {
  if (options_.savePath.empty()) {
    return Status::error(TFC_FAILED_PRECONDITION, "no checkpoint path to save to (savePath)");
  }
  // Data parallel: every rank holds the same weights; rank 0 alone writes them. With ZeRO
  // (a block of the optimizer's moments), tensor parallelism (a slice of each layer),
  // pipeline stages (each stage's layers) or expert parallelism (each rank's experts) every
  // rank's saveCheckpoint takes part in gathering the whole tensors for rank 0's file.
  if (rank_ != 0) {
    TFC_ASSIGN_OR_RETURN(auto sharded, zeroShardedState(artifact_));
    if (!sharded.empty() || tp_.size > 1 || pp_.size > 1 || ep_.size > 1) {
      TFC_RETURN_IF_ERROR(
          saveCheckpoint(options_.savePath, artifact_, params_, context_, {}));
    }
    lastCheckpoint_ = options_.savePath;
    return Status();
  }
  // A step can return a finite loss and still leave infinities behind (the update runs after
  // the loss): never write those over a good checkpoint.
  std::string broken = firstNonFinite(artifact_, params_, context_);
  if (!broken.empty()) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "step %lld: '%s' holds a nan or an infinity after the update; stopping "
                         "without saving. %s Try a lower --lr, a --warmup, or --grad-clip.",
                         static_cast<long long>(step_), broken.c_str(),
                         lastGoodCheckpoint(lastCheckpoint_).c_str());
  }
  Status saved = saveCheckpoint(options_.savePath, artifact_, params_, context_,
                                checkpointMetadata());
  if (!saved.ok()) {
    return Status::error(
        saved.code(), "could not save the checkpoint at step %lld: %s%s",
        static_cast<long long>(step_), saved.message(),
        lastCheckpoint_.empty()
            ? ""
            : ("; the previous checkpoint " + lastCheckpoint_ + " is unchanged").c_str());
  }
  lastCheckpoint_ = options_.savePath;
  return Status();
}

Status Trainer::openLog() {
  if (options_.logPath.empty() || log_ || rank_ != 0) return Status();  // rank 0 logs
  if (resumed_) history_ = readLog(options_.logPath, step_);
  TFC_ASSIGN_OR_RETURN(TextOutputFile file,
                       TextOutputFile::open(options_.logPath, options_.logLabel));
  log_.emplace(std::move(file));
  std::string text = kCsvHeader;
  for (const TrainLogRow& row : history_) text += csvRow(row);
  return log_->write(text);
}

StatusOr<double> Trainer::evaluate() {
  BatchSampler sampler(evalData_.get(), batch_, seq_, seed_ ^ kEvalSeedMix);
  double sum = 0;
  for (int64_t i = 0; i < options_.evalBatches; ++i) {
    sampler.next(lossEntry_->dataInput(0).mutableDataAs<int32_t>(),
                 lossEntry_->dataInput(1).mutableDataAs<int32_t>());
    TFC_ASSIGN_OR_RETURN(float loss, lossEntry_->eval(context_));
    sum += loss;
  }
  return sum / static_cast<double>(options_.evalBatches);
}

StatusOr<TrainOutcome> Trainer::run(const TrainProgressCallback& onProgress) {
  TrainOutcome outcome;
  outcome.firstStep = step_ + 1;
  outcome.lastStep = step_;
  if (step_ >= options_.steps) return outcome;
  HyperParams hyper = options_.hyper;
  hyper.totalSteps =
      static_cast<double>(options_.totalSteps ? options_.totalSteps : options_.steps);
  trainStep_->setHyperParams(hyper);
  TFC_RETURN_IF_ERROR(openLog());
  auto report = [&](const TrainProgress& progress) {
    return onProgress ? onProgress(progress) : Status();
  };

  const int64_t first = step_ + 1, last = options_.steps;
  const double tokensPerStep =  // every data-parallel replica's
      static_cast<double>(batch_ * seq_ * dataParallelSize());
  double receiveSecondsAtStart = 0;
  if (pp_.size > 1) {
    TFC_ASSIGN_OR_RETURN(Communicator * stages, groupCommunicator("pp", mesh_));
    receiveSecondsAtStart = stages->stats().receiveSeconds;
  }
  const Clock::time_point runStart = Clock::now();
  double smoothedRate = 0;
  for (int64_t step = first; step <= last; ++step) {
    const Clock::time_point stepStart = Clock::now();
    sampler_->next(trainStep_->dataInput(0).mutableDataAs<int32_t>(),
                   trainStep_->dataInput(1).mutableDataAs<int32_t>());
    if (trainStep_->hasDropout()) trainStep_->setDropoutSeed(dropoutSeedForStep(seed_, step));
    auto result = trainStep_->step(context_);
    if (!result.ok()) {
      return Status::error(result.status().code(), "step %lld: %s", static_cast<long long>(step),
                           result.status().message());
    }
    step_ = step;
    outcome.lastStep = step;
    double seconds = std::chrono::duration<double>(Clock::now() - stepStart).count();
    double rate = tokensPerStep / std::max(seconds, 1e-9);
    smoothedRate = step == first ? rate : 0.9 * smoothedRate + 0.1 * rate;
    TrainProgress progress;
    progress.row = {step, result->loss, result->lr, result->gradNorm, rate, NAN};
    // An f16 gradient overflow is expected now and then: train_step skipped the update and
    // lowered the loss scale. Only a non-finite loss (the forward itself overflowed, which
    // a lower scale cannot fix) stops the run.
    bool bad = !std::isfinite(result->loss) ||
               (trainStep_->hasGradNorm() && !std::isfinite(result->gradNorm) &&
                !result->overflow);
    if (result->overflow) {
      progress.skipped = true;
      progress.notice = "step " + std::to_string(step) +
                        ": f16 gradient overflow, step skipped, loss scale " +
                        numberText(result->lossScale) + " -> " +
                        numberText(result->nextLossScale);
    }
    if (!bad && lossEntry_ && (step % options_.evalEvery == 0 || step == last)) {
      auto evalLoss = evaluate();
      if (!evalLoss.ok()) {
        return Status::error(evalLoss.status().code(), "evaluating at step %lld: %s",
                             static_cast<long long>(step), evalLoss.status().message());
      }
      progress.row.evalLoss = *evalLoss;
    }
    history_.push_back(progress.row);
    if (log_) {
      Status written = log_->write(csvRow(progress.row));
      if (!written.ok()) {
        return Status::error(
            written.code(), "%s; stopping at step %lld%s", written.message(),
            static_cast<long long>(step),
            lastCheckpoint_.empty()
                ? ""
                : (" (the last checkpoint " + lastCheckpoint_ + " is kept)").c_str());
      }
    }
    progress.lastStep = last;
    progress.smoothedTokensPerSecond = smoothedRate;
    progress.elapsedSeconds = std::chrono::duration<double>(Clock::now() - runStart).count();
    progress.etaSeconds = progress.elapsedSeconds / static_cast<double>(step - first + 1) *
                          static_cast<double>(last - step);
    progress.stopping = stopRequested_->load();
    progress.diverged = bad;
    TFC_RETURN_IF_ERROR(report(progress));
    if (bad) {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "step %lld: the loss is %s (grad norm %s); stopping without saving. "
                           "%s Try a lower --lr, a --warmup, or --grad-clip.",
                           static_cast<long long>(step), numberText(result->loss).c_str(),
                           numberText(result->gradNorm).c_str(),
                           lastGoodCheckpoint(lastCheckpoint_).c_str());
    }
    bool stopping = stopRequested_->load();
    if (world_ > 1) {
      // Data parallel: a stop (Ctrl-C, SIGTERM) may reach one rank, or all at different
      // moments of a step. Every rank must stop after the same step: one that went on would
      // wait in the next step's all-reduce for a peer that is gone. The ranks agree with a
      // one-float all-reduce of their stop flags at each step boundary (microseconds next to
      // the step's gradient all-reduces); any rank's request stops them all.
      TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
      float flag = stopping ? 1.0f : 0.0f;
      Status agreed = world->allReduce(&flag, &flag, 1, ReduceOp::kSum, "the stop flag");
      if (!agreed.ok()) {
        return Status::error(agreed.code(), "after step %lld: %s. %s", static_cast<long long>(step),
                             agreed.message(), lastGoodCheckpoint(lastCheckpoint_).c_str());
      }
      stopping = flag > 0.0f;
      if (stopping) stopRequested_->store(true);
    }
    progress.stopping = stopping;
    if (!options_.savePath.empty() &&
        (step == last || (options_.saveEvery > 0 && step % options_.saveEvery == 0) || stopping)) {
      TFC_RETURN_IF_ERROR(save());
      progress.event = TrainProgress::Event::kSaved;
      TFC_RETURN_IF_ERROR(report(progress));
      if (stopping && world_ > 1) {
        // mpirun ends the job when the first rank exits non-zero (as a stopped one does): the
        // others wait here until rank 0 has written the checkpoint of the stop.
        TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
        TFC_RETURN_IF_ERROR(world->barrier("the checkpoint of the stop"));
      }
    }
    if (stopping && step != last) {
      outcome.stopped = true;
      break;
    }
  }
  stopRequested_->store(false);  // the request is answered; a later run() starts afresh
  if (log_) {
    TFC_RETURN_IF_ERROR(log_->close());
    log_.reset();
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - runStart).count();
  if (pp_.size > 1) {
    // Every stage's share of the run spent waiting in receives (collective over the stages,
    // which all get here after the same last step).
    TFC_ASSIGN_OR_RETURN(Communicator * stages, groupCommunicator("pp", mesh_));
    float mine = static_cast<float>(
        (stages->stats().receiveSeconds - receiveSecondsAtStart) / outcome.seconds);
    std::vector<float> all(static_cast<size_t>(stages->size()));
    TFC_RETURN_IF_ERROR(stages->allGather(&mine, all.data(), 1, "the stages' waiting times"));
    outcome.stageWaits.assign(all.begin(), all.end());
  }
  return outcome;
}

}  // namespace tfc

// ------------------------------------------------------------------------------ C API

struct tfc_trainer_s {
  tfc::Trainer trainer;
};

extern "C" {

void tfc_trainer_options_initialize(tfc_trainer_options_t* out) {
  tfc::TrainerOptions defaults;
  const tfc::HyperParams& h = defaults.hyper;
  *out = tfc_trainer_options_t{};
  out->data_dtype = TFC_TOKEN_FILE_UINT16;
  out->eval_every = defaults.evalEvery;
  out->eval_batches = defaults.evalBatches;
  out->seed = defaults.seed;
  out->hyper = {h.lr,       h.minLr, h.warmup, h.schedule, h.weightDecay,
                h.gradClip, h.beta1, h.beta2,  h.eps,      h.momentum};
}

tfc_status_t tfc_trainer_create(tfc_context_t* context, const tfc_trainer_options_t* options,
                                tfc_trainer_t** out_trainer) {
  if (context == nullptr || options == nullptr || out_trainer == nullptr ||
      options->data_path == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT,
                              "tfc_trainer_create: context, options (with data_path) and "
                              "out_trainer must not be NULL")
        .release();
  }
  auto text = [](const char* value) { return value ? std::string(value) : std::string(); };
  tfc::TrainerOptions o;
  o.dataPath = options->data_path;
  o.dataDtype = options->data_dtype == TFC_TOKEN_FILE_UINT32 ? tfc::TokenFileDtype::kUint32
                                                             : tfc::TokenFileDtype::kUint16;
  o.evalDataPath = text(options->eval_data_path);
  o.evalEvery = options->eval_every;
  o.evalBatches = options->eval_batches;
  o.steps = options->steps;
  o.totalSteps = options->total_steps;
  o.seed = options->seed;
  const tfc_hyper_params_t& h = options->hyper;
  o.hyper.lr = h.lr;
  o.hyper.minLr = h.min_lr;
  o.hyper.warmup = h.warmup;
  o.hyper.schedule = h.schedule;
  o.hyper.weightDecay = h.weight_decay;
  o.hyper.gradClip = h.grad_clip;
  o.hyper.beta1 = h.beta1;
  o.hyper.beta2 = h.beta2;
  o.hyper.eps = h.eps;
  o.hyper.momentum = h.momentum;
  o.savePath = text(options->save_path);
  o.saveEvery = options->save_every;
  o.logPath = text(options->log_path);
  tfc_context_retain(context);
  auto trainer = tfc::Trainer::create(tfc::Context::adopt(context), o);
  if (!trainer.ok()) return std::move(trainer).takeStatus().release();
  *out_trainer = new tfc_trainer_s{std::move(trainer).value()};
  return nullptr;
}

void tfc_trainer_destroy(tfc_trainer_t* trainer) { delete trainer; }

tfc_status_t tfc_trainer_resume(tfc_trainer_t* trainer, const char* checkpoint_path) {
  if (trainer == nullptr || checkpoint_path == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT,
                              "tfc_trainer_resume: trainer and checkpoint_path must not be NULL")
        .release();
  }
  auto metadata = trainer->trainer.resume(checkpoint_path);
  return metadata.ok() ? nullptr : std::move(metadata).takeStatus().release();
}

int64_t tfc_trainer_step(const tfc_trainer_t* trainer) { return trainer->trainer.step(); }

tfc_status_t tfc_trainer_run(tfc_trainer_t* trainer, tfc_train_progress_callback_t callback,
                             void* user_data, bool* out_stopped) {
  if (trainer == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT, "tfc_trainer_run: trainer is NULL").release();
  }
  tfc::TrainProgressCallback onProgress;
  if (callback != nullptr) {
    onProgress = [&](const tfc::TrainProgress& p) {
      tfc_train_progress_t c{};
      c.event = p.event == tfc::TrainProgress::Event::kSaved ? TFC_TRAIN_SAVED : TFC_TRAIN_STEP;
      c.step = p.row.step;
      c.last_step = p.lastStep;
      c.loss = p.row.loss;
      c.lr = p.row.lr;
      c.grad_norm = p.row.gradNorm;
      c.tokens_per_second = p.row.tokensPerSecond;
      c.smoothed_tokens_per_second = p.smoothedTokensPerSecond;
      c.eval_loss = p.row.evalLoss;
      c.elapsed_seconds = p.elapsedSeconds;
      c.eta_seconds = p.etaSeconds;
      c.stopping = p.stopping;
      c.diverged = p.diverged;
      if (!callback(user_data, &c)) trainer->trainer.requestStop();
      return tfc::Status();
    };
  }
  auto outcome = trainer->trainer.run(onProgress);
  if (!outcome.ok()) return std::move(outcome).takeStatus().release();
  if (out_stopped != nullptr) *out_stopped = outcome->stopped;
  return nullptr;
}

void tfc_trainer_request_stop(tfc_trainer_t* trainer) { trainer->trainer.requestStop(); }

tfc_status_t tfc_trainer_save(tfc_trainer_t* trainer) {
  if (trainer == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT, "tfc_trainer_save: trainer is NULL").release();
  }
  return trainer->trainer.save().release();
}

}  // extern "C"
