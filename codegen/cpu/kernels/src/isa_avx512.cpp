// AVX-512 (F/BW/VL) + FMA kernels. Compiled with -mavx512f -mavx512bw -mavx512vl -mfma;
// only reached after a run-time CPU check (api.cpp). See internal.h for the rules.
#include <immintrin.h>
#include <stdint.h>

#include "internal.h"

#ifndef TFC_AVX512_MR
#define TFC_AVX512_MR 14
#endif
#ifndef TFC_AVX512_NR
#define TFC_AVX512_NR 32
#endif
#ifndef TFC_AVX512_KC
#define TFC_AVX512_KC 512
#endif
#ifndef TFC_AVX512_NT
#define TFC_AVX512_NT 128
#endif

namespace tfc_kern {
namespace {

struct V {
  static constexpr int W = 16;
  using reg = __m512;
  using mask = __mmask16;
  static inline reg zero() { return _mm512_setzero_ps(); }
  static inline reg set1(float x) { return _mm512_set1_ps(x); }
  static inline reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static inline reg loadu_mask(const float* p, mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static inline void storeu(float* p, reg x) { _mm512_storeu_ps(p, x); }
  static inline void storeu_mask(float* p, reg x, mask m) { _mm512_mask_storeu_ps(p, m, x); }
  static inline reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static inline reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static inline reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  static inline reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static inline reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  static inline reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  // x where x > 0 (ordered: NaN is not), b elsewhere.
  static inline reg select_pos(reg x, reg b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, zero(), _CMP_GT_OQ), b, x);
  }
  static inline mask make_mask(int n) { return (mask)((1u << n) - 1u); }
  // 16-bit floats: bf16 is the high half of an f32 (zero-extend, shift); f16 by vcvtph2ps.
  static inline reg bf16_bits(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static inline reg load_bf16(const uint16_t* p) {
    return bf16_bits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static inline reg load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static inline reg load_bf16_part(const uint16_t* p, int n) {
    return bf16_bits(_mm256_maskz_loadu_epi16(make_mask(n), p));
  }
  static inline reg load_f16_part(const uint16_t* p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(make_mask(n), p));
  }
  static inline float hsum(reg x) { return _mm512_reduce_add_ps(x); }
  static inline float hmax(reg x) { return _mm512_reduce_max_ps(x); }
  // exp(x): Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, Cephes polynomial, then
  // scalef (exact 2^n with correct underflow to 0 and overflow to inf).
  static inline reg exp(reg x) {
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.8f)), _mm512_set1_ps(-104.f));
    reg n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    reg r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    reg p = _mm512_set1_ps(1.9875691500E-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
    reg r2 = _mm512_mul_ps(r, r);
    p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.f)));
    return _mm512_scalef_ps(p, n);
  }
};

// Half a register (8 floats; AVX-512VL masks) for the direct path's products of at most 8
// columns (the seed model's per-head 8 x 8 weights): on Zen 4 a 512-bit FMA occupies both
// 256-bit FMA pipes, with lanes masked off or not, so 8 live lanes run twice as fast in
// ymm registers.
struct VH {
  static constexpr int W = 8;
  using reg = __m256;
  using mask = __mmask8;
  static inline reg zero() { return _mm256_setzero_ps(); }
  static inline reg set1(float x) { return _mm256_set1_ps(x); }
  static inline reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static inline reg loadu_mask(const float* p, mask m) { return _mm256_maskz_loadu_ps(m, p); }
  static inline void storeu(float* p, reg x) { _mm256_storeu_ps(p, x); }
  static inline void storeu_mask(float* p, reg x, mask m) { _mm256_mask_storeu_ps(p, m, x); }
  static inline reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static inline reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static inline mask make_mask(int n) { return (mask)((1u << n) - 1u); }
};
#define TFC_HAVE_HALF_V 1

constexpr int MR = TFC_AVX512_MR;
constexpr int NR = TFC_AVX512_NR;
constexpr int KC = TFC_AVX512_KC;
constexpr int NT = TFC_AVX512_NT;
constexpr int MCMAX = 36 * MR;
constexpr int BQ = 2 * MR;
constexpr int BK = 128;

