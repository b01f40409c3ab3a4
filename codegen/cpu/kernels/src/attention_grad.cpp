// Attention backward: tfc_k_attention_grad_f32.
//
// FlashAttention's backward in its simplest exact form: for every query row the
// probabilities are recomputed from Q and K (never read from a saved T x T
// matrix), and with delta = do . o (= sum_j p_j dp_j):
//   dv_j += p_j do,  dp_j = do . v_j,  ds_j = p_j (dp_j - delta),
//   dq   += scale ds_j k_j,  dk_j += scale ds_j q.
// Work is split by (batch, key/value head): each part owns the dK and dV rows of
// its head and the dQ rows of the query heads that share it, so no two threads
// ever write the same element and the sums run in one fixed order.
//
// Query rows go in blocks of kRows (attention_grad_part): the block's scores and dP are
// computed kCols keys at a time with the sums in registers, each K^T / V^T element loaded
// once for the block instead of once a row, and each dK and dV row is read and written
// once a block instead of once a row (one row at a time, those loads and stores bound
// the backward: at T=1024 it ran at a fifth of its FLOP floor; blocked, 2.6x faster).
// Every sum keeps one order whatever the thread count (over c for a score, over query rows
// i for a dK or dV row, over keys j for a dQ row), with fused multiply-adds where the CPU
// has them.
#include "internal.h"
#include "tfc_kernels.h"

#include <cmath>
#include <cstring>

namespace {

struct AttentionGrad {
  const float *q, *k, *v, *o, *dout;
  float *dq, *dk, *dv;
  int64_t heads, kv_heads, tq, tk, d, dv_dim;
  int32_t causal;
  int64_t offset;
  float scale;
};

constexpr int64_t kRows = 4;   // query rows per block
constexpr int64_t kCols = 32;  // keys per register tile of scores (two AVX-512 vectors)

// 16 floats in the widest registers of each clone (one zmm, two ymm, four xmm); built with
// -ffp-contract=fast (CMakeLists.txt), a * b + c on them is one FMA where the clone has it.
typedef float Vec16 __attribute__((vector_size(64), aligned(4), may_alias));
#define TFC_INLINE __attribute__((always_inline)) inline
TFC_INLINE Vec16 load16(const float* p) { return *reinterpret_cast<const Vec16*>(p); }
TFC_INLINE void store16(float* p, Vec16 x) { *reinterpret_cast<Vec16*>(p) = x; }

// out[r][j0 .. j0 + kCols) = sum over c of x_r[c] * yt[c][j0 ..] for the block's rows,
// j0 < cols, each sum over c in order in a register; yt has row stride ldy and at least
// `cols` (a multiple of kCols) columns, out has row stride ldo.
TFC_INLINE void block_products(const float* const* x, int64_t n, const float* __restrict yt,
                               int64_t ldy, int64_t cols, float* __restrict out, int64_t ldo) {
  static_assert(kCols == 32, "two vectors of 16 a row");
  for (int64_t j0 = 0; j0 < cols; j0 += kCols) {
    Vec16 acc[kRows][2] = {};
    for (int64_t c = 0; c < n; ++c) {
      const Vec16 y0 = load16(yt + c * ldy + j0), y1 = load16(yt + c * ldy + j0 + 16);
      for (int64_t r = 0; r < kRows; ++r) {
        const float xr = x[r][c];
        acc[r][0] = xr * y0 + acc[r][0];
        acc[r][1] = xr * y1 + acc[r][1];
      }
    }
    for (int64_t r = 0; r < kRows; ++r) {
      store16(out + r * ldo + j0, acc[r][0]);
      store16(out + r * ldo + j0 + 16, acc[r][1]);
    }
  }
}

// y[c] += sum over the block's rows r < nr, in order, of w[r] * x_r[c]: a dK or dV row,
// read and written once a block, its sums in registers.
TFC_INLINE void rank_update(float* __restrict y, int64_t n, const float* w,
                            const float* const* x, int64_t nr) {
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    Vec16 acc = load16(y + c);
    for (int64_t r = 0; r < nr; ++r) acc = w[r] * load16(x[r] + c) + acc;
    store16(y + c, acc);
  }
  for (; c < n; ++c) {
    float acc = y[c];
    for (int64_t r = 0; r < nr; ++r) acc = w[r] * x[r][c] + acc;
    y[c] = acc;
  }
}

