// Internal interfaces of the tfc CPU kernel library (not part of the C API).
//
// Layout: the public C functions (src/api.cpp, src/sample.cpp, src/random.cpp) are
// compiled for the x86-64 baseline. The heavy kernels (packed sgemm, attention, the
// vectorized exp-sum used by sampling) live in src/kernels_impl.inc, written once against
// a small vector abstraction `V`, and compiled three times: src/isa_avx512.cpp
// (-mavx512f -mavx512bw -mavx512vl -mfma), src/isa_avx2.cpp (-mavx2 -mfma) and
// src/isa_scalar.cpp (baseline). Each of those translation units keeps everything in an
// anonymous namespace and exports only one constant table (IsaKernels); the baseline code
// picks a table at run time with __builtin_cpu_supports. Nothing compiled with wider ISA
// flags may be an inline function or template with external linkage (the linker could
// keep the AVX-512 copy of a COMDAT for the whole program), so the ISA units use no
// std:: templates.
#ifndef TFC_CODEGEN_CPU_KERNELS_SRC_INTERNAL_H_
#define TFC_CODEGEN_CPU_KERNELS_SRC_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include <cmath>
#include <cstring>

namespace tfc_kern {

// Element types of a product's B operand (the TFC_K_* codes of tfc_kernels.h).
enum BType { kBF32 = 0, kBBf16 = 1, kBF16 = 2 };
inline size_t btype_bytes(int t) { return t == kBF32 ? 4 : 2; }

struct GemmArgs {
  const float* a;
  const void* b;  // b_type elements; stride_b counts elements
  float* c;
  const float* bias;  // [n] or nullptr, added once to every row of C
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
  int64_t stride_a, stride_b, stride_c;
  bool accumulate;
  // Epilogue, applied once per element of C after its last K contribution:
  //   C = act(op(A) op(B) + bias (+ C when accumulate)) + residual
  // act: 0 none, 1 gelu (tanh approximation), 2 relu, 3 silu, 4 leaky relu with slope
  // act_alpha. residual: laid out like C (stride_c apart) or nullptr; it may be C itself
  // (in place).
  const float* residual = nullptr;
  int act = 0;
  float act_alpha = 0.f;
  // B's element type (BType). A bf16 or f16 B is widened to f32 as the kernels read it
  // (in registers on the small-M paths, while packing on the packed path): the product
  // reads B's 16-bit bytes once, and every sum stays in f32.
  int b_type = kBF32;
  // When > 0, batch item bi reads B's matrix bi % b_period (stride_b apart): a weight per
  // head, [H, K, N], broadcast over the leading batch dims of [B, H, M, K] activations.
  int64_t b_period = 0;
};

// The matrix of B that batch item bi reads (0 for all items when stride_b is 0).
inline int64_t b_matrix(const GemmArgs& g, int64_t bi) {
  if (g.stride_b == 0) return 0;
  return g.b_period > 0 ? bi % g.b_period : bi;
}
// How many distinct matrices of B a product reads.
inline int64_t b_matrices(const GemmArgs& g) {
  if (g.stride_b == 0) return 1;
  return g.b_period > 0 && g.b_period < g.batch ? g.b_period : g.batch;
}

struct AttnArgs {
  const float* q;
  const void* k;  // kv_type elements (BType), as v
  const void* v;
  float* out;
  int64_t batch, heads, kv_heads, tq, tk, d, dv;
  bool causal;
  int64_t offset;
  float scale;
  // K's and V's element type: a 16-bit KV cache is widened block by block as it is read
  // (decode reads the whole visible cache every token).
  int kv_type = kBF32;
  // A paged KV cache (decode only, tq = 1): k and v are pools [blocks, kv_heads,
  // block_size, d]; row b's key j is in block blocks[b * max_blocks + j / block_size], and
  // the row's query sees its first row_keys[b] keys (causal and offset are not read).
  const int32_t* blocks = nullptr;
  int64_t block_size = 0, max_blocks = 0;
  const int64_t* row_keys = nullptr;
};

// The keys [0, limit) that query i sees: all tk without a mask; with `causal`, key j is
// visible iff j <= i + offset (clamped to [0, tk]).
inline int64_t causal_limit(bool causal, int64_t i, int64_t offset, int64_t tk) {
  if (!causal) return tk;
  const int64_t last = i + offset + 1;
  return last < 0 ? 0 : (last < tk ? last : tk);
}

// Attention with d = dv in {8, 16} and at most 32 keys, on any ISA (attention_grad.cpp):
// returns false, doing nothing, for the other shapes.
bool attention_small(const AttnArgs& a);

struct IsaKernels {
  const char* name;
  int mr, nr, kc;  // microkernel shape and K block, for reports and tests
  void (*gemm)(const GemmArgs& args);
  void (*attention)(const AttnArgs& args);
  // Returns max(x[0..n)) (n >= 1; NaN-free input assumed).
  float (*max)(const float* x, int64_t n);
  // out[i] = exp((x[i] - shift) * scale) for i < n; returns their sum in double.
  double (*exp_sum)(const float* x, int64_t n, float shift, float scale, float* out);
};

extern const IsaKernels kIsaAvx512;
extern const IsaKernels kIsaAvx2;
extern const IsaKernels kIsaScalar;

// The table in use (chosen on first call, or forced by set_isa / TFC_KERNELS_ISA).
const IsaKernels& isa();

// ---- Math ----
// exp(x) in f32, within 1.3 ulp of the exact value: the algorithm of the compiler's
// tfc-polynomial-math (codegen/cpu/PolynomialMath.cpp), so that a kernel of the library
// and a generated loop give the same bits. Cody-Waite reduction by ln 2, Cephes' degree-6
// polynomial, 2^n built in the exponent bits (in two halves, so that n = 128 at the top of
// the range does not overflow); +inf above the range, 0 below, NaN stays NaN. Branch-free
// with exact fused multiply-adds, so loops over it vectorize and every clone of a
// function (target_clones) computes the same bits.
inline float exp_f32(float x) {
  const float hi = 88.72283935546875f, lo = -87.33654022216797f;
  float xc = x > lo ? x : lo;
  xc = xc < hi ? xc : hi;
  const float n = std::floor(std::fma(xc, 1.44269504088896341f, 0.5f));
  float r = std::fma(n, -0.693359375f, xc);
  r = std::fma(n, 2.12194440e-4f, r);
  float poly = 1.9875691500e-4f;
  poly = std::fma(poly, r, 1.3981999507e-3f);
  poly = std::fma(poly, r, 8.3334519073e-3f);
  poly = std::fma(poly, r, 4.1665795894e-2f);
  poly = std::fma(poly, r, 1.6666665459e-1f);
  poly = std::fma(poly, r, 5.0000001201e-1f);
  poly = std::fma(poly, r * r, r + 1.0f);
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  auto pow2 = [](int32_t e) {
    const uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  };
  float y = poly * pow2(n1) * pow2(n2);
  y = x > hi ? INFINITY : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

// ---- 16-bit floats ----
// Exact widenings of bf16 and IEEE half bit patterns (all values: subnormals, infinities,
// NaN payloads; a signaling half NaN comes out quiet). `static`: internal linkage in every unit, so that no AVX-512 copy of them
// can be kept for the baseline code (see the layout note at the top).
static inline float bf16_to_f32(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
static inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (e == 0) {  // zero or subnormal: man * 2^-24, exact in f32
    const float f = (float)man * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  // (a NaN is made quiet, as vcvtph2ps does: every ISA gives the same bits)
  const uint32_t u = e == 0x1f ? sign | 0x7f800000u | (man ? (man | 0x200u) << 13 : 0u)
                               : sign | (e + 112u) << 23 | man << 13;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ---- Context (src/context.cpp) ----
// Runs fn over [0, n) with the current thread's host (serially without one, or when
// called from inside a kernel's own parallel region). Workers see the caller's context,
// so tfc_kernels_error() from a worker reaches the caller's pending error.
void parallel_for(int64_t n, int64_t grain, void (*fn)(void* ctx, int64_t begin, int64_t end),
                  void* ctx);

// A per-thread, 64-byte aligned scratch buffer of at least `count` floats. Slots are
// independent; a slot's content is undefined after a call with a larger count.
float* scratch(int slot, size_t count);
constexpr int kScratchSlots = 8;

}  // namespace tfc_kern

// Test hooks (C linkage, not in the public header): force an ISA by name ("avx512",
// "avx2", "scalar"; nullptr: automatic). Returns 0 when the CPU cannot run it.
extern "C" int tfc_kernels_internal_set_isa(const char* name);
extern "C" const char* tfc_kernels_internal_isa_name(void);

#endif  // TFC_CODEGEN_CPU_KERNELS_SRC_INTERNAL_H_
