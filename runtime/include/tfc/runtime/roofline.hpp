// The roofline model of a profiled entry (tfc-run profile; docs/performance.md, "Profiling"):
// each kernel's floor is the larger of FLOPs / peak and bytes / bandwidth, with the
// compiler's cost model figures from the artifact's kernel table (tfc_entry_t.kernels) and
// the times the runtime measured per launch (tfc_context_set_profiling,
// tfc_context_kernel_times). A kernel's regime is that of its larger floor, except that a
// kernel whose launches average under kOverheadSeconds and reach under kOverheadFraction of
// their floor is overhead-bound: its time is the fixed cost of a launch (loop setup, threads
// waking), not arithmetic or memory ("Making Deep Learning Go Brrrr").
#ifndef TFC_RUNTIME_ROOFLINE_HPP_
#define TFC_RUNTIME_ROOFLINE_HPP_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/artifact_abi.h"

namespace tfc {

constexpr double kOverheadSeconds = 10e-6;
constexpr double kOverheadFraction = 0.25;

// The two numbers a roofline needs, and where they came from.
struct MachinePeak {
  double flopsPerSecond = 0;  // f32 on a CPU, fused multiply-adds counted as 2 FLOPs
  double bytesPerSecond = 0;  // STREAM triad convention on a CPU: 12 bytes per f32 element
  // Reads alone (a sum over the same arrays, 4 bytes an element): the ceiling of a kernel
  // that only streams its operands in (a batch-1 decode's weights); 0 when not measured.
  double readBytesPerSecond = 0;
  std::string isa;  // the vector ISA a measured peak ran with ("avx512f", ...), or "given"
};

// Datasheet figures of a GPU: the dense bf16 tensor-core peak (the products' roofline) and
// the HBM bandwidth.
struct GpuFigures {
  const char* match;  // a part of the name the driver gives ("NVIDIA H100 80GB HBM3")
  const char* name;
  double peakGflops, bandwidthGbs;
};

// The figures of the GPU |deviceName| names (H100 SXM, PCIe, NVL; H200; A100), or null for a
// GPU not known here. |deviceName| is the driver's name or a context's device name
// ("GPU 0: NVIDIA H200 (sm_90); products on ..."), of which the part before ';' counts.
const GpuFigures* knownGpu(std::string_view deviceName);
// The names of the GPUs knownGpu knows, for a message ("H200, H100 NVL, ...").
std::string knownGpuNames();

// Launches, their time and their cost, per call: of one kernel (a kernel function, launched
// once or more per call), of a kind of kernel ("fused.linear"), or of all.
struct KernelCost {
  std::string name, ops, kind;  // for one kernel; kind alone for a kind
  int64_t launches = 0;
  double seconds = 0, flops = 0, bytes = 0, floorSeconds = 0;
  const char* regime = "";  // "compute", "memory" or "overhead"

  void add(const KernelCost& other);
};

// The regime of |cost| on |peak| (see the file's comment).
const char* rooflineRegime(const KernelCost& cost, const MachinePeak& peak);

// One row per kernel function of |entry|, slowest first, from |launchSeconds| (one per
// launch, in call order, summed over |calls| calls: tfc_context_kernel_times) made per call,
// with floors and regimes on |peak|.
std::vector<KernelCost> kernelRoofline(const tfc_entry_t& entry,
                                       const std::vector<double>& launchSeconds,
                                       uint64_t calls, const MachinePeak& peak);

// |kernels| summed by kind, slowest first, with their regimes.
std::vector<KernelCost> kindRoofline(const std::vector<KernelCost>& kernels,
                                     const MachinePeak& peak);

// |kernels| summed, with its regime.
KernelCost totalRoofline(const std::vector<KernelCost>& kernels, const MachinePeak& peak);

}  // namespace tfc

#endif  // TFC_RUNTIME_ROOFLINE_HPP_
