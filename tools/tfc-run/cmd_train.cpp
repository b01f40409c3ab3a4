// tfc-run MODEL.so train: train a decoder-only model (gpt2, llama) compiled with
// --optimizer on a flat token file, with checkpoints, resume, a CSV log and a loss plot.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli.hpp"
#include "png_plot.hpp"
#include "print.hpp"
#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/metadata.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/trainer.hpp"
#include "train_common.hpp"
#include "weights.hpp"

namespace tfc::run {
namespace {

volatile sig_atomic_t gInterrupted = 0;
void onSignal(int) { gInterrupted = 1; }

// Test only (test/e2e/dp/check_data_parallel.py): TFC_TEST_EXIT_RANK=R and
// TFC_TEST_EXIT_AT_STEP=K make rank R die with exit code 3 right after step K, without
// saving or finalizing MPI, as a crashed rank would; the check is that the other ranks fail
// with a message instead of hanging and that the checkpoint on disk stays whole. Neither
// variable set (the normal case): nothing happens.
struct TestExit {
  int64_t rank = -1, step = -1;
};

TestExit testExitFromEnvironment() {
  TestExit out;
  const char* rank = std::getenv("TFC_TEST_EXIT_RANK");
  const char* step = std::getenv("TFC_TEST_EXIT_AT_STEP");
  if (step == nullptr || !parseInt64(step, &out.step)) return TestExit{};
  if (rank == nullptr || !parseInt64(rank, &out.rank)) out.rank = 0;
  return out;
}

Status writePlot(const std::string& path, const std::vector<TrainLogRow>& rows,
                 const std::string& title) {
  PlotSeries raw{{}, {}, {170, 200, 235}, 1, false, "raw loss"};
  PlotSeries smooth{{}, {}, {20, 80, 200}, 2, false, "smoothed loss"};
  PlotSeries eval{{}, {}, {220, 50, 40}, 2, true, "eval loss"};
  double ema = NAN;
  for (const TrainLogRow& row : rows) {
    raw.x.push_back(static_cast<double>(row.step));
    raw.y.push_back(row.loss);
    if (std::isfinite(row.loss)) ema = std::isnan(ema) ? row.loss : 0.9 * ema + 0.1 * row.loss;
    smooth.x.push_back(static_cast<double>(row.step));
    smooth.y.push_back(ema);
    if (!std::isnan(row.evalLoss)) {
      eval.x.push_back(static_cast<double>(row.step));
      eval.y.push_back(row.evalLoss);
    }
  }
  return writePlotPng(path, {raw, smooth, eval}, {title, "step", "loss"});
}

std::string parentDirectory(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool isDirectory(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool parsePositive(const Command* command, const Args& args, const char* name, int64_t* out,
                   bool allowZero = false) {
  if (!args.has(name)) return true;
  std::string text = args.get(name);
  if (!parseInt64(text, out) || *out < (allowZero ? 0 : 1)) {
    usageError(command, std::string(name) + " '" + text + "' is not " +
                            (allowZero ? "a non-negative" : "a positive") + " integer");
    return false;
  }
  return true;
}

// What the command line asks for: the trainer's options and what is the tool's own.
struct TrainSettings {
  int32_t device = 0;
  TrainerOptions trainer;
  int64_t batch = 0, seq = 0;  // --batch, --seq: 0 when not given
  int64_t threads = 0;
  uint64_t initSeed = 0;
};

// Parses and checks everything that needs no model; returns 0 or the usage error's code.
int parseTrainArgs(const Invocation& invocation, TrainSettings* settings) {
  const Command* command = invocation.command;
  const Args& args = invocation.args;
  if (!args.positional.empty()) {
    return usageError(command, "unexpected argument '" + args.positional[0] + "'");
  }
  if (!args.has("--data")) return usageError(command, "missing --data FILE (the training tokens)");
  if (!args.has("--steps")) return usageError(command, "missing --steps N (the step to reach)");
  if (!args.has("--save")) {
    return usageError(command, "missing --save CKPT.safetensors (where to write checkpoints)");
  }
  int sources = args.has("--weights") + args.has("--init-seed") + args.has("--resume");
  if (sources == 0) {
    return usageError(command, "missing --weights W.safetensors (or --init-seed S to start from "
                               "the model's initializers, or --resume CKPT.safetensors)");
  }
  if (sources > 1) {
    std::vector<std::string> given;
    for (const char* option : {"--resume", "--weights", "--init-seed"}) {
      if (args.has(option)) given.push_back(option);
    }
    return usageError(command, "only one of " + join(given, " and ") +
                                   " can be given: --resume continues a checkpoint with its "
                                   "own parameters, --weights and --init-seed start a new run");
  }
  int64_t steps = 0, totalSteps = 0, batch = 0, seq = 0, evalEvery = 100, evalBatches = 20, saveEvery = 0,
          threads = 0;
  if (!parsePositive(command, args, "--steps", &steps) ||
      !parsePositive(command, args, "--total-steps", &totalSteps) ||
      !parsePositive(command, args, "--batch", &batch) ||
      !parsePositive(command, args, "--seq", &seq) ||
      !parsePositive(command, args, "--eval-every", &evalEvery) ||
      !parsePositive(command, args, "--eval-batches", &evalBatches) ||
      !parsePositive(command, args, "--save-every", &saveEvery, true) ||
      !parsePositive(command, args, "--threads", &threads, true)) {
    return kExitUsage;
  }
  if (threads > TFC_CONTEXT_MAX_THREADS) {
    return usageError(command, "--threads '" + args.get("--threads") +
                                   "' is more than the runtime's " +
                                   std::to_string(TFC_CONTEXT_MAX_THREADS) + " threads");
  }
  if (args.has("--total-steps") && totalSteps < steps) {
    // The schedule would reach --min-lr at --total-steps and train the rest at it (0 by
    // default): almost certainly a mistake, e.g. --steps raised on resume but not this.
    return usageError(command, "--total-steps " + std::to_string(totalSteps) +
                                   " is below --steps " + std::to_string(steps) +
                                   "; the learning-rate schedule would end before the last " +
                                   std::to_string(steps - totalSteps) +
                                   " steps (give --total-steps of at least " +
                                   std::to_string(steps) + ", or leave it out)");
  }
  uint64_t seed = 1337, initSeed = 0;
  if (args.has("--seed") && !parseUint64(args.get("--seed"), &seed)) {
    return usageError(command, "--seed '" + args.get("--seed") + "' is not a non-negative integer");
  }
  if (args.has("--init-seed") && !parseUint64(args.get("--init-seed"), &initSeed)) {
    return usageError(command,
                      "--init-seed '" + args.get("--init-seed") + "' is not a non-negative integer");
  }
  TokenFileDtype dataDtype = TokenFileDtype::kUint16;
  std::string dtypeText = args.get("--data-dtype", "uint16");
  if (dtypeText == "uint32") dataDtype = TokenFileDtype::kUint32;
  else if (dtypeText != "uint16") {
    return usageError(command, "--data-dtype '" + dtypeText + "' is not uint16 or uint32");
  }
  if ((args.has("--eval-every") || args.has("--eval-batches")) && !args.has("--eval-data")) {
    return usageError(command, "--eval-every and --eval-batches need --eval-data FILE");
  }
  HyperParams hyper;
  if (!parseHyperParams(command, args, &hyper)) return kExitUsage;
  const std::string savePath = args.get("--save");
  if (!isDirectory(parentDirectory(savePath))) {
    return fail("--save " + savePath + ": the folder " + parentDirectory(savePath) +
                " does not exist");
  }
  TrainerOptions& options = settings->trainer;
  options.dataPath = args.get("--data");
  options.dataDtype = dataDtype;
  options.evalDataPath = args.get("--eval-data");
  options.evalEvery = evalEvery;
  options.evalBatches = evalBatches;
  options.steps = steps;
  options.totalSteps = totalSteps;
  options.seed = seed;
  options.hyper = hyper;
  options.savePath = savePath;
  options.saveEvery = saveEvery;
  options.logPath = args.get("--log");
  options.logLabel = "--log";
  settings->batch = batch;
  settings->seq = seq;
  settings->threads = threads;
  if (std::string bad = parseDevice(args, &settings->device); !bad.empty()) {
    return usageError(command, bad);
  }
  settings->initSeed = initSeed;
  return 0;
}

// Checks the model's train_step against the command line before anything is loaded, to say
// which options to change (or how to recompile); returns 0 or the failure's exit code.
int checkTrainStep(const Invocation& invocation, const Artifact& artifact,
                   const TrainSettings& settings) {
  const Args& args = invocation.args;
  const int64_t batch = settings.batch, seq = settings.seq;
  {
    auto trainStep = TrainStep::create(artifact);
    if (!trainStep.ok()) return fail(trainStep.status());
    Status status = checkOptimizerOptions(*trainStep, args, std::string(artifact.path()));
    if (!status.ok()) return fail(status);
    const std::string inputNames = join(trainStep->dataInputNames());
    if (trainStep->numDataInputs() != 2 || inputNames != "tokens, targets" ||
        trainStep->dataDesc(0).dtype != TFC_ABI_I32 || trainStep->dataDesc(1).dtype != TFC_ABI_I32 ||
        trainStep->dataDesc(0).rank != 2 ||
        shapeOf(trainStep->dataDesc(0)) != shapeOf(trainStep->dataDesc(1))) {
      std::string hint = inputNames.find("src") != std::string::npos
                             ? "; for the encoder-decoder model use `tfc-seed-experiment " +
                                   invocation.model + "`"
                             : "";
      return fail(invocation.model + ": train reads a token stream for decoder-only models, whose "
                  "train_step takes tokens and targets (I32 [B, T]); this one takes " +
                  inputNames + hint);
    }
    const int64_t B = trainStep->dataDesc(0).shape[0], T = trainStep->dataDesc(0).shape[1];
    if ((batch != 0 && batch != B) || (seq != 0 && seq != T)) {
      std::string name = modelName(artifact);
      if (name.empty()) name = "gpt2";
      return fail(invocation.model + " was compiled for --batch " + std::to_string(B) +
                  " --seq " + std::to_string(T) + " (train_step takes tokens I32 [" +
                  std::to_string(B) + ", " + std::to_string(T) +
                  "]); shapes are static, so retrace and recompile for batch " +
                  std::to_string(batch ? batch : B) + " and seq " + std::to_string(seq ? seq : T) +
                  ": tfc-trace " + name + " --set batch=" + std::to_string(batch ? batch : B) +
                  " --set seq=" + std::to_string(seq ? seq : T) +
                  " -o model.mlir && tfc model.mlir --optimizer=" + trainStep->optimizerName() +
                  " -o model.so");
    }
  }
  return 0;
}

// The progress lines on stderr: one per step, or one rewritten line on a terminal.
class ProgressPrinter {
 public:
  // |plotPath| ("" for none) is rewritten with |plotTitle| at each save.
  ProgressPrinter(const Trainer& trainer, const std::string& plotPath, const std::string& plotTitle)
      : trainer_(trainer), plotPath_(plotPath), plotTitle_(plotTitle),
        tty_(::isatty(STDERR_FILENO) == 1) {}

  // Ends a rewritten line, so that what follows starts on its own.
  void end() {
    if (open_) std::fputc('\n', stderr);
    open_ = false;
  }

  // The trainer's progress callback; an error (writing the plot) stops the run.
  Status report(const TrainProgress& progress) {
    if (trainer_.rank() != 0) return Status();  // data parallel: rank 0 speaks and plots
    const TrainLogRow& row = progress.row;
    const int64_t steps = progress.lastStep;
    if (progress.event == TrainProgress::Event::kSaved) {
      if (!plotPath_.empty()) {
        Status plotted = writePlot(plotPath_, trainer_.history(), plotTitle_);
        if (!plotted.ok()) return plotted;
      }
      if (!tty_ || row.step == steps || progress.stopping) {
        end();
        print(stderr, "saved {} at step {}\n", trainer_.options().savePath, row.step);
      }
      return Status();
    }
    if (!progress.notice.empty()) {
      end();
      print(stderr, "{}\n", progress.notice);
    }
    std::string text = fmt::format(
        "step {}/{}  loss {:.4f}  lr {:.2e}  grad norm {:.3f}  {} tok/s  ETA {}", row.step, steps,
        row.loss, row.lr, row.gradNorm, formatRate(progress.smoothedTokensPerSecond),
        formatDuration(progress.etaSeconds));
    if (!std::isnan(row.evalLoss)) text += "  eval loss " + formatLogNumber(row.evalLoss);
    if (tty_) {
      print(stderr, "\r\033[K{}", text);
      open_ = true;
      if (!std::isnan(row.evalLoss)) end();
    } else {
      print(stderr, "{}\n", text);
    }
    if (progress.diverged && !plotPath_.empty()) {
      (void)writePlot(plotPath_, trainer_.history(), plotTitle_);
    }
    return Status();
  }

 private:
  const Trainer& trainer_;
  std::string plotPath_, plotTitle_;
  bool tty_;
  bool open_ = false;  // a \r line is on screen
};

// Data parallel: every rank stopped after the same step (Trainer::run agrees on it); each
// says whether the signal was its own, rank 0 where the checkpoint is.
void printStopped(const Trainer& trainer, const TrainOutcome& outcome,
                  const std::string& savePath) {
  print(stderr, "rank {} of {}: {} at step {}{}\n", trainer.rank(), trainer.worldSize(),
        gInterrupted ? "interrupted" : "stopped with the other ranks (one was interrupted)",
        outcome.lastStep,
        trainer.rank() == 0 ? "; rank 0 saved the checkpoint: resume with mpirun -np " +
                                  std::to_string(trainer.worldSize()) + " ... --resume " +
                                  savePath
                            : "");
  std::fflush(stderr);
}

int runTrain(const Invocation& invocation) {
  const Args& args = invocation.args;
  TrainSettings settings;
  if (int code = parseTrainArgs(invocation, &settings)) return code;
  const TrainerOptions& options = settings.trainer;
  const int64_t steps = options.steps;
  const std::string& savePath = options.savePath;
  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  if (int code = checkTrainStep(invocation, *artifact, settings)) return code;

  // Parameters, context, data and the trainer.
  auto params = Params::create(*artifact);
  if (!params.ok()) return fail(params.status());
  tfc_context_options_t contextOptions;
  tfc_context_options_initialize(&contextOptions);
  contextOptions.num_threads = static_cast<int32_t>(settings.threads);
  contextOptions.device = settings.device;
  auto context = Context::create(*artifact, *params, &contextOptions);
  if (!context.ok()) return fail(context.status());
  auto trainer = Trainer::create(*context, options);
  if (!trainer.ok()) return fail(trainer.status());
  if (args.has("--resume")) {
    std::string resumePath = args.get("--resume");
    auto metadata = trainer->resume(resumePath);
    if (!metadata.ok()) return fail(metadata.status());
    auto savedSeed = metadata->find("sampler.seed");
    std::string saved = savedSeed == metadata->end() ? "" : savedSeed->second;
    if (args.has("--seed") && saved != std::to_string(options.seed)) {
      print(stderr,
            "tfc-run: warning: --seed {} differs from the checkpoint's sampler seed {}; the "
            "sampler continues from the checkpoint\n",
            options.seed, saved);
    }
    print(stderr, "resuming from {} at step {}\n", resumePath, trainer->step());
  } else {
    // A tensor-parallel model's ranks each keep their slice of the whole weights.
    Status status = args.has("--weights") ? loadWeightsNoting(args.get("--weights"), *params, trainingWeightsOptions())
                                          : params->init(settings.initSeed);
    if (!status.ok()) return fail(status);
  }
  if (trainer->step() >= steps) {
    print("the checkpoint is at step {}, which is not before --steps {}; nothing to do (give a "
          "larger --steps to train on)\n",
          trainer->step(), steps);
    return 0;
  }

  const int64_t B = trainer->batch(), T = trainer->seq();
  const HyperParams& hyper = options.hyper;
  uint64_t paramCount = 0;
  for (int32_t i = 0; i < artifact->paramCount(); ++i) {
    uint64_t count = 1;
    for (int32_t d = 0; d < artifact->param(i).rank; ++d) count *= artifact->param(i).shape[d];
    paramCount += count;
  }
  const bool speaks = trainer->rank() == 0;  // data parallel: rank 0 alone prints
  const int64_t dp = trainer->dataParallelSize(), tp = trainer->tensorParallelSize(),
                pp = trainer->pipelineParallelSize();
  if (speaks && dp > 1) {
    print(stderr,
          "data parallel: {} replicas{}{}, each reads its slice of the global batch {} x {} = "
          "{} rows\n",
          dp, pp > 1 ? fmt::format(" of {} pipeline stages", pp) : "",
          tp > 1 ? fmt::format(" of {} tensor-parallel processes", tp) : "", dp, trainer->batch(),
          dp * trainer->batch());
  }
  // What each stage's ranks (or each expert-parallel rank) hold of the parameters and the
  // training state (their layers' or experts'; the rest has no storage there), measured on
  // every rank and gathered over the stages (the ranks).
  const int64_t ep = trainer->expertParallelSize();
  std::vector<float> heldBytes;
  uint64_t modelBytes = 0;
  if (pp > 1 || ep > 1) {
    float held = 0;
    for (int32_t i = 0; i < artifact->paramCount(); ++i) {
      const uint64_t bytes = tfc_tensor_desc_byte_size(&artifact->param(i));
      modelBytes += bytes;
      if (params->isHeld(i)) held += static_cast<float>(bytes);
    }
    for (int32_t i = 0; i < artifact->stateCount(); ++i) {
      auto ref = context->state(i);
      if (!ref.ok()) return fail(ref.status());
      modelBytes += tfc_tensor_desc_byte_size(&artifact->state(i));
      held += static_cast<float>(ref->byte_size);
    }
    auto stages = pp > 1 ? groupCommunicator("pp", trainer->mesh()) : worldCommunicator();
    if (!stages.ok()) return fail(stages.status());
    heldBytes.resize(static_cast<size_t>((*stages)->size()));
    Status gathered = (*stages)->allGather(&held, heldBytes.data(), 1, "the bytes each stage holds");
    if (!gathered.ok()) return fail(gathered);
  }
  if (speaks && pp > 1) {
    print(stderr, "pipeline parallel: {} stages{}\n", pp,
          tp > 1   ? fmt::format(", each split over {} tensor-parallel processes", tp)
          : dp > 1 ? fmt::format(", rank s runs stage s of its replica ({} x {} = {} in all)", dp,
                                 pp, trainer->worldSize())
                   : std::string(", rank s runs stage s"));
  }
  if (speaks && ep > 1) {
    print(stderr, "expert parallel: {} ranks, each holding 1/{} of every layer's experts and "
                  "computing them on every rank's tokens\n",
          ep, ep);
  }
  if (speaks && (pp > 1 || ep > 1)) {
    std::string perStage;
    for (float bytes : heldBytes) {
      perStage += (perStage.empty() ? "" : ", ") + formatBytes(static_cast<uint64_t>(bytes));
    }
    print(stderr, "{}: the {} hold {} of the {} of parameters and state\n",
          pp > 1 ? "pipeline" : "experts", pp > 1 ? "stages' ranks" : "ranks", perStage,
          formatBytes(modelBytes));
  }
  if (speaks && tp > 1) {
    print(stderr, "tensor parallel: {} processes split each layer{}\n", tp,
          dp > 1 && pp == 1 ? fmt::format(" ({} x {} = {} in all)", dp, tp, trainer->worldSize())
                            : "");
  }
  if (speaks && trainer->mesh().dimensions() == 3) {
    print(stderr, "process mesh {}: world rank (d x {} + s) x {} + t is slice t of stage s of "
                  "replica d ({} processes)\n",
          trainer->mesh().flags(), pp, tp, trainer->worldSize());
  } else if (speaks && pp > 1 && tp > 1) {
    print(stderr, "process mesh {}: world rank s x {} + t is slice t of stage s ({} processes)\n",
          trainer->mesh().flags(), tp, trainer->worldSize());
  }
  if (speaks) print(stderr,
        "training {}: {}, {} parameters, batch {} x seq {} = {} tokens/step, steps {}..{}\n"
        "  data {} ({}), sampler seed {}\n"
        "  lr {:g} ({}, warm-up {:g}, min {:g}), weight decay {:g}, grad clip {:g}\n",
        invocation.model, trainer->trainStep().optimizerName(), paramCount, B, T, B * T,
        trainer->step() + 1, steps, trainer->data().path(), trainer->data().describe(),
        trainer->seed(), hyper.lr, scheduleName(hyper.schedule), hyper.warmup, hyper.minLr,
        hyper.weightDecay, hyper.gradClip);

  // The plot's title names the model and the run (the checkpoint it writes).
  auto fileName = [](const std::string& path) { return path.substr(path.find_last_of('/') + 1); };
  ProgressPrinter printer(*trainer, args.get("--plot"),
                          "training loss: " + fileName(invocation.model) + " -> " +
                              fileName(savePath));
  const TestExit testExit = testExitFromEnvironment();
  auto onProgress = [&](const TrainProgress& progress) {
    Status status = printer.report(progress);
    if (gInterrupted) trainer->requestStop();
    if (progress.event == TrainProgress::Event::kStep && testExit.step == progress.row.step &&
        testExit.rank == trainer->rank()) {
      // Test only: dies as a crashed rank would (no save, no MPI_Finalize, no unwinding).
      print(stderr, "tfc-run: rank {} exits after step {} (TFC_TEST_EXIT_AT_STEP, test only)\n",
            trainer->rank(), progress.row.step);
      std::fflush(stderr);
      ::_exit(3);
    }
    return status;
  };

  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction oldInt {}, oldTerm {}, oldUsr1 {};
  sigaction(SIGINT, &action, &oldInt);
  sigaction(SIGTERM, &action, &oldTerm);
  // SIGUSR1 too: Open MPI's mpirun forwards it to every rank (SIGINT and SIGTERM it turns into
  // a kill of the job a second later), and batch schedulers send it before a time limit
  // (SLURM's --signal=USR1@60), so `kill -USR1 <mpirun's pid>` stops every rank cleanly.
  sigaction(SIGUSR1, &action, &oldUsr1);
  // A file-size limit (ulimit -f) makes the write fail with EFBIG instead of killing us.
  ::signal(SIGXFSZ, SIG_IGN);
  auto outcome = trainer->run(onProgress);
  if (outcome.ok() && outcome->stopped && trainer->worldSize() > 1) {
    // mpirun ends the whole job as soon as one rank exits non-zero: no rank leaves before
    // every one has printed why it stops (the handlers stay installed until then, so a
    // second signal does not kill a rank that waits here).
    printStopped(*trainer, *outcome, savePath);
    auto world = worldCommunicator();
    if (world.ok()) (void)(*world)->barrier("the end of an interrupted run");
    return 130;
  }
  sigaction(SIGINT, &oldInt, nullptr);
  sigaction(SIGTERM, &oldTerm, nullptr);
  sigaction(SIGUSR1, &oldUsr1, nullptr);
  if (!outcome.ok()) {
    printer.end();
    return fail(outcome.status());
  }
  if (outcome->stopped) {
    printer.end();
    print(stderr, "interrupted at step {}; resume with --resume {}\n", outcome->lastStep,
          savePath);
    return 130;
  }
  if (!speaks) return 0;
  const TrainLogRow& final = trainer->history().back();
  print("trained steps {}..{} in {} ({} tok/s): final loss {:.4f}{}\n", outcome->firstStep, steps,
        formatDuration(outcome->seconds),
        formatRate(static_cast<double>((steps - outcome->firstStep + 1) * B * T *
                                       trainer->dataParallelSize()) /
                   outcome->seconds),
        final.loss,
        std::isnan(final.evalLoss) ? "" : ", eval loss " + formatLogNumber(final.evalLoss));
  if (!outcome->stageWaits.empty()) {
    // The measured bubble: what each stage waited for the others, next to what a balanced
    // pipeline waits, (S-1)/(M+S-1) (tfc --report's pipeline.bubble_balanced).
    const double S = static_cast<double>(outcome->stageWaits.size());
    const double M = static_cast<double>(
        metadataInt(std::string(artifact->metadataJson()), "microbatches").value_or(1));
    std::string waits;
    double mean = 0;
    for (double w : outcome->stageWaits) {
      waits += fmt::format("{}{:.0f}%", waits.empty() ? "" : ", ", 100 * w);
      mean += w / S;
    }
    print("pipeline: the stages waited {} of the run for each other (mean {:.0f}%; a balanced "
          "pipeline's bubble (S-1)/(M+S-1) = {:.0f}%)\n",
          waits, 100 * mean, 100 * (S - 1) / (M + S - 1));
  }
  print("checkpoint: {}\n", savePath);
  if (!options.logPath.empty()) print("log: {}\n", options.logPath);
  if (args.has("--plot")) print("plot: {}\n", args.get("--plot"));
  return 0;
}

std::vector<OptionSpec> trainOptions() {
  std::vector<OptionSpec> options = {
      inputOption("--weights"),               {"--init-seed", nullptr, true, false},
      inputOption("--data"),                  {"--data-dtype", nullptr, true, false},
      {"--steps", nullptr, true, false},      {"--total-steps", nullptr, true, false},
      {"--batch", nullptr, true, false},
      {"--seq", nullptr, true, false},        {"--seed", nullptr, true, false},
      inputOption("--eval-data"),             {"--eval-every", nullptr, true, false},
      // --save over --resume is how a run continues (the checkpoint is replaced atomically).
      {"--eval-batches", nullptr, true, false}, outputOption("--save", nullptr, "--resume"),
      {"--save-every", nullptr, true, false}, inputOption("--resume"),
      outputOption("--log"),                  outputOption("--plot"),
      {"--threads", "-j", true, false},
      {"--device", nullptr, true, false},
  };
  for (const OptionSpec& option : hyperParamOptions()) options.push_back(option);
  return options;
}

const std::string& trainHelp() {
  static const std::string text =
      std::string(R"(usage: tfc-run MODEL.so train (--weights W.safetensors|DIR | --init-seed S | --resume CKPT)
                          --data FILE --steps N --save CKPT.safetensors
                          [--batch B --seq T] [hyper-parameters] [--seed S]
                          [--eval-data FILE [--eval-every K] [--eval-batches M]]
                          [--save-every K] [--log train.csv] [--plot loss.png] [--threads N]
                          [--device N]

Trains a decoder-only model (gpt2, llama) compiled with an optimizer
(`tfc model.mlir --optimizer=adamw -o model.so`, or sgd) on a flat token file. Each step
draws a batch as nanoGPT does (B random offsets i in [0, len - T - 1) from a seeded
generator; x = data[i:i+T], y = data[i+1:i+T+1]) and calls the compiled train_step
(forward, loss, backward, clipping, optimizer, learning-rate schedule).

Data: a headerless little-endian token file (nanoGPT's train.bin: uint16, or uint32 with
--data-dtype uint32), an llm.c .bin (recognized by its header's magic 20240520), or a 1-D
integer .npy. Every token id must be below the model's vocabulary size.

Checkpoints are one .safetensors file: the parameters under their own names, the
optimizer state and step counter under "state.<name>", and the step, the sampler's
position, the model's hash and metadata. They are written atomically, so a failed or
interrupted save never destroys the previous one. --resume continues bit-identically to an
uninterrupted run (with the same --total-steps, which defaults to --steps: the schedule
decays to --min-lr at that step); --steps is the step to reach, not a count. A NaN or infinite loss stops
the run without saving (exit 1); Ctrl-C (SIGINT, SIGTERM or SIGUSR1) saves at the current
step and exits (130).

Data parallel (`tfc --dp=N`, `mpirun -np N tfc-run model.so train ...`): each rank reads its
slice of a global batch of N x B rows; rank 0 alone prints, logs and saves. SIGINT, SIGTERM
or SIGUSR1 to any rank stops every rank after the same step (they agree at each step), rank
0 saves and all exit 130. To stop the whole job, send SIGUSR1 to mpirun, which forwards it
to every rank (Ctrl-C on mpirun makes it kill the ranks a second later). A rank that dies
ends the job (mpirun), or the others fail after TFC_COMM_TIMEOUT_S seconds (default 300)
naming the collective. Tensor parallel (`tfc --tp=M`, `mpirun -np M`): the M ranks split
each layer and read the same batch. Both (`tfc --dp=N --tp=M`, `mpirun -np N*M`): rank
d*M + t holds slice t of replica d, which reads slice d of the global batch of N x B rows.

options:
  --weights FILE|DIR  start from these parameters: a .safetensors file of the model's
                      names and dtypes, or a Hugging Face checkpoint directory (shards,
                      dtypes converted; see `tfc-run help call`) to fine-tune
  --init-seed S       start from the model's initializers with seed S
  --resume CKPT       continue from a checkpoint of this model
  --data FILE         training tokens
  --data-dtype T      uint16 (default) or uint32, for headerless .bin files
  --steps N           train up to step N
  --total-steps N     the length of the learning-rate schedule (default: --steps; not
                      below --steps); give the same value to every part of a run that is
                      trained in pieces
  --batch B --seq T   must equal the compiled batch and sequence length (checked)
  --seed S            seed of the batch sampler (default 1337)
  --eval-data FILE    held-out tokens: the mean loss of --eval-batches batches (default
                      20; the same batches each time) every --eval-every steps (default
                      100) and at the last step
  --save CKPT         the checkpoint to write at the last step (and every --save-every K
                      steps)
  --save-every K      also save every K steps (default 0: only at the last step and on
                      Ctrl-C)
  --log FILE.csv      step,loss,lr,grad_norm,tokens_per_s,eval_loss per step
  --plot FILE.png     the loss curve (raw, smoothed, eval), rewritten with each checkpoint
  -j, --threads N     threads for parallel kernels (default 0 = all cores)
  --device N          the GPU that runs a CUDA artifact (default 0; under mpirun
                      the node-local rank modulo the GPUs)
hyper-parameters (0-d inputs of train_step):
)") + hyperParamHelp(HyperParams{}) +
      R"(
examples:
  tfc-trace gpt2 --set batch=8 --set seq=64 -o gpt2.mlir
  tfc gpt2.mlir --optimizer=adamw -o gpt2.so
  tfc-run gpt2.so train --init-seed 0 --data train.bin --steps 2000 --batch 8 --seq 64 \
      --lr 6e-4 --warmup 100 --schedule cosine --min-lr 6e-5 --save ckpt.safetensors \
      --save-every 200 --eval-data val.bin --log train.csv --plot loss.png
  tfc-run gpt2.so train --resume ckpt.safetensors --data train.bin --steps 4000 \
      --save ckpt.safetensors
)";
  return text;
}

}  // namespace

const Command kTrainCommand = {
    "train",
    "train a decoder-only model on a token file (checkpoints, resume, log, plot)",
    trainHelp().c_str(),
    true,
    trainOptions(),
    runTrain,
};

}  // namespace tfc::run
