// tfc-run MODEL.so profile ENTRY: where an entry's time goes, kernel by kernel, next to each
// kernel's roofline floor.
//
// The artifact carries, per entry, its kernel launches in call order with the compiler's
// cost model figures (tfc_entry_t.kernels: FLOPs, bytes read and written); the runtime times
// each launch (tfc_context_set_profiling). The roofline model (floors, regimes) is the
// runtime's (tfc/runtime/roofline.hpp); the f32 FMA peak and the STREAM-triad bandwidth are
// measured here at start (machine_peak.hpp) or given.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cli.hpp"
#include "entry_inputs.hpp"
#include "machine_peak.hpp"
#include "png_plot.hpp"
#include "print.hpp"
#include "weights.hpp"
#include "tfc/runtime/bound_entry.hpp"
#include "tfc/runtime/file.hpp"
#include "tfc/runtime/metadata.hpp"
#include "tfc/runtime/roofline.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/train_step.hpp"

namespace tfc::run {
namespace {

// Values for the inputs not given with --in, valid for the entry: token ids in [0, vocab),
// positions at the start of the cache, a full prefill chunk, the trainer's default
// hyper-parameters, sampling at temperature 1; other floats from a normal distribution.
void drawMissingInputs(const Artifact& artifact, const tfc_entry_t& entry, uint64_t seed,
                       EntryInputs* inputs, std::vector<std::string>* drawn) {
  std::mt19937_64 random(seed);
  const int64_t vocab = std::max<int64_t>(modelVocabSize(artifact), 1);
  const int64_t chunk = tokensPerCall(entry);
  const HyperParams hyper;
  const std::map<std::string, double> scalars = {
      {"lr", hyper.lr},           {"min_lr", hyper.minLr},
      {"warmup", hyper.warmup},   {"total_steps", 1000},
      {"schedule", hyper.schedule}, {"weight_decay", hyper.weightDecay},
      {"grad_clip", hyper.gradClip}, {"beta1", hyper.beta1},
      {"beta2", hyper.beta2},     {"eps", hyper.eps},
      {"momentum", hyper.momentum}, {"temperature", 1.0},
      {"top_p", 1.0},             {"top_k", 0},
      {"pos", 0},                 {"n", static_cast<double>(chunk)},
      {"seed", 1},                {"dropout_seed", 1}};
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    auto slot = static_cast<size_t>(i);
    if (inputs->given[slot]) continue;
    const tfc_tensor_desc_t& desc = entry.inputs[i];
    auto dtype = static_cast<tfc_dtype_t>(desc.dtype);
    auto tensor = HostTensor::allocate(dtype, shapeOf(desc));
    if (!tensor.ok()) continue;  // the call reports the missing input
    int64_t count = tensor->numElements();
    std::string name = desc.name;
    auto it = scalars.find(name);
    double scalar = it != scalars.end() ? it->second : 0.0;
    std::uniform_int_distribution<int64_t> id(0, vocab - 1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t k = 0; k < count; ++k) {
      bool ids = desc.rank > 0;
      switch (dtype) {
        case TFC_DTYPE_I32:
          tensor->mutableDataAs<int32_t>()[k] =
              static_cast<int32_t>(ids ? id(random) : static_cast<int64_t>(scalar));
          break;
        case TFC_DTYPE_I64:
          tensor->mutableDataAs<int64_t>()[k] = ids ? id(random) : static_cast<int64_t>(scalar);
          break;
        case TFC_DTYPE_F32:
          tensor->mutableDataAs<float>()[k] = ids ? normal(random) : static_cast<float>(scalar);
          break;
        default:
          break;  // 16-bit inputs stay zero
      }
    }
    drawn->push_back(desc.rank > 0 ? name : fmt::format("{}={:g}", name, scalar));
    inputs->tensors[slot] = std::move(tensor).value();
    inputs->given[slot] = true;
  }
}

std::string rowText(const std::string& label, const KernelCost& t, double total,
                    const char* regime) {
  double intensity = t.bytes > 0 ? t.flops / t.bytes : 0;
  return fmt::format("{:>10.3f} {:>5.1f} {:>8} {:>9.3f} {:>9.2f} {:>7.1f} {:>9.3f} {:>6.1f}  {:<9} {}",
                     t.seconds * 1e3, 100 * t.seconds / total, t.launches, t.flops / 1e9,
                     t.bytes / 1e6, intensity, t.floorSeconds * 1e3,
                     t.seconds > 0 ? 100 * t.floorSeconds / t.seconds : 0.0, regime, label);
}

Status writeJson(const std::string& path, const std::string& model, const std::string& entry,
                 int64_t calls, int threads, const MachinePeak& peak, bool measured,
                 double medianCall, double meanCall, const std::vector<KernelCost>& rows) {
  std::string out = "{\n";
  out += fmt::format("  \"model\": {},\n  \"entry\": {},\n  \"calls\": {},\n  \"threads\": {},\n",
                     jsonString(model), jsonString(entry), calls, threads);
  out += fmt::format(
      "  \"machine\": {{\"flops_per_second\": {:.6g}, \"bytes_per_second\": {:.6g}, "
      "\"read_bytes_per_second\": {:.6g}, \"isa\": {}, \"measured\": {}}},\n",
      peak.flopsPerSecond, peak.bytesPerSecond, peak.readBytesPerSecond, jsonString(peak.isa),
      measured ? "true" : "false");
  out += fmt::format("  \"call_seconds_median\": {:.9g},\n  \"call_seconds_mean\": {:.9g},\n",
                     medianCall, meanCall);
  out += "  \"kernels\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const KernelCost& r = rows[i];
    out += fmt::format(
        "    {{\"name\": {}, \"ops\": {}, \"kind\": {}, \"launches\": {}, \"seconds\": {:.9g}, "
        "\"flops\": {:.9g}, \"bytes\": {:.9g}, \"floor_seconds\": {:.9g}, \"regime\": {}}}{}\n",
        jsonString(r.name), jsonString(r.ops), jsonString(r.kind), r.launches, r.seconds,
        r.flops, r.bytes, r.floorSeconds, jsonString(r.regime), i + 1 < rows.size() ? "," : "");
  }
  out += "  ]\n}\n";
  return writeFileAtomically(path, out.data(), out.size());
}

