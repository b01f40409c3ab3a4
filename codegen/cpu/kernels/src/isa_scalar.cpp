// Portable kernels (x86-64 baseline or any target): the same algorithms with a
// one-float "vector". Used when the CPU has neither AVX-512 nor AVX2+FMA.
#include <math.h>
#include <stdint.h>

#include "internal.h"

namespace tfc_kern {
namespace {

struct V {
  static constexpr int W = 1;
  using reg = float;
  using mask = int;
  static inline reg zero() { return 0.f; }
  static inline reg set1(float x) { return x; }
  static inline reg loadu(const float* p) { return *p; }
  static inline reg loadu_mask(const float* p, mask m) { return m ? *p : 0.f; }
  static inline void storeu(float* p, reg x) { *p = x; }
  static inline void storeu_mask(float* p, reg x, mask m) {
    if (m) *p = x;
  }
  static inline reg fmadd(reg a, reg b, reg c) { return a * b + c; }
  static inline reg add(reg a, reg b) { return a + b; }
  static inline reg sub(reg a, reg b) { return a - b; }
  static inline reg mul(reg a, reg b) { return a * b; }
  static inline reg div(reg a, reg b) { return a / b; }
  static inline reg max(reg a, reg b) { return a > b ? a : b; }
  static inline reg select_pos(reg x, reg b) { return x > 0.f ? x : b; }  // NaN: b
  static inline mask make_mask(int n) { return n > 0; }
  static inline reg load_bf16(const uint16_t* p) { return bf16_to_f32(*p); }
  static inline reg load_f16(const uint16_t* p) { return f16_to_f32(*p); }
  static inline reg load_bf16_part(const uint16_t* p, int n) { return n > 0 ? load_bf16(p) : 0.f; }
  static inline reg load_f16_part(const uint16_t* p, int n) { return n > 0 ? load_f16(p) : 0.f; }
  static inline float hsum(reg x) { return x; }
  static inline float hmax(reg x) { return x; }
  static inline reg exp(reg x) { return expf(x); }
};

constexpr int MR = 4;
constexpr int NR = 4;
constexpr int KC = 256;
constexpr int NT = 64;
constexpr int MCMAX = 64 * MR;
constexpr int BQ = 4 * MR;
constexpr int BK = 64;

#include "kernels_impl.inc"

float max_fn(const float* x, int64_t n) { return row_max(x, n); }
double exp_sum_fn(const float* x, int64_t n, float shift, float scale, float* out) {
  return row_exp_sum(x, n, shift, scale, out);
}

}  // namespace

extern const IsaKernels kIsaScalar = {"scalar", MR, NR, KC, gemm, attention, max_fn, exp_sum_fn};

}  // namespace tfc_kern
