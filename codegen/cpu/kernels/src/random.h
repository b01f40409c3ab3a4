#ifndef TFC_CODEGEN_CPU_KERNELS_SRC_RANDOM_H_
#define TFC_CODEGEN_CPU_KERNELS_SRC_RANDOM_H_

#include <stdint.h>

namespace tfc_kern {

struct Philox4 {
  uint32_t v[4];
};

// Philox-4x32 with 10 rounds: counter (c0..c3), key (k0, k1).
Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                      uint32_t k1);

// A double in [0, 1) with 53 random bits from (seed, counter) in stream `stream`
// (stream 0 is tfc_k_uniform's; sampling uses its own).
double uniform_double(int64_t seed, int64_t counter, uint32_t stream);

constexpr uint32_t kSampleStream = 0x53414D50u;  // "SAMP"

}  // namespace tfc_kern

#endif  // TFC_CODEGEN_CPU_KERNELS_SRC_RANDOM_H_