// The roofline chart: log10 arithmetic intensity against log10 achieved GFLOP/s, the roof
// min(peak, intensity x bandwidth), each kernel with FLOPs as a point coloured by regime.
Status writeRoofline(const std::string& path, const std::string& title,
                     const std::vector<KernelCost>& rows, const MachinePeak& peak) {
  std::map<std::string, PlotSeries> byRegime = {
      {"compute", PlotSeries{{}, {}, RGB{200, 40, 40}, 1, true, "compute-bound", false}},
      {"memory", PlotSeries{{}, {}, RGB{30, 90, 200}, 1, true, "memory-bound", false}},
      {"overhead", PlotSeries{{}, {}, RGB{120, 120, 120}, 1, true, "overhead-bound", false}}};
  double xMin = std::log10(peak.flopsPerSecond / peak.bytesPerSecond), xMax = xMin;
  for (const KernelCost& r : rows) {
    if (r.flops <= 0 || r.bytes <= 0 || r.seconds <= 0) continue;
    double x = std::log10(r.flops / r.bytes), y = std::log10(r.flops / r.seconds / 1e9);
    byRegime[r.regime].x.push_back(x);
    byRegime[r.regime].y.push_back(y);
    xMin = std::min(xMin, x);
    xMax = std::max(xMax, x);
  }
  xMin = std::floor(xMin - 0.25);
  xMax = std::ceil(xMax + 0.25);
  PlotSeries roof{{}, {}, RGB{0, 0, 0}, 2, false,
                  fmt::format("roof: {:.0f} GFLOP/s, {:.1f} GB/s", peak.flopsPerSecond / 1e9,
                              peak.bytesPerSecond / 1e9)};
  for (int i = 0; i <= 100; ++i) {
    double x = xMin + (xMax - xMin) * i / 100.0;
    double attainable = std::min(peak.flopsPerSecond, std::pow(10.0, x) * peak.bytesPerSecond);
    roof.x.push_back(x);
    roof.y.push_back(std::log10(attainable / 1e9));
  }
  std::vector<PlotSeries> series = {roof};
  for (auto& [regime, points] : byRegime) {
    if (!points.x.empty()) series.push_back(points);
  }
  PlotText text{title, "log10 arithmetic intensity (FLOP/byte)", "log10 GFLOP/s"};
  return writePlotPng(path, series, text, 900, 560);
}

