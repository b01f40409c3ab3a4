// Counter-based random numbers: Philox-4x32-10 (Salmon et al., SC'11). The output is a
// pure function of (seed, counter): the same on any thread count and any ISA.
#include "random.h"

#include "tfc_kernels.h"

namespace tfc_kern {

Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                      uint32_t k1) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = (uint64_t)M0 * c0;
    const uint64_t p1 = (uint64_t)M1 * c2;
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += W0;
    k1 += W1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

double uniform_double(int64_t seed, int64_t counter, uint32_t stream) {
  const uint64_t s = (uint64_t)seed, c = (uint64_t)counter;
  Philox4 r = philox4x32_10((uint32_t)c, (uint32_t)(c >> 32), stream, 0u, (uint32_t)s,
                            (uint32_t)(s >> 32));
  const uint64_t bits = ((uint64_t)r.v[0] << 21) ^ (uint64_t)(r.v[1] >> 11);  // 53 bits
  return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace tfc_kern

extern "C" float tfc_k_uniform(int64_t seed, int64_t counter) {
  const uint64_t s = (uint64_t)seed, c = (uint64_t)counter;
  tfc_kern::Philox4 r = tfc_kern::philox4x32_10((uint32_t)c, (uint32_t)(c >> 32), 0u, 0u,
                                                (uint32_t)s, (uint32_t)(s >> 32));
  return (float)(r.v[0] >> 8) * (1.0f / 16777216.0f);  // 24 bits: exactly representable
}
