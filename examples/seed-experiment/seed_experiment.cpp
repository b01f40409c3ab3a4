// tfc-seed-experiment MODEL.so: the seed article's experiment (docs/models/encdec.md) on the
// encoder-decoder model (`tfc-trace encdec`, compiled with --optimizer=adamw): its data
// generators, split, teacher forcing, schedule, per-epoch validation loss and greedy
// prediction of its 9 examples. An application of the runtime (TrainStep, contexts, the
// weights loader), written with tfc-run's command-line pieces (tools/tfc-run: options,
// --help, path checks, the loss plot).
#include "seed_experiment.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "cli.hpp"
#include "png_plot.hpp"
#include "print.hpp"
#include "train_common.hpp"
#include "weights.hpp"
#include "tfc/runtime/checkpoint.hpp"
#include "tfc/runtime/npy.hpp"
#include "tfc/runtime/runtime.hpp"

namespace tfc::run {
namespace {

constexpr int32_t kStart = 10;
constexpr int32_t kFinish = 11;

// CPython's random.seed(int) seeds MT19937 with init_by_array (mt19937ar.c, as copied into
// CPython's _randommodule.c), which std::seed_seq is not. This seed sequence writes
// init_by_array's state, and std::mt19937 (MT19937's own twist and tempering) draws from
// it: the standard fixes that seed(q) takes generate()'s 624 words as the state and twists
// before the first draw ([rand.eng.mers]), which is where init_by_array leaves
// genrand_int32. Checked against Python's random by test/e2e/seed-experiment.test.
class InitByArray {
 public:
  using result_type = uint32_t;
  explicit InitByArray(std::vector<uint32_t> key) : key_(std::move(key)) {}
  size_t size() const { return key_.size(); }
  template <class OutputIt>
  void param(OutputIt out) const { std::copy(key_.begin(), key_.end(), out); }
  // init_by_array for a state of end - begin words (624 for std::mt19937).
  template <class RandomIt>
  void generate(RandomIt begin, RandomIt end) const {
    const int n = static_cast<int>(end - begin);
    const int keySize = static_cast<int>(key_.size());
    std::vector<uint32_t> mt(static_cast<size_t>(n));
    mt[0] = 19650218u;  // init_genrand(19650218)
    for (int i = 1; i < n; ++i) {
      mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + static_cast<uint32_t>(i);
    }
    int i = 1, j = 0;
    for (int k = std::max(n, keySize); k; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key_[j] +
              static_cast<uint32_t>(j);
      ++i, ++j;
      if (i >= n) { mt[0] = mt[n - 1]; i = 1; }
      if (j >= keySize) j = 0;
    }
    for (int k = n - 1; k; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
      ++i;
      if (i >= n) { mt[0] = mt[n - 1]; i = 1; }
    }
    mt[0] = 0x80000000u;  // the most significant bit is 1: a non-zero initial state
    std::copy(mt.begin(), mt.end(), begin);
  }

 private:
  std::vector<uint32_t> key_;  // at least one word
};

// Python's random.Random(seed) for integer seeds: randint as CPython computes it.
class PythonRandom {
 public:
  explicit PythonRandom(uint64_t seed) {
    std::vector<uint32_t> key;  // the seed's 32-bit words, low first; [0] for 0
    do {
      key.push_back(static_cast<uint32_t>(seed));
      seed >>= 32;
    } while (seed);
    InitByArray sequence(std::move(key));
    mt_.seed(sequence);
  }
  uint64_t getrandbits(int k) { return mt_() >> (32 - k); }  // 1 <= k <= 32
  int64_t randint(int64_t a, int64_t b) {
    uint64_t n = static_cast<uint64_t>(b - a + 1);
    int k = 64 - __builtin_clzll(n);
    uint64_t r = getrandbits(k);
    while (r >= n) r = getrandbits(k);
    return a + static_cast<int64_t>(r);
  }

