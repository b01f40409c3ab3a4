// AVX2 + FMA (+ F16C) kernels. Compiled with -mavx2 -mfma -mf16c; only reached after a run-time CPU check
// (api.cpp). See internal.h for the rules.
#include <immintrin.h>
#include <stdint.h>

#include "internal.h"

namespace tfc_kern {
namespace {

struct V {
  static constexpr int W = 8;
  using reg = __m256;
  using mask = __m256i;
  static inline reg zero() { return _mm256_setzero_ps(); }
  static inline reg set1(float x) { return _mm256_set1_ps(x); }
  static inline reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static inline reg loadu_mask(const float* p, mask m) { return _mm256_maskload_ps(p, m); }
  static inline void storeu(float* p, reg x) { _mm256_storeu_ps(p, x); }
  static inline void storeu_mask(float* p, reg x, mask m) { _mm256_maskstore_ps(p, m, x); }
  static inline reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static inline reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static inline reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
  static inline reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static inline reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  static inline reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  // x where x > 0 (ordered: NaN is not), b elsewhere.
  static inline reg select_pos(reg x, reg b) {
    return _mm256_blendv_ps(b, x, _mm256_cmp_ps(x, zero(), _CMP_GT_OQ));
  }
  static inline mask make_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // 16-bit floats: bf16 is the high half of an f32 (zero-extend, shift); f16 by F16C's
  // vcvtph2ps. Partial loads go through a zeroed copy (AVX2 has no 16-bit masked load).
  static inline reg bf16_bits(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static inline __m128i load8(const uint16_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static inline __m128i load8_part(const uint16_t* p, int n) {
    uint16_t t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < n; ++i) t[i] = p[i];
    return load8(t);
  }
  static inline reg load_bf16(const uint16_t* p) { return bf16_bits(load8(p)); }
  static inline reg load_f16(const uint16_t* p) { return _mm256_cvtph_ps(load8(p)); }
  static inline reg load_bf16_part(const uint16_t* p, int n) { return bf16_bits(load8_part(p, n)); }
  static inline reg load_f16_part(const uint16_t* p, int n) {
    return _mm256_cvtph_ps(load8_part(p, n));
  }
  static inline float hsum(reg x) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static inline float hmax(reg x) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // exp(x) as in isa_avx512.cpp; 2^n built in the exponent field, results for
  // x < -87.3 flushed to 0.
  static inline reg exp(reg x) {
    reg tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33f), _CMP_LT_OQ);
    x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.37f)), _mm256_set1_ps(-87.33f));
    reg n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    reg r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    reg p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    reg r2 = _mm256_mul_ps(r, r);
    p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.f)));
    // n in [-126, 127] here; 2^n = (n + 127) << 23. n = 128 (x near 88.7) is split.
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i half = _mm256_srai_epi32(ni, 1);
    reg s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
    reg s2 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), _mm256_set1_epi32(127)), 23));
    reg res = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    return _mm256_andnot_ps(tiny, res);
  }
};

constexpr int MR = 6;
constexpr int NR = 16;
constexpr int KC = 256;
constexpr int NT = 128;
constexpr int MCMAX = 80 * MR;
constexpr int BQ = 4 * MR;
constexpr int BK = 128;

// Packing of transposed B with in-register 8 x 8 transposes (see isa_avx512.cpp).
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {
    u[4 * h + 0] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int e = 0; e < 4; ++e) {
    r[e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x20);
    r[4 + e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x31);
  }
}

// dst[k*NR + j] = src[j*ldb + k] for j < NR, k < kc.
void transpose_pack_panel(const float* __restrict src, int64_t ldb, int64_t kc,
                          float* __restrict dst) {
  static_assert(NR % 8 == 0, "panel width");
  int64_t k0 = 0;
  for (; k0 + 8 <= kc; k0 += 8) {
    for (int jb = 0; jb < NR; jb += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (jb + i) * ldb + k0);
      transpose8(r);
      for (int c = 0; c < 8; ++c) _mm256_storeu_ps(dst + (k0 + c) * NR + jb, r[c]);
    }
  }
  for (int j = 0; j < NR; ++j) {
    for (int64_t k = k0; k < kc; ++k) dst[k * NR + j] = src[j * ldb + k];
  }
}
#define TFC_HAVE_TRANSPOSE_PACK 1

#include "kernels_impl.inc"

float max_fn(const float* x, int64_t n) { return row_max(x, n); }
double exp_sum_fn(const float* x, int64_t n, float shift, float scale, float* out) {
  return row_exp_sum(x, n, shift, scale, out);
}

}  // namespace

extern const IsaKernels kIsaAvx2 = {"avx2", MR, NR, KC, gemm, attention, max_fn, exp_sum_fn};

}  // namespace tfc_kern
