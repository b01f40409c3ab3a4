// The two numbers a roofline needs, measured on this machine: the peak f32 FMA rate and
// the memory bandwidth (a STREAM triad; and reads alone), each with a given number of
// threads.
#ifndef TFC_TOOLS_TFC_RUN_MACHINE_PEAK_HPP_
#define TFC_TOOLS_TFC_RUN_MACHINE_PEAK_HPP_

#include <string>

namespace tfc::run {

struct MachinePeak {
  double flopsPerSecond = 0;  // f32, fused multiply-adds counted as 2 FLOPs
  double bytesPerSecond = 0;  // STREAM triad convention: 12 bytes per f32 element
  // Reads alone (a sum over the same arrays, 4 bytes an element): the ceiling of a kernel
  // that only streams its operands in (a batch-1 decode's weights). On this project's Zen 4
  // hosts 0.9-1.0x the triad; both move up to 1.7x with the other tenants' load.
  double readBytesPerSecond = 0;
  std::string isa;            // the vector ISA the FMA loop ran with ("avx512f", ...)
};

// The best of a few short runs (about 0.3 s in all) of
//  - a loop of independent f32 FMAs in registers, with the widest vectors the CPU has, and
//  - a[i] = b[i] + s * c[i] over three arrays of |arrayBytes| each (far beyond the caches),
//  - a sum of the same three arrays,
// each on |threads| threads at once.
MachinePeak measureMachinePeak(int threads, size_t arrayBytes = size_t(64) << 20);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_MACHINE_PEAK_HPP_