 private:
  std::mt19937 mt_;
};

// NumPy's legacy np.random.RandomState(seed): permutation and randint(0, n).
class NumpyRandomState {
 public:
  // An integer seed is init_genrand(seed) (NumPy's mt19937_seed), std::mt19937's own seeding.
  explicit NumpyRandomState(uint32_t seed) : mt_(seed) {}
  // random_interval: a uniform integer in [0, max] by masked rejection.
  uint32_t interval(uint32_t max) {
    if (max == 0) return 0;
    uint32_t mask = max;
    mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4; mask |= mask >> 8; mask |= mask >> 16;
    uint32_t value;
    while ((value = static_cast<uint32_t>(mt_()) & mask) > max) {}
    return value;
  }
  std::vector<int> permutation(int n) {
    std::vector<int> values(static_cast<size_t>(n));
    std::iota(values.begin(), values.end(), 0);
    for (int i = n - 1; i >= 1; --i) std::swap(values[i], values[interval(static_cast<uint32_t>(i))]);
    return values;
  }
  // randint(0, high) for one element (high - 1 <= 0xFFFFFFFE).
  int32_t randint(int32_t high) { return static_cast<int32_t>(interval(static_cast<uint32_t>(high - 1))); }

 private:
  std::mt19937 mt_;
};

// One batch of the article's data: src (B, S) and tgt (B, S).
struct Batch {
  std::vector<int32_t> src, tgt;
};

const int32_t kExamples[9][16] = {
    {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8}, {8, 7, 6, 5, 4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1},
    {0, 1, 0, 2, 0, 3, 0, 4, 0, 1, 0, 2, 0, 3, 0, 4}, {1, 1, 2, 3, 1, 1, 4, 5, 1, 1, 2, 3, 1, 1, 4, 5},
    {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1}, {5, 5, 4, 4, 3, 3, 2, 2, 5, 5, 4, 4, 3, 3, 2, 2},
    {7, 7, 7, 7, 8, 8, 9, 9, 7, 7, 7, 7, 8, 8, 9, 9}, {1, 5, 3, 7, 9, 2, 4, 6, 1, 5, 3, 7, 9, 2, 4, 6},
    {3, 9, 2, 6, 1, 2, 5, 6, 3, 9, 2, 6, 1, 2, 5, 6},
};

std::string tokensText(const int32_t* tokens, int64_t count) {
  std::string text;
  for (int64_t i = 0; i < count; ++i) {
    fmt::format_to(std::back_inserter(text), "{}{}", i ? " " : "", tokens[i]);
  }
  return text;
}

Status writeData(const std::string& path, const std::vector<Batch>& batches, int64_t B, int64_t S) {
  auto tensor = HostTensor::allocate(TFC_DTYPE_I32, {static_cast<int64_t>(batches.size()), 2, B, S});
  if (!tensor.ok()) return std::move(tensor).takeStatus();
  int32_t* out = tensor->mutableDataAs<int32_t>();
  size_t n = static_cast<size_t>(B * S);
  for (size_t b = 0; b < batches.size(); ++b) {
    std::memcpy(out + (2 * b) * n, batches[b].src.data(), n * 4);
    std::memcpy(out + (2 * b + 1) * n, batches[b].tgt.data(), n * 4);
  }
  return writeNpy(path, tensor->view());
}

int runSeedExperiment(const Invocation& invocation) {
  const Command* command = invocation.command;
  const Args& args = invocation.args;
  if (!args.positional.empty()) {
    return usageError(command, "unexpected argument '" + args.positional[0] + "'");
  }
  std::string task = args.get("--task", "palindrome");
  if (task != "palindrome" && task != "pointer_index") {
    return usageError(command, "--task '" + task + "' is not palindrome or pointer_index");
  }
  uint64_t seed = 0;
  if (args.has("--seed") && (!parseUint64(args.get("--seed"), &seed) || seed > 0xFFFFFFFFull)) {
    return usageError(command, "--seed '" + args.get("--seed") + "' is not an integer in [0, 2^32)");
  }
  int32_t device = 0;
  if (std::string bad = parseDevice(args, &device); !bad.empty()) {
    return usageError(command, bad);
  }
  int64_t epochs = 10, stepsPerEpoch = 64, numBatches = 256, threads = 0;
  double testSize = 0.33;
  struct IntOption { const char* name; int64_t* value; int64_t min, max; };
  for (IntOption option : {IntOption{"--epochs", &epochs, 1, 1000000},
                           IntOption{"--steps-per-epoch", &stepsPerEpoch, 1, 1000000},
                           IntOption{"--batches", &numBatches, 2, 1000000},
                           IntOption{"--threads", &threads, 0, TFC_CONTEXT_MAX_THREADS}}) {
    if (args.has(option.name) && (!parseInt64(args.get(option.name), option.value) ||
                                  *option.value < option.min || *option.value > option.max)) {
      return usageError(command, std::string(option.name) + " '" + args.get(option.name) +
                                     "' is not an integer from " + std::to_string(option.min) +
                                     " to " + std::to_string(option.max));
    }
  }
  if (args.has("--test-size") &&
      (!parseDouble(args.get("--test-size"), &testSize) || testSize <= 0 || testSize >= 1)) {
    return usageError(command, "--test-size '" + args.get("--test-size") + "' is not in (0, 1)");
  }
  HyperParams hyper;
  hyper.lr = 1e-2;
  hyper.minLr = 1e-5;
  hyper.warmup = 128;
  hyper.schedule = 1;
  hyper.weightDecay = 0;
  hyper.gradClip = 0;
  hyper.beta1 = 0.9;
  hyper.beta2 = 0.999;
  hyper.eps = 1e-8;
  if (!parseHyperParams(command, args, &hyper)) return kExitUsage;
  uint64_t initSeed = seed;
  if (args.has("--init-seed") && !parseUint64(args.get("--init-seed"), &initSeed)) {
    return usageError(command, "--init-seed '" + args.get("--init-seed") + "' is not a non-negative integer");
  }

  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  // The data shapes come from the loss entry: src (B, S), tgt_in (B, T), targets (B, T).
  const tfc_entry_t* lossEntry = nullptr;
  for (int32_t e = 0; e < artifact->entryCount(); ++e) {
    if (std::string(artifact->entry(e).name) == "loss") lossEntry = &artifact->entry(e);
  }
  auto isTokens = [](const tfc_tensor_desc_t& d, const char* name) {
    return std::string(d.name) == name && d.dtype == TFC_ABI_I32 && d.rank == 2;
  };
  if (lossEntry == nullptr || lossEntry->num_inputs != 3 || !isTokens(lossEntry->inputs[0], "src") ||
      !isTokens(lossEntry->inputs[1], "tgt_in") || !isTokens(lossEntry->inputs[2], "targets")) {
    return fail(invocation.model + ": the seed experiment needs the encoder-decoder model, whose loss "
                "entry takes src, tgt_in and targets (I32 [B, S], [B, T], [B, T]): "
                "tfc-trace encdec -o encdec.mlir && tfc encdec.mlir --optimizer=adamw -o encdec.so");
  }
  const int64_t B = lossEntry->inputs[0].shape[0], S = lossEntry->inputs[0].shape[1],
                T = lossEntry->inputs[1].shape[1];
  const int64_t vocab = modelVocabSize(*artifact);
  if (T != S + 1 || lossEntry->inputs[1].shape[0] != B || (vocab != 0 && vocab < 12)) {
    return fail(invocation.model + ": the experiment needs tgt_len = src_len + 1 (Start + targets) "
                "and a vocabulary of at least 12 (digits, Start = 10, Finish = 11); this model has "
                "src_len " + std::to_string(S) + ", tgt_len " + std::to_string(T) +
                ", vocabulary " + std::to_string(vocab));
  }
  if (task == "palindrome" && (S % 2 != 0 || S < 2 || S > 36)) {
    return fail("palindrome needs an even src_len of at most 36; the model has " + std::to_string(S));
  }
  if (task == "pointer_index" && S != 10 && S < 10) {
    return fail("pointer_index needs src_len >= 10 (indices 0..9); the model has " + std::to_string(S));
  }

  // The article's Generator: 256 batches, then a 0.67 / 0.33 split by np.random.permutation.
  PythonRandom pyRng(seed);
  NumpyRandomState npRng(static_cast<uint32_t>(seed));
  std::vector<Batch> all(static_cast<size_t>(numBatches));
  for (Batch& batch : all) {
    batch.src.resize(static_cast<size_t>(B * S));
    batch.tgt.resize(static_cast<size_t>(B * S));
    for (int64_t s = 0; s < B; ++s) {
      int32_t* src = &batch.src[static_cast<size_t>(s * S)];
      int32_t* tgt = &batch.tgt[static_cast<size_t>(s * S)];
      if (task == "palindrome") {
        int64_t n = S / 2;
        int64_t low = 1;
        for (int64_t i = 1; i < n; ++i) low *= 10;
        std::string half = std::to_string(pyRng.randint(low, low * 10 - 1));
        for (int64_t i = 0; i < n; ++i) {
          src[i] = src[n + i] = tgt[i] = half[static_cast<size_t>(i)] - '0';
          tgt[n + i] = half[static_cast<size_t>(n - 1 - i)] - '0';
        }
      } else {
        for (int64_t i = 0; i < S; ++i) src[i] = npRng.randint(10);
        for (int64_t i = 0; i < S; ++i) tgt[i] = src[src[i]];
      }
    }
  }
  std::vector<int> order = npRng.permutation(static_cast<int>(numBatches));
  int64_t cut = static_cast<int64_t>(static_cast<double>(numBatches) * (1.0 - testSize));
  std::vector<Batch> train, valid;
  for (int64_t i = 0; i < numBatches; ++i) {
    (i < cut ? train : valid).push_back(all[static_cast<size_t>(order[static_cast<size_t>(i)])]);
  }
  if (args.has("--dump-data")) {
    std::string prefix = args.get("--dump-data");
    Status status = writeData(prefix + "train.npy", train, B, S);
    if (status.ok()) status = writeData(prefix + "valid.npy", valid, B, S);
    if (!status.ok()) return fail(status);
    print("wrote {}train.npy ({} batches) and {}valid.npy ({} batches), int32 [n, 2, {}, {}]\n",
          prefix, train.size(), prefix, valid.size(), B, S);
    return 0;
  }
  if (stepsPerEpoch > static_cast<int64_t>(train.size())) {
    return usageError(command, "--steps-per-epoch " + std::to_string(stepsPerEpoch) +
                                   " is more than the " + std::to_string(train.size()) +
                                   " training batches");
  }
  if (valid.empty()) return usageError(command, "no validation batches; lower --test-size or raise --batches");

  auto runner = TrainStep::create(*artifact);
  if (!runner.ok()) return fail(runner.status());
  Status checked = checkOptimizerOptions(*runner, args, std::string(artifact->path()));
  if (!checked.ok()) return fail(checked);
  if (runner->numDataInputs() != 3) {
    return fail(invocation.model + ": train_step's data inputs differ from the loss entry's");
  }
  auto forwardIndex = artifact->findEntry("forward");
  if (!forwardIndex.ok()) return fail(forwardIndex.status());

  auto params = Params::create(*artifact);
  if (!params.ok()) return fail(params.status());
  Status status = args.has("--weights") ? loadWeightsNoting(args.get("--weights"), *params, trainingWeightsOptions())
                                        : params->init(initSeed);
  if (!status.ok()) return fail(status);
  tfc_context_options_t contextOptions;
  tfc_context_options_initialize(&contextOptions);
  contextOptions.num_threads = static_cast<int32_t>(threads);
  contextOptions.device = device;
  auto context = Context::create(*artifact, *params, &contextOptions);
  if (!context.ok()) return fail(context.status());
  // The validation loss: on the CPU, one single-threaded context per thread, each taking a
  // contiguous share of the batches. A loss call of this model is ~0.6 ms of 10-100 us
  // kernels, which gain little from splitting each kernel over threads; whole calls side by
  // side do (0.54 -> 0.4 s of validation at 2 threads). Each loss comes from a one-thread
  // context, so the sum, taken in batch order, is the same for any thread count.
  struct Validator {
    std::optional<Context> context;  // empty: the training context (a CUDA artifact)
    LossEntry entry;
  };
  std::vector<Validator> validators;
  const bool onCpu = tfc_artifact_table(artifact->get())->device == TFC_DEVICE_CPU;
  const int64_t validatorCount =
      onCpu ? std::min<int64_t>(context->numThreads(), static_cast<int64_t>(valid.size())) : 1;
  for (int64_t v = 0; v < validatorCount; ++v) {
    Validator validator;
    if (onCpu) {
      tfc_context_options_t single = contextOptions;
      single.num_threads = 1;
      auto created = Context::create(*artifact, *params, &single);
      if (!created.ok()) return fail(created.status());
      validator.context.emplace(std::move(created).value());
    }
    auto entry = LossEntry::create(*artifact, *runner);
    if (!entry.ok()) return fail(entry.status());
    validator.entry = std::move(entry).value();
    validators.push_back(std::move(validator));
  }
  hyper.totalSteps = static_cast<double>(epochs * stepsPerEpoch);
  runner->setHyperParams(hyper);

  print("seed experiment: task {}, {} train / {} validation batches of {} (src {}, tgt {}), "
        "seed {}\n",
        task, train.size(), valid.size(), B, S, T, seed);
  print("  {} epochs x {} steps, {} lr {:g} -> {:g} ({}, warm-up {:g}, total {:g}), betas "
        "{:g}/{:g}, eps {:g}, weight decay {:g}, grad clip {:g}, {} threads\n",
        epochs, stepsPerEpoch, runner->optimizerName(), hyper.lr, hyper.minLr,
        scheduleName(hyper.schedule), hyper.warmup, hyper.totalSteps, hyper.beta1, hyper.beta2,
        hyper.eps, hyper.weightDecay, hyper.gradClip, context->numThreads());
  std::fflush(stdout);

  // Teacher forcing into an entry's data buffers (src, tgt_in, targets): tgt_in = [Start,
  // y_1..y_S], targets = [y_1..y_S, Finish].
  auto teacher = [&](const Batch& batch, HostTensor& srcIn, HostTensor& tgtInBuffer,
                     HostTensor& targetsBuffer) {
    std::memcpy(srcIn.mutableData(), batch.src.data(), srcIn.byteSize());
    int32_t* tgtIn = tgtInBuffer.mutableDataAs<int32_t>();
    int32_t* targets = targetsBuffer.mutableDataAs<int32_t>();
    for (int64_t b = 0; b < B; ++b) {
      tgtIn[b * T] = kStart;
      for (int64_t t = 0; t < S; ++t) {
        int32_t y = batch.tgt[static_cast<size_t>(b * S + t)];
        tgtIn[b * T + t + 1] = y;
        targets[b * T + t] = y;
      }
      targets[b * T + S] = kFinish;
    }
  };

  std::optional<TextOutputFile> log;
  if (args.has("--log")) {
    auto opened = TextOutputFile::open(args.get("--log"), "--log");
    if (!opened.ok()) return fail(opened.status());
    log.emplace(std::move(opened).value());
    status = log->write("epoch,step,train_loss,valid_loss,lr,grad_norm,seconds\n");
    if (!status.ok()) return fail(status);
  }
  PlotSeries stepLoss{{}, {}, {20, 80, 200}, 1, false, "train loss (each step)"};
  PlotSeries validLoss{{}, {}, {220, 50, 40}, 2, true, "validation loss (each epoch)"};

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  double trainTime = 0;
  double lastValid = NAN;
  int64_t globalStep = 0;
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    auto epochStart = Clock::now();
    std::vector<int> shuffle = npRng.permutation(static_cast<int>(train.size()));
    std::vector<Batch> shuffled;
    for (int index : shuffle) shuffled.push_back(train[static_cast<size_t>(index)]);
    train = std::move(shuffled);  // the permutation accumulates, as in the article
    double lossSum = 0;
    TrainStep::Result result;
    for (int64_t step = 0; step < stepsPerEpoch; ++step) {
      const Batch& batch = train[static_cast<size_t>(step)];
      teacher(batch, runner->dataInput(0), runner->dataInput(1), runner->dataInput(2));
      if (runner->hasDropout()) runner->setDropoutSeed(dropoutSeedForStep(seed, globalStep + 1));
      auto stepped = runner->step(*context);
      ++globalStep;
      if (!stepped.ok()) {
        return fail("step " + std::to_string(globalStep) + ": " + stepped.status().message());
      }
      result = *stepped;
      if (!std::isfinite(result.loss)) {
        return fail("step " + std::to_string(globalStep) + ": the loss is " + std::to_string(result.loss) +
                    "; stopping (try a lower --lr)");
      }
      lossSum += result.loss;
      stepLoss.x.push_back(static_cast<double>(globalStep));
      stepLoss.y.push_back(result.loss);
      if (log) {
        // The step's floats widened to double, as printf's %.7g printed them.
        status = log->write(fmt::format("{},{},{:.7g},,{:.7g},{:.7g},\n", epoch, globalStep,
                                        static_cast<double>(result.loss),
                                        static_cast<double>(result.lr),
                                        static_cast<double>(result.gradNorm)));
        if (!status.ok()) return fail(status);
      }
    }
    double epochTrain = std::chrono::duration<double>(Clock::now() - epochStart).count();
    trainTime += epochTrain;
    std::vector<float> losses(valid.size());
    std::vector<Status> statuses(validators.size());
    auto validate = [&](size_t v) {
      Validator& validator = validators[v];
      Context& validContext = validator.context ? *validator.context : *context;
      size_t begin = valid.size() * v / validators.size();
      size_t end = valid.size() * (v + 1) / validators.size();
      for (size_t i = begin; i < end; ++i) {
        LossEntry& entry = validator.entry;
        teacher(valid[i], entry.dataInput(0), entry.dataInput(1), entry.dataInput(2));
        auto loss = entry.eval(validContext);
        if (!loss.ok()) {
          statuses[v] = std::move(loss).takeStatus();
          return;
        }
        losses[i] = *loss;
      }
    };
    std::vector<std::thread> helpers;
    for (size_t v = 1; v < validators.size(); ++v) helpers.emplace_back(validate, v);
    validate(0);
    for (std::thread& helper : helpers) helper.join();
    for (const Status& failed : statuses) {
      if (!failed.ok()) return fail(failed);
    }
    double validSum = 0;
    for (float loss : losses) validSum += loss;
    lastValid = validSum / static_cast<double>(valid.size());
    double epochTime = std::chrono::duration<double>(Clock::now() - epochStart).count();
    validLoss.x.push_back(static_cast<double>(globalStep));
    validLoss.y.push_back(lastValid);
    print("epoch {:2}/{}  train loss {:.4f}  valid loss {:.4f}  lr {:.2e}  time {:.2f}s\n", epoch,
          epochs, lossSum / static_cast<double>(stepsPerEpoch), lastValid,
          static_cast<double>(result.lr), epochTime);
    std::fflush(stdout);
    if (log) {
      status = log->write(fmt::format("{},{},{:.7g},{:.7g},,,{:.3f}\n", epoch, globalStep,
                                      lossSum / static_cast<double>(stepsPerEpoch), lastValid,
                                      epochTime));
      if (!status.ok()) return fail(status);
    }
  }
  if (log) {
    status = log->close();
    if (!status.ok()) return fail(status);
  }

