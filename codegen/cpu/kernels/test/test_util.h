// Shared helpers of the kernel tests: seeded random inputs, a std::thread host, ISA list.
#ifndef TFC_CODEGEN_CPU_KERNELS_TEST_TEST_UTIL_H_
#define TFC_CODEGEN_CPU_KERNELS_TEST_TEST_UTIL_H_

#include <stdint.h>

#include <random>
#include <string>
#include <vector>

#include "tfc_kernels.h"

namespace tfc_kern_test {

// The seed of this test run: TFC_TEST_SEED if set, else drawn once per run
// (runtime/test/test_seed.hpp); printed after every failing test, and by the assertions
// under TFC_SEED_TRACE below.
uint64_t run_seed();

// Uniform values in [-1, 1) excluding a small band around 0 (inputs are never zero).
std::vector<float> random_vec(std::mt19937_64& rng, size_t n, float lo = -1.f, float hi = 1.f);

// 16-bit copies of B operands (tfc_k_*_bx_f32): x rounded to nearest even into the bits
// of bf16 (b_type TFC_K_BF16) or IEEE half (TFC_K_F16; |x| in half's normal range), and
// x replaced by the rounded value, which the reference then uses.
std::vector<uint16_t> round_to_16bit(std::vector<float>& x, int b_type);

// ISAs this CPU can run ("avx512", "avx2", "scalar").
std::vector<std::string> available_isas();

// A host whose parallel_for splits [0, n) into `threads` contiguous parts (at least
// `grain` each) and runs them on fresh std::threads (the caller runs the first part).
class ThreadHost {
 public:
  explicit ThreadHost(int threads);
  const tfc_host_api_t* api() const { return &api_; }
  int64_t calls() const { return calls_; }

 private:
  static void parallel_for(void* user, int64_t n, int64_t grain,
                           void (*fn)(void*, int64_t, int64_t), void* ctx);
  static void report_error(void* user, const char* message);
  tfc_host_api_t api_;
  int threads_;
  int64_t calls_ = 0;
};

// RAII: sets the host for this thread, restores "no host" on exit.
struct ScopedHost {
  explicit ScopedHost(const tfc_host_api_t* h) { tfc_kernels_set_host(h); }
  ~ScopedHost() { tfc_kernels_set_host(nullptr); }
};

// max |a - b| / max(max |b|, tiny) over the finite elements; +inf (a failure under any
// tolerance) when an element is NaN on either side or infinite on one side only or with
// the other sign.
double rel_max_err(const float* a, const double* b, size_t n);

}  // namespace tfc_kern_test

#define TFC_SEED_TRACE(seed) SCOPED_TRACE(::testing::Message() << "seed=" << (seed) \
                                           << " (rerun with TFC_TEST_SEED=" << (seed) << ")")

#endif  // TFC_CODEGEN_CPU_KERNELS_TEST_TEST_UTIL_H_