int runProfile(const Invocation& invocation) {
  const Command* command = invocation.command;
  const Args& args = invocation.args;
  if (args.positional.size() != 1) {
    return usageError(command, args.positional.empty()
                                   ? "missing ENTRY (see the entries with: tfc-run " +
                                         invocation.model + " info)"
                                   : "unexpected argument '" + args.positional[1] + "'");
  }
  const std::string& entryName = args.positional[0];
  auto count = [&](const char* option, int64_t fallback, int64_t low, int64_t high,
                   int64_t* out) {
    *out = fallback;
    if (!args.has(option)) return true;
    if (!parseInt64(args.get(option), out) || *out < low || *out > high) {
      usageError(command, fmt::format("{} '{}' is not a number from {} to {}", option,
                                      args.get(option), low, high));
      return false;
    }
    return true;
  };
  int64_t repeat, warmup, threads, top;
  uint64_t initSeed = 0, inputSeed = 0;
  if (!count("--repeat", 10, 1, 1000000, &repeat) || !count("--warmup", 1, 0, 1000, &warmup) ||
      !count("--threads", 0, 0, TFC_CONTEXT_MAX_THREADS, &threads) ||
      !count("--top", 20, 0, 1000000, &top)) {
    return kExitUsage;
  }
  if (args.has("--weights") && args.has("--init-seed")) {
    return usageError(command, "give either --weights or --init-seed, not both");
  }
  if ((args.has("--init-seed") && !parseUint64(args.get("--init-seed"), &initSeed)) ||
      (args.has("--seed") && !parseUint64(args.get("--seed"), &inputSeed))) {
    return usageError(command, "--init-seed and --seed take non-negative integers");
  }
  double peakGflops = 0, bandwidthGbs = 0;
  if ((args.has("--peak-gflops") &&
       (!parseDouble(args.get("--peak-gflops"), &peakGflops) || peakGflops <= 0)) ||
      (args.has("--bandwidth-gbs") &&
       (!parseDouble(args.get("--bandwidth-gbs"), &bandwidthGbs) || bandwidthGbs <= 0))) {
    return usageError(command, "--peak-gflops and --bandwidth-gbs take positive numbers");
  }

  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  auto entryIndex = artifact->findEntry(entryName);
  if (!entryIndex.ok()) return fail(entryIndex.status());
  const tfc_entry_t& entry = artifact->entry(*entryIndex);
  if (entry.kernels == nullptr && entry.num_kernels > 0) {
    return fail(invocation.model + " has no kernel table for entry '" + entryName +
                "' (it was not compiled by tfc); recompile it with this tfc");
  }
  int exitCode = 0;
  std::optional<EntryInputs> inputs = readEntryInputs(command, args, entry, &exitCode);
  if (!inputs) return exitCode;
  std::vector<std::string> drawn;
  drawMissingInputs(*artifact, entry, inputSeed, &*inputs, &drawn);
  auto params = Params::create(*artifact);
  if (!params.ok()) return fail(params.status());
  Status status =
      args.has("--weights")
          ? loadWeightsNoting(args.get("--weights"), *params, inferenceWeightsOptions(args))
          : params->init(initSeed);
  if (!status.ok()) return fail(status);
  int32_t device = 0;
  if (std::string bad = parseDevice(args, &device); !bad.empty()) {
    return usageError(command, bad);
  }
  const bool onGpu = tfc_artifact_table(artifact->get())->device != TFC_DEVICE_CPU;
  tfc_context_options_t options;
  tfc_context_options_initialize(&options);
  options.num_threads = static_cast<int32_t>(threads);
  options.device = device;
  auto context = Context::create(*artifact, *params, &options);
  if (!context.ok()) return fail(context.status());
  // A GPU's floors: the flags, or the datasheet figures of a GPU we know.
  std::string gpuPeakSource, gpuBandwidthSource;
  if (onGpu) {
    print("device: {}\n", context->deviceName());
    const GpuFigures* known = knownGpu(context->deviceName());
    if ((peakGflops <= 0 || bandwidthGbs <= 0) && known == nullptr) {
      // "GPU 0: NVIDIA H200 (sm_90)" without "; products on ..." after it.
      const std::string_view gpu = context->deviceName().substr(0, context->deviceName().find(';'));
      return usageError(command, fmt::format(
          "a CUDA artifact's floors need the GPU's peak and bandwidth, and {} is not one "
          "whose figures tfc-run knows ({}): give --peak-gflops and --bandwidth-gbs",
          gpu, knownGpuNames()));
    }
    if (peakGflops <= 0) {
      peakGflops = known->peakGflops;
      gpuPeakSource = fmt::format("the {}'s dense bf16 tensor-core peak", known->name);
    }
    if (bandwidthGbs <= 0) {
      bandwidthGbs = known->bandwidthGbs;
      gpuBandwidthSource = fmt::format("the {}'s HBM bandwidth", known->name);
    }
  }
  auto bound = BoundEntry::create(*artifact, entryName, BoundEntry::Inputs::kCallerProvided);
  if (!bound.ok()) return fail(bound.status());
  std::vector<TensorView> views;
  for (const HostTensor& tensor : inputs->tensors) views.push_back(tensor.view());
  bound->useInputs(views);

  if (!drawn.empty()) print(stderr, "tfc-run: drawn inputs: {}\n", join(drawn));
  for (int64_t i = 0; i < warmup; ++i) {
    status = bound->call(*context);
    if (!status.ok()) return fail(status);
  }
  status = Status(tfc_context_set_profiling(context->get(), true));
  if (!status.ok()) return fail(status);
  std::vector<double> callSeconds;
  for (int64_t i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    status = bound->call(*context);
    if (!status.ok()) return fail(status);
    callSeconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  auto launches = static_cast<size_t>(entry.num_kernels);
  std::vector<double> seconds(launches);
  uint64_t calls = 0;
  status = Status(tfc_context_kernel_times(context->get(), *entryIndex, seconds.data(),
                                           seconds.size(), &calls));
  if (!status.ok()) return fail(status);
  std::sort(callSeconds.begin(), callSeconds.end());
  const double medianCall = callSeconds[callSeconds.size() / 2];
  double meanCall = 0;
  for (double s : callSeconds) meanCall += s;
  meanCall /= static_cast<double>(callSeconds.size());

  MachinePeak peak;
  const bool measured = peakGflops <= 0 || bandwidthGbs <= 0;
  if (measured) peak = measureMachinePeak(context->numThreads());
  if (peakGflops > 0) peak.flopsPerSecond = peakGflops * 1e9;
  if (bandwidthGbs > 0) peak.bytesPerSecond = bandwidthGbs * 1e9;
  if (!measured) peak.isa = "given";

  const std::vector<KernelCost> rows = kernelRoofline(entry, seconds, calls, peak);
  const KernelCost all = totalRoofline(rows, peak);

  print("profile of {} in {}: {} calls after {} warm-up, {} threads\n", entryName,
             invocation.model, calls, warmup, context->numThreads());
  // Each number says where it came from: measured here, or given by its flag.
  print("machine: {:.1f} GFLOP/s {}peak ({}), {:.1f} GB/s ({})\n",
             peak.flopsPerSecond / 1e9, onGpu ? "" : "f32 ",
             !gpuPeakSource.empty() ? gpuPeakSource
             : peakGflops > 0       ? std::string("given")
                                    : "FMA loop, " + peak.isa,
             peak.bytesPerSecond / 1e9,
             !gpuBandwidthSource.empty() ? gpuBandwidthSource
             : bandwidthGbs > 0          ? std::string("given")
                                : fmt::format("STREAM triad; reads alone {:.1f} GB/s",
                                              peak.readBytesPerSecond / 1e9));
  print("call: median {:.3f} ms; kernels {:.3f} ms ({:.1f}% of the mean call), {} "
             "launches of {} kernels; floor {:.3f} ms ({:.1f}% reached)\n\n",
             medianCall * 1e3, all.seconds * 1e3, 100 * all.seconds / meanCall,
             all.launches, rows.size(), all.floorSeconds * 1e3,
             all.seconds > 0 ? 100 * all.floorSeconds / all.seconds : 0.0);
  const std::string header = fmt::format(
      "{:>10} {:>5} {:>8} {:>9} {:>9} {:>7} {:>9} {:>6}  {:<9} {}", "time ms", "%",
      "launches", "GFLOP", "MB", "FLOP/B", "floor ms", "floor%", "regime", "kernel: ops");
  print("{}\n", header);
  size_t shown = top == 0 ? rows.size() : std::min(rows.size(), static_cast<size_t>(top));
  KernelCost rest;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i >= shown) {
      rest.add(rows[i]);
      continue;
    }
    print("{}\n", rowText(rows[i].name + ": " + rows[i].ops, rows[i], all.seconds,
                          rows[i].regime));
  }
  if (rest.launches > 0) {
    print("{}\n", rowText(fmt::format("({} more kernels)", rows.size() - shown), rest,
                          all.seconds, ""));
  }
  print("\nby kind of kernel:\n{}\n", header);
  for (const KernelCost& kind : kindRoofline(rows, peak)) {
    print("{}\n", rowText(kind.kind, kind, all.seconds, kind.regime));
  }
  print("{}\n", rowText("total", all, all.seconds, all.regime));

  if (args.has("--json")) {
    status = writeJson(args.get("--json"), invocation.model, entryName,
                       static_cast<int64_t>(calls), context->numThreads(), peak, measured,
                       medianCall, meanCall, rows);
    if (!status.ok()) return fail(status);
    print(stderr, "tfc-run: wrote {}\n", args.get("--json"));
  }
  if (args.has("--plot")) {
    status = writeRoofline(args.get("--plot"),
                           fmt::format("roofline: {} of {}", entryName, invocation.model), rows,
                           peak);
    if (!status.ok()) return fail(status);
    print(stderr, "tfc-run: wrote {}\n", args.get("--plot"));
  }
  return 0;
}

}  // namespace