  // Greedy prediction of the examples: from Start, 16 times forward + argmax of the last
  // position (the causal mask makes later positions irrelevant, so one fixed-size forward
  // per token suffices).
  std::vector<std::vector<int32_t>> examples, expected;
  if (task == "palindrome" && S == 16) {
    for (const auto& row : kExamples) {
      examples.emplace_back(row, row + 16);
      std::vector<int32_t> want = {kStart};
      for (int i = 0; i < 8; ++i) want.push_back(row[i]);
      for (int i = 7; i >= 0; --i) want.push_back(row[i]);
      expected.push_back(want);
    }
  } else {  // the first 9 validation samples
    for (int64_t s = 0; s < std::min<int64_t>(9, B); ++s) {
      examples.emplace_back(valid[0].src.begin() + s * S, valid[0].src.begin() + (s + 1) * S);
      std::vector<int32_t> want = {kStart};
      want.insert(want.end(), valid[0].tgt.begin() + s * S, valid[0].tgt.begin() + (s + 1) * S);
      expected.push_back(want);
    }
  }
  int64_t rows = std::min<int64_t>(static_cast<int64_t>(examples.size()), B);
  auto srcTensor = HostTensor::allocate(TFC_DTYPE_I32, {B, S});
  auto tgtTensor = HostTensor::allocate(TFC_DTYPE_I32, {B, T});
  if (!srcTensor.ok() || !tgtTensor.ok()) return fail("out of memory");
  int32_t* src = srcTensor->mutableDataAs<int32_t>();
  int32_t* seq = tgtTensor->mutableDataAs<int32_t>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& row = examples[static_cast<size_t>(b < rows ? b : 0)];
    std::copy(row.begin(), row.end(), src + b * S);
    seq[b * T] = kStart;
  }
  auto predictStart = Clock::now();
  for (int64_t t = 0; t + 1 < T; ++t) {
    auto outputs = context->call("forward", {srcTensor->view(), tgtTensor->view()});
    if (!outputs.ok()) return fail(outputs.status());
    const HostTensor& logits = (*outputs)[0];
    int64_t V = logits.shape().back();
    const float* data = logits.dataAs<float>();
    for (int64_t b = 0; b < B; ++b) {
      const float* row = data + (b * T + t) * V;
      seq[b * T + t + 1] = static_cast<int32_t>(std::max_element(row, row + V) - row);
    }
  }
  double predictTime = std::chrono::duration<double>(Clock::now() - predictStart).count();
  int exact = 0;
  print("\ngreedy predictions ({}):\n",
        task == "palindrome" && S == 16 ? "the article's 9 examples" : "9 validation samples");
  for (int64_t b = 0; b < rows; ++b) {
    const auto& want = expected[static_cast<size_t>(b)];
    bool ok = std::equal(want.begin(), want.end(), seq + b * T);
    exact += ok;
    print("  {}. input     {}\n     predicted {}\n     expected  {}  {}\n", b + 1,
          tokensText(examples[static_cast<size_t>(b)].data(), S), tokensText(seq + b * T, T),
          tokensText(want.data(), T), ok ? "exact" : "WRONG");
  }
  double total = std::chrono::duration<double>(Clock::now() - start).count();
  print("\nexact: {}/{}\n", exact, rows);
  print("final validation loss: {:.4f}\n", lastValid);
  print("wall time: {:.2f}s (training {:.2f}s, prediction {:.2f}s)\n", total, trainTime,
        predictTime);

