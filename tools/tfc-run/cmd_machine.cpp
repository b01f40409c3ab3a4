// tfc-run machine: the peak f32 FMA rate and the STREAM-triad (and read) bandwidth of
// this machine, the numbers `profile` measures for its rooflines, on their own
// (benchmarks put their floors next to their figures from the same run:
// bench/run_bench.py).
#include <thread>

#include "cli.hpp"
#include "machine_peak.hpp"
#include "print.hpp"

namespace tfc::run {
namespace {

int runMachine(const Invocation& invocation) {
  const Args& args = invocation.args;
  if (!args.positional.empty()) {
    return usageError(invocation.command,
                      "unexpected argument '" + args.positional[0] + "' (machine takes no file)");
  }
  int64_t threads = static_cast<int64_t>(std::thread::hardware_concurrency());
  if (args.has("--threads") &&
      (!parseInt64(args.get("--threads"), &threads) || threads < 1 ||
       threads > TFC_CONTEXT_MAX_THREADS)) {
    return usageError(invocation.command,
                      "--threads '" + args.get("--threads") + "' is not a number from 1 to " +
                          std::to_string(TFC_CONTEXT_MAX_THREADS));
  }
  if (threads < 1) threads = 1;
  const MachinePeak peak = measureMachinePeak(static_cast<int>(threads));
  if (args.has("--json")) {
    print(
        "{{\"threads\": {}, \"peak_gflops\": {:.2f}, \"triad_gbs\": {:.2f}, "
        "\"read_gbs\": {:.2f}, \"isa\": \"{}\"}}\n",
        threads, peak.flopsPerSecond / 1e9, peak.bytesPerSecond / 1e9,
        peak.readBytesPerSecond / 1e9, peak.isa);
    return 0;
  }
  print("machine: {} threads\n", threads);
  print("  f32 peak   {:8.1f} GFLOP/s  (independent FMAs in registers, {})\n",
        peak.flopsPerSecond / 1e9, peak.isa);
  print("  bandwidth  {:8.1f} GB/s     (STREAM triad a = b + s*c, 12 bytes an element, arrays "
        "of 64 MiB)\n",
        peak.bytesPerSecond / 1e9);
  print("  reads      {:8.1f} GB/s     (a sum over the same arrays, 4 bytes an element)\n",
        peak.readBytesPerSecond / 1e9);
  return 0;
}

}  // namespace

const Command kMachineCommand = {
    "machine",
    "measure this machine's f32 peak and memory bandwidth (no model needed)",
    R"(usage: tfc-run machine [--threads N] [--json]

Measures, on N threads at once, the two numbers a roofline needs: the peak f32 rate (a loop
of independent fused multiply-adds in registers, with the widest vectors the CPU has; an
FMA counts 2 FLOPs) and the memory bandwidth (a STREAM triad a[i] = b[i] + s*c[i] over three
arrays of 64 MiB, 12 bytes an element as STREAM counts them). Each is the best of a few short
runs, about half a second in all. These are the numbers `tfc-run MODEL.so profile` measures
at its start; benchmarks print them next to their figures, from the same run.

It also measures reads alone (a sum over the same arrays): the ceiling of a kernel that
only streams its operands in, such as a batch-1 decode reading its weights. The triad
stays the roofline's bandwidth. On a shared machine both move with the other tenants'
load: measure them in the same run as the figure they judge.

options:
  --threads N   threads to measure with (default: every hardware thread)
  --json        one line of JSON: threads, peak_gflops, triad_gbs, read_gbs, isa

examples:
  tfc-run machine --threads 2
  tfc-run machine --threads 1 --json
)",
    false,
    {{"--threads", nullptr, true, false}, {"--json", nullptr, false, false}},
    runMachine,
};

}  // namespace tfc::run
