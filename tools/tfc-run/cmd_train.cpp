// tfc-run MODEL.so train: train a decoder-only model (gpt2, llama) compiled with
// --optimizer on a flat token file, with checkpoints, resume, a CSV log and a loss plot.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "checkpoint.hpp"
#include "cli.hpp"
#include "data_loader.hpp"
#include "png_plot.hpp"
#include "tfc/runtime/runtime.hpp"
#include "train_common.hpp"

namespace tfc::run {
namespace {

volatile sig_atomic_t gInterrupted = 0;
void onSignal(int) { gInterrupted = 1; }

struct LogRow {
  int64_t step;
  double loss, lr, gradNorm, tokensPerSecond, evalLoss;  // evalLoss NaN when not evaluated
};

std::string csvNumber(double value) {
  if (std::isnan(value)) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.7g", value);
  return buffer;
}

std::string csvRow(const LogRow& row) {
  return std::to_string(row.step) + "," + csvNumber(row.loss) + "," + csvNumber(row.lr) + "," +
         csvNumber(row.gradNorm) + "," + csvNumber(row.tokensPerSecond) + "," +
         csvNumber(row.evalLoss) + "\n";
}

// "nan", "inf", "-inf" or the value, for messages.
std::string numberText(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

// The name of the first f32 parameter or state tensor holding a NaN or an infinity, or "".
std::string firstNonFinite(const Artifact& artifact, const Params& params, const Context& context) {
  auto scan = [](const tfc_tensor_ref_t& ref) {
    if (ref.dtype != TFC_DTYPE_F32) return true;
    const float* values = static_cast<const float*>(ref.data);
    for (size_t i = 0; i < ref.byte_size / sizeof(float); ++i) {
      if (!std::isfinite(values[i])) return false;
    }
    return true;
  };
  for (int32_t i = 0; i < artifact.paramCount(); ++i) {
    auto ref = params.tensor(i);
    if (ref.ok() && !scan(*ref)) return artifact.param(i).name;
  }
  for (int32_t i = 0; i < artifact.stateCount(); ++i) {
    auto ref = context.state(i);
    if (ref.ok() && !scan(*ref)) return std::string(kStatePrefix) + artifact.state(i).name;
  }
  return "";
}

constexpr const char* kCsvHeader = "step,loss,lr,grad_norm,tokens_per_s,eval_loss\n";

// Rows of an existing log up to |lastStep| (for a resumed run's log and plot).
std::vector<LogRow> readLog(const std::string& path, int64_t lastStep) {
  std::vector<LogRow> rows;
  // Only a regular file holds earlier rows: a device such as /dev/full or /dev/zero reads
  // as an endless line of NUL bytes.
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return rows;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;
    std::vector<std::string> fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, ',')) fields.push_back(field);
    while (fields.size() < 6) fields.push_back("");
    auto number = [](const std::string& text) { return text.empty() ? NAN : std::atof(text.c_str()); };
    LogRow row{std::atoll(fields[0].c_str()), number(fields[1]), number(fields[2]),
               number(fields[3]), number(fields[4]), number(fields[5])};
    if (row.step <= lastStep) rows.push_back(row);
  }
  return rows;
}

