// The two numbers a roofline needs (tfc::MachinePeak), measured on this machine: the peak
// f32 FMA rate and the memory bandwidth (a STREAM triad; and reads alone), each with a given
// number of threads. On this project's Zen 4 hosts reads alone run at 0.9-1.0x the triad;
// both move up to 1.7x with the other tenants' load.
#ifndef TFC_TOOLS_TFC_RUN_MACHINE_PEAK_HPP_
#define TFC_TOOLS_TFC_RUN_MACHINE_PEAK_HPP_

#include <cstddef>

#include "tfc/runtime/roofline.hpp"

namespace tfc::run {

// The best of a few short runs (about 0.3 s in all) of
//  - a loop of independent f32 FMAs in registers, with the widest vectors the CPU has, and
//  - a[i] = b[i] + s * c[i] over three arrays of |arrayBytes| each (far beyond the caches),
//  - a sum of the same three arrays,
// each on |threads| threads at once.
MachinePeak measureMachinePeak(int threads, size_t arrayBytes = size_t(64) << 20);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_MACHINE_PEAK_HPP_