const Command kProfileCommand = {
    "profile",
    "time an entry kernel by kernel against each kernel's roofline floor",
    R"(usage: tfc-run MODEL.so profile ENTRY [--weights W.safetensors|DIR | --init-seed S]
                          [--in NAME=FILE.npy | --in NAME=VALUE]... [--repeat N] [--warmup N]
                          [--threads N] [--device N] [--top K] [--json FILE] [--plot FILE.png]
                          [--peak-gflops X --bandwidth-gbs Y]

Calls ENTRY --warmup times, then --repeat times with every kernel launch timed, and prints
per kernel (its name and the graph ops it computes, as the compiler's kernel table names
them): its time per call and share, its launches, FLOPs and bytes by the cost model,
arithmetic intensity, its floor (the larger of FLOPs / peak and bytes / bandwidth), the
fraction of the floor it reaches, and its regime: compute- or memory-bound by its larger
floor, or overhead-bound when its launches average under 10 us and reach under 25% of
their floor. Then the same per kind of kernel, and the total. "floor%" is floor / time:
100% is the roofline.

The peak is measured at start (an f32 FMA loop with the widest vectors the CPU has, and a
STREAM triad, on the context's threads), unless --peak-gflops and --bandwidth-gbs give both.
A CUDA artifact runs on GPU --device N (default 0), each launch timed between events on
its stream; its floors take the GPU's dense bf16 tensor-core peak and HBM bandwidth from
its datasheet for an H100 (SXM, PCIe, NVL), H200 or A100, or from the two flags (either
one overrides its figure; other GPUs need both).

Inputs not given with --in are drawn so that the call is valid: token ids uniform in
[0, vocab), pos 0, n = the prefill chunk, train_step's hyper-parameters at the trainer's
defaults, temperature 1; other float inputs normal(0, 1) (--seed S draws them). Parameters
come from --weights, or from the initializers (--init-seed, default 0): timing does not
depend on their values.

options:
  ENTRY                  the entry to profile (forward, train_step, decode, ...)
  --weights FILE|DIR     parameters (or a training checkpoint of this model, or a Hugging
                         Face checkpoint directory, as for `call`)
  --allow-unexpected     ignore tensors of --weights that are not parameters
  --mmap                 map --weights copy-on-write instead of copying them into this
                         process's memory (huge pages): processes loading one file share
                         its pages, at a slower decode
  --init-seed S          initialize the parameters with seed S (default 0)
  --in NAME=FILE|VALUE   one input, as for `call` (repeat for each)
  --seed S               seed of the drawn inputs (default 0)
  --repeat N             timed calls (default 10)
  --warmup N             untimed calls first (default 1)
  --threads N            threads for parallel kernels (default 0 = all cores)
  --top K                kernels to list, slowest first (default 20; 0 = all)
  --json FILE            every kernel's figures and the machine's, as JSON
  --plot FILE.png        the roofline chart: each kernel with FLOPs as a point
  --peak-gflops X        the peak to use instead of measuring it (the CPU's f32) or of
                         the GPU's datasheet (its dense bf16 tensor-core peak)
  --bandwidth-gbs Y      the memory bandwidth to use instead of measuring it or of the
                         GPU's datasheet

examples:
  tfc-run gpt2.so profile train_step --repeat 5 --plot roofline.png
  tfc-run gpt2.so profile decode --weights w.safetensors --in pos=100 --top 10
  tfc-run gpt2.so profile forward --json forward.json --peak-gflops 224 --bandwidth-gbs 29
)",
    true,
    {inputOption("--weights"),
     {"--allow-unexpected", nullptr, false, false},
     {"--mmap", nullptr, false, false},
     {"--init-seed", nullptr, true, false},
     {"--in", "-i", true, true, ValueKind::kNamedInput},
     {"--seed", nullptr, true, false},
     {"--repeat", nullptr, true, false},
     {"--warmup", nullptr, true, false},
     {"--threads", "-j", true, false},
     {"--device", nullptr, true, false},
     {"--top", nullptr, true, false},
     outputOption("--json"),
     outputOption("--plot"),
     {"--peak-gflops", nullptr, true, false},
     {"--bandwidth-gbs", nullptr, true, false}},
    runProfile,
};

}  // namespace tfc::run