Status writePlot(const std::string& path, const std::vector<LogRow>& rows,
                 const std::string& title = "training loss") {
  PlotSeries raw{{}, {}, {170, 200, 235}, 1, false, "raw loss"};
  PlotSeries smooth{{}, {}, {20, 80, 200}, 2, false, "smoothed loss"};
  PlotSeries eval{{}, {}, {220, 50, 40}, 2, true, "eval loss"};
  double ema = NAN;
  for (const LogRow& row : rows) {
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

int runTrain(const Invocation& invocation) {
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

  // The model and its training entry.
  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  auto runner = TrainStepRunner::create(*artifact, &args);
  if (!runner.ok()) return fail(runner.status());
  const auto& dataInputs = runner->dataInputs();
  auto inputNames = [&] {
    std::vector<std::string> names;
    for (const tfc_tensor_desc_t* desc : dataInputs) names.push_back(desc->name);
    return join(names);
  };
  if (dataInputs.size() != 2 || std::string(dataInputs[0]->name) != "tokens" ||
      std::string(dataInputs[1]->name) != "targets" || dataInputs[0]->dtype != TFC_ABI_I32 ||
      dataInputs[1]->dtype != TFC_ABI_I32 || dataInputs[0]->rank != 2 ||
      shapeOf(*dataInputs[0]) != shapeOf(*dataInputs[1])) {
    std::string hint = inputNames().find("src") != std::string::npos
                           ? "; for the encoder-decoder model use `tfc-run " + invocation.model +
                                 " seed-experiment`"
                           : "";
    return fail(invocation.model + ": train reads a token stream for decoder-only models, whose "
                "train_step takes tokens and targets (I32 [B, T]); this one takes " +
                inputNames() + hint);
  }
  const int64_t B = dataInputs[0]->shape[0], T = dataInputs[0]->shape[1];
  if ((batch != 0 && batch != B) || (seq != 0 && seq != T)) {
    std::string name = modelName(*artifact);
    if (name.empty()) name = "gpt2";
    return fail(invocation.model + " was compiled for --batch " + std::to_string(B) +
                " --seq " + std::to_string(T) + " (train_step takes tokens I32 [" +
                std::to_string(B) + ", " + std::to_string(T) +
                "]); shapes are static, so retrace and recompile for batch " +
                std::to_string(batch ? batch : B) + " and seq " + std::to_string(seq ? seq : T) +
                ": tfc-trace " + name + " --set batch=" + std::to_string(batch ? batch : B) +
                " --set seq=" + std::to_string(seq ? seq : T) +
                " -o model.mlir && tfc model.mlir --optimizer=" + runner->optimizerName() +
                " -o model.so");
  }
  const int64_t vocab = modelVocabSize(*artifact);

  // Data.
  auto data = TokenData::open(args.get("--data"), dataDtype);
  if (!data.ok()) return fail(data.status());
  Status status = data->checkLength(T);
  if (!status.ok()) return fail(status);
  if (vocab > 0) {
    status = data->checkVocab(vocab);
    if (!status.ok()) return fail(status);
  }
  std::optional<TokenData> evalData;
  std::optional<LossEvaluator> evaluator;
  if (args.has("--eval-data")) {
    auto opened = TokenData::open(args.get("--eval-data"), dataDtype);
    if (!opened.ok()) return fail(opened.status());
    status = opened->checkLength(T);
    if (!status.ok()) return fail(status);
    if (vocab > 0) {
      status = opened->checkVocab(vocab);
      if (!status.ok()) return fail(status);
    }
    evalData.emplace(std::move(opened).value());
    auto created = LossEvaluator::create(*artifact, dataInputs);
    if (!created.ok()) return fail(created.status());
    evaluator.emplace(std::move(created).value());
  }

  // Parameters, state and the sampler's position.
  auto params = Params::create(*artifact);
  if (!params.ok()) return fail(params.status());
  tfc_context_options_t contextOptions;
  tfc_context_options_initialize(&contextOptions);
  contextOptions.num_threads = static_cast<int32_t>(threads);
  auto context = Context::create(*artifact, *params, &contextOptions);
  if (!context.ok()) return fail(context.status());
  BatchSampler sampler(&*data, B, T, seed);
  int64_t startStep = 0;
  std::string lastCheckpoint;  // "" when none exists yet
  if (args.has("--resume")) {
    std::string resumePath = args.get("--resume");
    auto metadata = loadCheckpoint(resumePath, *artifact, *params, *context);
    if (!metadata.ok()) return fail(metadata.status());
    auto field = [&](const char* key) -> std::string {
      auto it = metadata->find(key);
      return it == metadata->end() ? "" : it->second;
    };
    uint64_t rngState = 0, drawn = 0;
    if (!parseInt64(field("step"), &startStep) || startStep < 0 ||
        !parseUint64(field("sampler.rng_state"), &rngState) ||
        !parseUint64(field("sampler.batches"), &drawn)) {
      return fail(resumePath + ": the checkpoint's metadata lacks a valid step or sampler "
                               "position (step, sampler.rng_state, sampler.batches)");
    }
    if (field("batch") != std::to_string(B) || field("seq") != std::to_string(T)) {
      return fail(resumePath + ": written with batch " + field("batch") + " and seq " +
                  field("seq") + "; this model trains with " + std::to_string(B) + " and " +
                  std::to_string(T));
    }
    if (args.has("--seed") && field("sampler.seed") != std::to_string(seed)) {
      std::fprintf(stderr, "tfc-run: warning: --seed %" PRIu64 " differs from the checkpoint's "
                           "sampler seed %s; the sampler continues from the checkpoint\n",
                   seed, field("sampler.seed").c_str());
    }
    // Dropout masks follow the checkpoint's seed too, so a resumed run draws
    // what the uninterrupted one would have.
    uint64_t savedSeed = 0;
    if (parseUint64(field("sampler.seed"), &savedSeed)) seed = savedSeed;
    for (int32_t i = 0; i < artifact->stateCount(); ++i) {
      const tfc_tensor_desc_t& desc = artifact->state(i);
      if (std::string(desc.name) == "train.step" && desc.dtype == TFC_ABI_I64 && desc.rank == 0) {
        auto ref = context->state(i);
        int64_t counter = 0;
        if (ref.ok()) std::memcpy(&counter, ref->data, sizeof(counter));
        if (counter != startStep) {
          return fail(resumePath + ": its metadata says step " + std::to_string(startStep) +
                      " but its state.train.step is " + std::to_string(counter));
        }
      }
    }
    sampler.restore(rngState, drawn);
    lastCheckpoint = resumePath;
    std::fprintf(stderr, "resuming from %s at step %" PRId64 "\n", resumePath.c_str(), startStep);
  } else if (args.has("--weights")) {
    status = params->loadSafetensors(args.get("--weights"));
    if (!status.ok()) return fail(status);
  } else {
    status = params->init(initSeed);
    if (!status.ok()) return fail(status);
  }
  if (startStep >= steps) {
    std::printf("the checkpoint is at step %" PRId64 ", which is not before --steps %" PRId64
                "; nothing to do (give a larger --steps to train on)\n",
                startStep, steps);
    return 0;
  }
  hyper.totalSteps = static_cast<double>(totalSteps ? totalSteps : steps);
  runner->setHyperParams(hyper);

  // The plot's title names the model and the run (the checkpoint it writes).
  auto fileName = [](const std::string& path) { return path.substr(path.find_last_of('/') + 1); };
  const std::string plotTitle =
      "training loss: " + fileName(invocation.model) + " -> " + fileName(savePath);

  // The log: a fresh file, or on resume the earlier rows up to the checkpoint's step.
  std::vector<LogRow> history;
  std::optional<TextOutputFile> log;
  const std::string logPath = args.get("--log");
  if (!logPath.empty()) {
    if (args.has("--resume")) history = readLog(logPath, startStep);
    auto opened = TextOutputFile::open(logPath, "--log");
    if (!opened.ok()) return fail(opened.status());
    log.emplace(std::move(opened).value());
    std::string text = kCsvHeader;
    for (const LogRow& row : history) text += csvRow(row);
    status = log->write(text);
    if (!status.ok()) return fail(status);
  }

  uint64_t paramCount = 0;
  for (int32_t i = 0; i < artifact->paramCount(); ++i) {
    uint64_t count = 1;
    for (int32_t d = 0; d < artifact->param(i).rank; ++d) count *= artifact->param(i).shape[d];
    paramCount += count;
  }
  std::fprintf(stderr,
               "training %s: %s, %" PRIu64 " parameters, batch %" PRId64 " x seq %" PRId64
               " = %" PRId64 " tokens/step, steps %" PRId64 "..%" PRId64 "\n"
               "  data %s (%s), sampler seed %" PRIu64 "\n"
               "  lr %g (%s, warm-up %g, min %g), weight decay %g, grad clip %g\n",
               invocation.model.c_str(), runner->optimizerName(), paramCount, B, T, B * T,
               startStep + 1, steps, data->path().c_str(), data->describe().c_str(), seed,
               hyper.lr, scheduleName(hyper.schedule), hyper.warmup, hyper.minLr,
               hyper.weightDecay, hyper.gradClip);

  auto metadataFor = [&](int64_t step) {
    char rng[32];
    std::snprintf(rng, sizeof(rng), "%" PRIu64, sampler.rngState());
    std::map<std::string, std::string> metadata = {
        {"step", std::to_string(step)},
        {"sampler.rng_state", rng},
        {"sampler.batches", std::to_string(sampler.batchesDrawn())},
        {"sampler.seed", std::to_string(seed)},
        {"data", data->path()},
        {"batch", std::to_string(B)},
        {"seq", std::to_string(T)},
        {"optimizer", runner->optimizerName()},
        {"total_steps", std::to_string(totalSteps ? totalSteps : steps)},
    };
    char hyperText[512];
    std::snprintf(hyperText, sizeof(hyperText),
                  "{\"lr\": %g, \"min_lr\": %g, \"warmup\": %g, \"schedule\": \"%s\", "
                  "\"weight_decay\": %g, \"grad_clip\": %g, \"beta1\": %g, \"beta2\": %g, "
                  "\"eps\": %g, \"momentum\": %g}",
                  hyper.lr, hyper.minLr, hyper.warmup, scheduleName(hyper.schedule),
                  hyper.weightDecay, hyper.gradClip, hyper.beta1, hyper.beta2, hyper.eps,
                  hyper.momentum);
    metadata["hyperparameters"] = hyperText;
    return metadata;
  };
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  bool progressOpen = false;  // a \r line is on screen
  auto endProgress = [&] {
    if (progressOpen) std::fputc('\n', stderr);
    progressOpen = false;
  };
  auto save = [&](int64_t step) -> int {
    // A step can return a finite loss and still leave infinities behind (the update runs
    // after the loss): never write those over a good checkpoint.
    std::string broken = firstNonFinite(*artifact, *params, *context);
    if (!broken.empty()) {
      endProgress();
      return fail("step " + std::to_string(step) + ": '" + broken +
                  "' holds a nan or an infinity after the update; stopping without saving. " +
                  (lastCheckpoint.empty() ? std::string("No checkpoint was written in this run.")
                                          : "The last good checkpoint " + lastCheckpoint +
                                                " is kept.") +
                  " Try a lower --lr, a --warmup, or --grad-clip.");
    }
    Status saved = saveCheckpoint(savePath, *artifact, *params, *context, metadataFor(step));
    if (!saved.ok()) {
      endProgress();
      return fail(std::string("could not save the checkpoint at step ") + std::to_string(step) +
                  ": " + saved.message() +
                  (lastCheckpoint.empty() ? std::string("")
                                          : "; the previous checkpoint " + lastCheckpoint +
                                                " is unchanged"));
    }
    lastCheckpoint = savePath;
    if (args.has("--plot")) {
      Status plotted = writePlot(args.get("--plot"), history, plotTitle);
      if (!plotted.ok()) {
        endProgress();
        return fail(plotted);
      }
    }
    return 0;
  };

  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction oldInt {}, oldTerm {};
  sigaction(SIGINT, &action, &oldInt);
  sigaction(SIGTERM, &action, &oldTerm);
  // A file-size limit (ulimit -f) makes the write fail with EFBIG instead of killing us.
  ::signal(SIGXFSZ, SIG_IGN);

  std::vector<int32_t> x(static_cast<size_t>(B * T)), y(static_cast<size_t>(B * T));
  using Clock = std::chrono::steady_clock;
  const auto runStart = Clock::now();
  double smoothedRate = 0;
  for (int64_t step = startStep + 1; step <= steps; ++step) {
    auto stepStart = Clock::now();
    sampler.next(x.data(), y.data());
    TrainStepRunner::Result result;
    if (runner->hasDropout()) runner->setDropoutSeed(dropoutSeedForStep(seed, step));
    status = runner->step(*context, {x.data(), y.data()}, &result);
    if (!status.ok()) {
      endProgress();
      return fail("step " + std::to_string(step) + ": " + status.message());
    }
    double seconds = std::chrono::duration<double>(Clock::now() - stepStart).count();
    double rate = static_cast<double>(B * T) / std::max(seconds, 1e-9);
    smoothedRate = step == startStep + 1 ? rate : 0.9 * smoothedRate + 0.1 * rate;
    LogRow row{step, result.loss, result.lr, result.gradNorm, rate, NAN};
    bool bad = !std::isfinite(result.loss) ||
               (runner->hasGradNorm() && !std::isfinite(result.gradNorm));
    if (!bad && evaluator && (step % evalEvery == 0 || step == steps)) {
      BatchSampler evalSampler(&*evalData, B, T, seed ^ 0x5EEDE7A1ull);  // the same batches each time
      double sum = 0;
      for (int64_t i = 0; i < evalBatches; ++i) {
        std::vector<int32_t> ex(x.size()), ey(y.size());
        evalSampler.next(ex.data(), ey.data());
        float loss = 0;
        status = evaluator->eval(*context, {ex.data(), ey.data()}, &loss);
        if (!status.ok()) {
          endProgress();
          return fail("evaluating at step " + std::to_string(step) + ": " + status.message());
        }
        sum += loss;
      }
      row.evalLoss = sum / static_cast<double>(evalBatches);
    }
    history.push_back(row);
    if (log) {
      status = log->write(csvRow(row));
      if (!status.ok()) {
        endProgress();
        return fail(std::string(status.message()) + "; stopping at step " + std::to_string(step) +
                    (lastCheckpoint.empty() ? std::string("")
                                            : " (the last checkpoint " + lastCheckpoint +
                                                  " is kept)"));
      }
    }
    double elapsed = std::chrono::duration<double>(Clock::now() - runStart).count();
    double eta = elapsed / static_cast<double>(step - startStep) * static_cast<double>(steps - step);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "step %" PRId64 "/%" PRId64 "  loss %.4f  lr %.2e  grad norm %.3f  %s tok/s  "
                  "ETA %s",
                  step, steps, result.loss, result.lr, result.gradNorm,
                  formatRate(smoothedRate).c_str(), formatDuration(eta).c_str());
    std::string text = line;
    if (!std::isnan(row.evalLoss)) text += "  eval loss " + csvNumber(row.evalLoss);
    if (tty) {
      std::fprintf(stderr, "\r\033[K%s", text.c_str());
      progressOpen = true;
      if (!std::isnan(row.evalLoss)) endProgress();
    } else {
      std::fprintf(stderr, "%s\n", text.c_str());
    }
    if (bad) {
      endProgress();
      if (args.has("--plot")) (void)writePlot(args.get("--plot"), history, plotTitle);
      std::string values = "the loss is " + numberText(result.loss) + " (grad norm " +
                           numberText(result.gradNorm) + ")";
      return fail("step " + std::to_string(step) + ": " + values + "; stopping without saving. " +
                  (lastCheckpoint.empty()
                       ? std::string("No checkpoint was written in this run.")
                       : "The last good checkpoint " + lastCheckpoint + " is kept.") +
                  " Try a lower --lr, a --warmup, or --grad-clip.");
    }
    bool last = step == steps;
    if (last || (saveEvery > 0 && step % saveEvery == 0) || gInterrupted) {
      if (int code = save(step)) return code;
      if (!tty || last || gInterrupted) {
        endProgress();
        std::fprintf(stderr, "saved %s at step %" PRId64 "\n", savePath.c_str(), step);
      }
    }
    if (gInterrupted && !last) {
      endProgress();
      std::fprintf(stderr, "interrupted at step %" PRId64 "; resume with --resume %s\n", step,
                   savePath.c_str());
      sigaction(SIGINT, &oldInt, nullptr);
      sigaction(SIGTERM, &oldTerm, nullptr);
      return 130;
    }
  }
  sigaction(SIGINT, &oldInt, nullptr);
  sigaction(SIGTERM, &oldTerm, nullptr);
  if (log) {
    status = log->close();
    if (!status.ok()) return fail(status);
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - runStart).count();
  const LogRow& final = history.back();
  std::printf("trained steps %" PRId64 "..%" PRId64 " in %s (%s tok/s): final loss %.4f%s\n",
              startStep + 1, steps, formatDuration(elapsed).c_str(),
              formatRate(static_cast<double>((steps - startStep) * B * T) / elapsed).c_str(),
              final.loss,
              std::isnan(final.evalLoss) ? "" : (", eval loss " + csvNumber(final.evalLoss)).c_str());
  std::printf("checkpoint: %s\n", savePath.c_str());
  if (log) std::printf("log: %s\n", logPath.c_str());
  if (args.has("--plot")) std::printf("plot: %s\n", args.get("--plot").c_str());
  return 0;
}

std::vector<OptionSpec> trainOptions() {
  std::vector<OptionSpec> options = {
      {"--weights", nullptr, true, false},    {"--init-seed", nullptr, true, false},
      {"--data", nullptr, true, false},       {"--data-dtype", nullptr, true, false},
      {"--steps", nullptr, true, false},      {"--total-steps", nullptr, true, false},
      {"--batch", nullptr, true, false},
      {"--seq", nullptr, true, false},        {"--seed", nullptr, true, false},
      {"--eval-data", nullptr, true, false},  {"--eval-every", nullptr, true, false},
      {"--eval-batches", nullptr, true, false}, {"--save", nullptr, true, false},
      {"--save-every", nullptr, true, false}, {"--resume", nullptr, true, false},
      {"--log", nullptr, true, false},        {"--plot", nullptr, true, false},
      {"--threads", "-j", true, false},
  };
  for (const OptionSpec& option : hyperParamOptions()) options.push_back(option);
  return options;
}

const std::string& trainHelp() {
  static const std::string text =
      std::string(R"(usage: tfc-run MODEL.so train (--weights W.safetensors | --init-seed S | --resume CKPT)
                          --data FILE --steps N --save CKPT.safetensors
                          [--batch B --seq T] [hyper-parameters] [--seed S]
                          [--eval-data FILE [--eval-every K] [--eval-batches M]]
                          [--save-every K] [--log train.csv] [--plot loss.png] [--threads N]

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
the run without saving (exit 1); Ctrl-C saves at the current step and exits (130).

options:
  --weights FILE      start from these parameters
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