  if (args.has("--plot")) {
    status = writePlotPng(args.get("--plot"), {stepLoss, validLoss},
                          {"seed experiment: " + task + ", seed " + std::to_string(seed), "step",
                           "loss"});
    if (!status.ok()) return fail(status);
    print("plot: {}\n", args.get("--plot"));
  }
  if (args.has("--save")) {
    status = saveCheckpoint(args.get("--save"), *artifact, *params, *context,
                            {{"step", std::to_string(globalStep)}, {"experiment", "seed-" + task},
                             {"seed", std::to_string(seed)}});
    if (!status.ok()) return fail(status);
    print("checkpoint: {}\n", args.get("--save"));
  }
  return 0;
}

std::vector<OptionSpec> seedOptions() {
  std::vector<OptionSpec> options = {
      {"--task", nullptr, true, false},         {"--seed", nullptr, true, false},
      {"--init-seed", nullptr, true, false},    inputOption("--weights"),
      {"--epochs", nullptr, true, false},       {"--steps-per-epoch", nullptr, true, false},
      {"--batches", nullptr, true, false},      {"--test-size", nullptr, true, false},
      outputOption("--log"),                    outputOption("--plot"),
      outputOption("--save"),                   {"--dump-data", nullptr, true, false},
      {"--threads", "-j", true, false},
      {"--device", nullptr, true, false},
  };
  for (const OptionSpec& option : hyperParamOptions()) options.push_back(option);
  return options;
}