// Packing of transposed B (B stored N x K, e.g. a Linear weight [out, in]): 16 x 16
// blocks transposed in registers instead of 16 strided scalar stores per vector.
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  __m512 o[16];
  for (int e = 0; e < 4; ++e) {
    __m512 ab_lo = _mm512_shuffle_f32x4(r[e], r[4 + e], _MM_SHUFFLE(1, 0, 1, 0));
    __m512 ab_hi = _mm512_shuffle_f32x4(r[e], r[4 + e], _MM_SHUFFLE(3, 2, 3, 2));
    __m512 cd_lo = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], _MM_SHUFFLE(1, 0, 1, 0));
    __m512 cd_hi = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], _MM_SHUFFLE(3, 2, 3, 2));
    o[0 + e] = _mm512_shuffle_f32x4(ab_lo, cd_lo, _MM_SHUFFLE(2, 0, 2, 0));
    o[4 + e] = _mm512_shuffle_f32x4(ab_lo, cd_lo, _MM_SHUFFLE(3, 1, 3, 1));
    o[8 + e] = _mm512_shuffle_f32x4(ab_hi, cd_hi, _MM_SHUFFLE(2, 0, 2, 0));
    o[12 + e] = _mm512_shuffle_f32x4(ab_hi, cd_hi, _MM_SHUFFLE(3, 1, 3, 1));
  }
  for (int i = 0; i < 16; ++i) r[i] = o[i];
}

// dst[k*NR + j] = src[j*ldb + k] for j < NR, k < kc.
void transpose_pack_panel(const float* __restrict src, int64_t ldb, int64_t kc,
                          float* __restrict dst) {
  static_assert(NR % 16 == 0, "panel width");
  int64_t k0 = 0;
  for (; k0 + 16 <= kc; k0 += 16) {
    for (int jb = 0; jb < NR; jb += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (jb + i) * ldb + k0);
      transpose16(r);
      for (int c = 0; c < 16; ++c) _mm512_storeu_ps(dst + (k0 + c) * NR + jb, r[c]);
    }
  }
  for (int j = 0; j < NR; ++j) {
    for (int64_t k = k0; k < kc; ++k) dst[k * NR + j] = src[j * ldb + k];
  }
}
#define TFC_HAVE_TRANSPOSE_PACK 1

// Packing of A (row-major M x K) into an MR-row panel, dst[k*MR + r] = src[r*lda + k] for
// r < nr (<= MR), k < kc: the same in-register transpose on 16 x 16 blocks (rows >= nr
// read as zeros) instead of MR strided scalar stores per k. Small-K products
// (d_model 32) spent about a third of their time in the scalar loop.
void transpose_pack_a_panel(const float* __restrict src, int64_t lda, int nr, int64_t kc,
                            float* __restrict dst) {
  static_assert(MR <= 16, "A panel height");
  const __mmask16 rows = (__mmask16)((1u << MR) - 1u);
  int64_t k0 = 0;
  for (; k0 + 16 <= kc; k0 += 16) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) {
      r[i] = i < nr ? _mm512_loadu_ps(src + i * lda + k0) : _mm512_setzero_ps();
    }
    transpose16(r);
    for (int c = 0; c < 16; ++c) _mm512_mask_storeu_ps(dst + (k0 + c) * MR, rows, r[c]);
  }
  for (int i = 0; i < nr; ++i) {
    for (int64_t k = k0; k < kc; ++k) dst[k * MR + i] = src[i * lda + k];
  }
}
#define TFC_HAVE_TRANSPOSE_PACK_A 1

#include "kernels_impl.inc"

float max_fn(const float* x, int64_t n) { return row_max(x, n); }
double exp_sum_fn(const float* x, int64_t n, float shift, float scale, float* out) {
  return row_exp_sum(x, n, shift, scale, out);
}

}  // namespace

extern const IsaKernels kIsaAvx512 = {"avx512", MR, NR, KC, gemm, attention, max_fn, exp_sum_fn};

}  // namespace tfc_kern