// Cloned per ISA (the library's other kernels dispatch through isa()): the loops below
// run along j or along a row of d elements, independent lanes that vectorize, while every
// sum keeps its order, so a machine gives the same bits at any thread count.
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
void attention_grad_part(void* ctx, int64_t begin, int64_t end) {
  const AttentionGrad& a = *static_cast<const AttentionGrad*>(ctx);
  const int64_t group = a.heads / a.kv_heads;
  const int64_t tk = a.tk, d = a.d, dvd = a.dv_dim;
  const int64_t ld = (tk + kCols - 1) / kCols * kCols;  // keys, padded to whole tiles
  const int64_t ldk = (d + kCols - 1) / kCols * kCols;  // K's columns, padded likewise
  // This thread's scratch: the head's K and V transposed (d x ld, dv x ld) so that a
  // score is a sum along c of vectors along j, and K with padded rows (ld x ldk) for dQ,
  // all zero-padded; the block's probabilities, dP and dS (kRows x ld each), its dQ rows
  // (kRows x ldk), and zeros standing in for the rows past the block's last.
  const int64_t zeros = ld > ldk ? ld : ldk;
  float* __restrict kt = tfc_kern::scratch(
      6, static_cast<size_t>(ld * (d + dvd + ldk + 3 * kRows) + kRows * ldk + zeros));
  float* __restrict vt = kt + ld * d;
  float* __restrict kp = vt + ld * dvd;
  float* __restrict p = kp + ld * ldk;
  float* __restrict dp = p + kRows * ld;
  float* __restrict ds = dp + kRows * ld;
  float* __restrict dqb = ds + kRows * ld;
  float* __restrict zero = dqb + kRows * ldk;
  std::memset(zero, 0, sizeof(float) * zeros);
  std::memset(kp, 0, sizeof(float) * ld * ldk);
  for (int64_t part = begin; part < end; ++part) {
    const int64_t b = part / a.kv_heads, hk = part % a.kv_heads;
    const float* kh = a.k + (b * a.kv_heads + hk) * tk * d;
    const float* vh = a.v + (b * a.kv_heads + hk) * tk * dvd;
    float* dkh = a.dk + (b * a.kv_heads + hk) * tk * d;
    float* dvh = a.dv + (b * a.kv_heads + hk) * tk * dvd;
    std::memset(dkh, 0, sizeof(float) * tk * d);
    std::memset(dvh, 0, sizeof(float) * tk * dvd);
    for (int64_t c = 0; c < d; ++c) {
      for (int64_t j = 0; j < tk; ++j) kt[c * ld + j] = kh[j * d + c];
      for (int64_t j = tk; j < ld; ++j) kt[c * ld + j] = 0.0f;
    }
    for (int64_t c = 0; c < dvd; ++c) {
      for (int64_t j = 0; j < tk; ++j) vt[c * ld + j] = vh[j * dvd + c];
      for (int64_t j = tk; j < ld; ++j) vt[c * ld + j] = 0.0f;
    }
    for (int64_t j = 0; j < tk; ++j) std::memcpy(kp + j * ldk, kh + j * d, sizeof(float) * d);
    for (int64_t g = 0; g < group; ++g) {
      const int64_t h = hk * group + g;
      for (int64_t i0 = 0; i0 < a.tq; i0 += kRows) {
        const int64_t nr = a.tq - i0 < kRows ? a.tq - i0 : kRows;
        const int64_t row0 = (b * a.heads + h) * a.tq + i0;
        const float* qr[kRows];
        const float* dor[kRows];
        const float* dsr[kRows];
        int64_t limit[kRows];
        int64_t cols = 0;  // keys any row of the block attends to
        for (int64_t r = 0; r < kRows; ++r) {
          qr[r] = r < nr ? a.q + (row0 + r) * d : zero;
          dor[r] = r < nr ? a.dout + (row0 + r) * dvd : zero;
          dsr[r] = r < nr ? ds + r * ld : zero;
          limit[r] = r < nr ? tk : 0;
          if (a.causal && r < nr) {
            const int64_t last = i0 + r + a.offset + 1;
            limit[r] = last < 0 ? 0 : (last < tk ? last : tk);
          }
          cols = limit[r] > cols ? limit[r] : cols;
        }
        if (cols == 0) {
          std::memset(a.dq + row0 * d, 0, sizeof(float) * nr * d);
          continue;
        }
        const int64_t tiles = (cols + kCols - 1) / kCols * kCols;
        block_products(qr, d, kt, ld, tiles, p, ld);
        block_products(dor, dvd, vt, ld, tiles, dp, ld);
        for (int64_t r = 0; r < nr; ++r) {
          const int64_t lim = limit[r];
          float* __restrict pr = p + r * ld;
          float* __restrict dpr = dp + r * ld;
          float* __restrict dsw = ds + r * ld;
          // Masked keys of the block, up to the whole tile: no probability, no gradient.
          for (int64_t j = lim; j < tiles; ++j) pr[j] = dsw[j] = 0.0f;
          if (lim == 0) continue;
          // Elementwise loops apart from the reductions (max, sum), which keep their order
          // and would hold the elementwise work to one lane at a time.
          for (int64_t j = 0; j < lim; ++j) pr[j] *= a.scale;
          float max = -INFINITY;
          for (int64_t j = 0; j < lim; ++j) max = pr[j] > max ? pr[j] : max;
          for (int64_t j = 0; j < lim; ++j) pr[j] = tfc_kern::exp_f32(pr[j] - max);
          float sum = 0.0f;
          for (int64_t j = 0; j < lim; ++j) sum += pr[j];
          const float inv = 1.0f / sum;
          const float* __restrict oi = a.o + (row0 + r) * dvd;
          const float* __restrict doi = dor[r];
          float delta = 0.0f;
          for (int64_t c = 0; c < dvd; ++c) delta += doi[c] * oi[c];
          for (int64_t j = 0; j < lim; ++j) {
            pr[j] *= inv;
            dsw[j] = pr[j] * (dpr[j] - delta) * a.scale;
          }
        }
        // dV and dK rows: each a sum over the query rows in order (a masked key adds 0).
        for (int64_t j = 0; j < cols; ++j) {
          float pj[kRows], dsj[kRows];
          for (int64_t r = 0; r < nr; ++r) {
            pj[r] = p[r * ld + j];
            dsj[r] = ds[r * ld + j];
          }
          rank_update(dvh + j * dvd, dvd, pj, dor, nr);
          rank_update(dkh + j * d, d, dsj, qr, nr);
        }
        // dQ rows: dS K, each a sum over the keys in order.
        block_products(dsr, cols, kp, ldk, ldk, dqb, ldk);
        for (int64_t r = 0; r < nr; ++r) {
          std::memcpy(a.dq + (row0 + r) * d, dqb + r * ldk, sizeof(float) * d);
        }
      }
    }
  }
}

}  // namespace

extern "C" void tfc_k_attention_grad_f32(const float* q, const float* k, const float* v,
                                         const float* out, const float* grad_out, float* dq,
                                         float* dk, float* dv, int64_t batch, int64_t heads,
                                         int64_t kv_heads, int64_t tq, int64_t tk, int64_t d,
                                         int64_t dv_dim, int32_t causal, int64_t offset,
                                         float scale) {
  AttentionGrad a{q,     k,        v,  out, grad_out, dq,     dk,     dv,     heads,
                  kv_heads, tq,    tk, d,   dv_dim,   causal, offset, scale};
  tfc_kern::parallel_for(batch * kv_heads, 1, attention_grad_part, &a);
}