const std::string& seedHelp() {
  HyperParams defaults;
  defaults.lr = 1e-2;
  defaults.minLr = 1e-5;
  defaults.warmup = 128;
  defaults.schedule = 1;
  defaults.weightDecay = 0;
  defaults.gradClip = 0;
  defaults.beta2 = 0.999;
  static const std::string text =
      std::string(R"(usage: tfc-seed-experiment MODEL.so [--task palindrome|pointer_index] [--seed S]
                                    [--epochs 10] [--steps-per-epoch 64] [--batches 256]
                                    [hyper-parameters] [--log FILE.csv] [--plot FILE.png]
                                    [--save CKPT.safetensors] [--threads N] [--device N]

Runs the seed article's experiment (docs/models/encdec.md) on the encoder-decoder model:
  tfc-trace encdec -o encdec.mlir && tfc encdec.mlir --optimizer=adamw -o encdec.so
Data as the article's Generator: --batches batches of B samples (palindrome: an 8-digit
number with a non-zero first digit, src = half + half, tgt = half + reversed half;
pointer_index: x of digits 0..9, tgt = x[x]), split 0.67 / 0.33 into train and
validation by a permutation; each epoch re-shuffles the train batches and trains on the
first --steps-per-epoch, with teacher forcing (decoder input [Start=10, y...], labels
[y..., Finish=11]). After each epoch: the mean train loss, the validation loss over every
validation batch (the loss entry) and the time. At the end: greedy predictions of the
article's 9 examples (forward + argmax from Start), how many are exact, and the wall time.

The random streams are the article's: Python's random.Random(S) for palindrome digits and
NumPy's legacy RandomState(S) for pointer_index digits, the split and the shuffles, so
--dump-data PREFIX writes PREFIXtrain.npy / PREFIXvalid.npy equal to
docs/models/encdec_reference.py's palindrome(py_rng=random.Random(S),
np_rng=np.random.RandomState(S)). Parameters come from the model's initializers with
--init-seed (default: S), or from --weights.

The schedule is the article's intended reading (tfc-train-step schedule 1): linear
warm-up to --lr over --warmup steps, then linear decay to --min-lr at epochs x
steps-per-epoch; Adam with the article's betas and eps, no weight decay, no clipping.

options:
  --task T             palindrome (default) or pointer_index
  --seed S             seed of the data streams (default 0)
  --init-seed S        seed of the parameter initializers (default: --seed)
  --weights FILE|DIR   start from these parameters instead (a .safetensors file, or a
                       Hugging Face checkpoint directory as for `call`)
  --epochs N           default 10
  --steps-per-epoch N  default 64
  --batches N          batches generated before the split (default 256)
  --test-size X        validation share (default 0.33)
  --log FILE.csv       per-step and per-epoch losses
  --plot FILE.png      the per-step train loss and per-epoch validation loss
  --save FILE          a checkpoint of the trained model at the end
  --dump-data PREFIX   write the generated data as .npy and exit
  -j, --threads N      threads (default 0 = all cores): training splits each kernel over
                       them; validation gives each a share of the batches on a context
                       of its own (the same numbers for any N)
  --device N           the GPU that runs a CUDA artifact (default 0)
hyper-parameters:
)") + hyperParamHelp(defaults) +
      R"(
example:
  tfc-seed-experiment encdec.so --seed 1 --plot seed.png
)";
  return text;
}

}  // namespace

const Command kSeedExperimentCommand = {
    "seed-experiment",
    "the seed article's encoder-decoder experiment (palindromes, 10 epochs, 9 examples)",
    seedHelp().c_str(),
    true,
    seedOptions(),
    runSeedExperiment,
};

}  // namespace tfc::run
