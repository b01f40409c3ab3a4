// tfc's CUDA kernel library: attention forward on tensor cores (FlashAttention-2's
// schedule: Dao, "FlashAttention-2", 2023, algorithm 1).
//
// tfc_flash_attention_fwd: out = softmax(scale * q k^T + mask) v for 16-bit q, k, v (bf16
// or f16, all one type) with f32 accumulation, q [B, H, Tq, D], k [B, Hkv, Tk, D],
// v [B, Hkv, Tk, Dv], out [B, H, Tq, Dv]; query head h reads key head h / (H / Hkv)
// (grouped-query). Causal: key j is visible to query i iff j < clamp(i + off + 1, 0, Tk)
// (off: the query block's position in the keys, Tk - Tq without a KV cache); a row that
// sees no key is 0. The semantics of the CPU kernel library's attention.
//
// Launch: block (128, 1, 1), grid (B * H, ceil(Tq / 64), 1). A block takes 64 query rows of
// one head, a warp 16 of them, whose query fragments stay in registers. For each tile of
// 64 keys the block stages K (pairs along D) and V transposed (pairs along the keys) in
// shared memory; each warp computes its 16 x 64 scores with mma.sync, keeps an online
// softmax (running max and sum per row, the accumulator rescaled when the max grows),
// rounds the probabilities to the operand type and multiplies them by V with mma.sync,
// reusing the score fragments as the A operand (a C fragment's layout is an A fragment's
// half). The T x T scores never reach memory. Under a causal mask the block stops at the
// last key its last row sees. Sums over a row's four lanes use a fixed shuffle order, so
// the result is the same bits on every run.
//
// D and Dv: multiples of 16, at most 128 (the emitter falls back to the SIMT kernel
// otherwise). Registers per thread: D / 4 words of query fragments, 32 scores and Dv / 2
// accumulators.
#ifndef TFC_KERNELS_ATTENTION_CUH
#define TFC_KERNELS_ATTENTION_CUH

#include "cooperative.cuh"

template <bool kBf16, int kD, int kDv, bool kCausal, typename Out>
__device__ __forceinline__ void tfc_flash_attention_fwd(const unsigned short* q,
                                                        const unsigned short* k,
                                                        const unsigned short* v, Out* out,
                                                        long long H, long long Hkv,
                                                        long long Tq, long long Tk,
                                                        long long off, float scale) {
  static_assert(kD % 16 == 0 && kDv % 16 == 0 && kD <= 128 && kDv <= 128,
                "head dims: multiples of 16, at most 128");
  constexpr int kRows = 64, kKeys = 64, kThreads = 128;
  constexpr int kKWords = kD / 2, kKStride = kKWords + 4;  // K tile: [key][d pair]
  constexpr int kVWords = kKeys / 2, kVStride = kVWords + 4;  // V^T tile: [dv][key pair]
  constexpr int kDSteps = kD / 16, kKeyTiles8 = kKeys / 8, kDvTiles8 = kDv / 8;
  TFC_SHARED(unsigned, k_tile, kKeys * kKStride);
  TFC_SHARED(unsigned, vt_tile, kDv * kVStride);

  const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, t = lane & 3;
  const long long bh = blockIdx.x, b = bh / H, h = bh % H;
  const long long hk = h / (H / Hkv);
  const long long q0 = (long long)blockIdx.y * kRows;
  const unsigned short* qh = q + bh * Tq * kD;
  const unsigned short* kh = k + (b * Hkv + hk) * Tk * kD;
  const unsigned short* vh = v + (b * Hkv + hk) * Tk * kDv;
  Out* oh = out + bh * Tq * kDv;

  // This lane's two rows (g and g + 8 of the warp's 16) and the keys each sees.
  long long row[2], lim[2];
  TFC_UNROLL
  for (int r = 0; r < 2; ++r) {
    row[r] = q0 + warp * 16 + g + 8 * r;
    long long l = Tk;
    if (kCausal) {
      l = row[r] + off + 1;
      l = l < 0 ? 0 : (l > Tk ? Tk : l);
    }
    lim[r] = row[r] < Tq ? l : 0;
  }
  // The keys the block's last row sees (the same in every thread: a uniform loop).
  long long end = Tk;
  if (kCausal) {
    const long long last = (q0 + kRows < Tq ? q0 + kRows : Tq) - 1;
    end = last + off + 1;
    end = end < 0 ? 0 : (end > Tk ? Tk : end);
  }

  // Query fragments (A operand, 16 x kD): rows past Tq are zero.
  unsigned qf[kDSteps][4];
  TFC_UNROLL
  for (int s = 0; s < kDSteps; ++s)
    TFC_UNROLL
    for (int w = 0; w < 4; ++w) {
      const long long r = row[w & 1];
      const int col = s * 16 + 2 * t + (w >= 2 ? 8 : 0);
      unsigned lo = 0, hi = 0;
      if (r < Tq) {
        lo = qh[r * kD + col];
        hi = qh[r * kD + col + 1];
      }
      qf[s][w] = lo | (hi << 16);
    }

  float acc[kDvTiles8][4];
  TFC_UNROLL
  for (int n = 0; n < kDvTiles8; ++n)
    TFC_UNROLL
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.0f;
  const float neg_inf = -__int_as_float(0x7f800000);
  float m[2] = {neg_inf, neg_inf}, l[2] = {0.0f, 0.0f};  // l: this lane's part of the sum

  for (long long k0 = 0; k0 < end; k0 += kKeys) {
    for (int i = tid; i < kKeys * kKWords; i += kThreads) {
      const int r = i / kKWords, w = i % kKWords;
      unsigned lo = 0, hi = 0;
      if (k0 + r < Tk) {
        lo = kh[(k0 + r) * kD + 2 * w];
        hi = kh[(k0 + r) * kD + 2 * w + 1];
      }
      k_tile[r * kKStride + w] = lo | (hi << 16);
    }
    for (int i = tid; i < kDv * kVWords; i += kThreads) {
      const int w = i / kDv, n = i % kDv;  // consecutive threads: consecutive columns of V
      const long long key = k0 + 2 * w;
      unsigned lo = 0, hi = 0;
      if (key < Tk) lo = vh[key * kDv + n];
      if (key + 1 < Tk) hi = vh[(key + 1) * kDv + n];
      vt_tile[n * kVStride + w] = lo | (hi << 16);
    }
    __syncthreads();

    // Scores: 16 rows x 64 keys, eight 16 x 8 fragments.
    float s[kKeyTiles8][4];
    TFC_UNROLL
    for (int j = 0; j < kKeyTiles8; ++j) {
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;
      TFC_UNROLL
      for (int d = 0; d < kDSteps; ++d) {
        unsigned bf[2];
        bf[0] = k_tile[(j * 8 + g) * kKStride + d * 8 + t];
        bf[1] = k_tile[(j * 8 + g) * kKStride + d * 8 + t + 4];
        tfc_mma_m16n8k16<kBf16>(s[j], qf[d], bf, s[j]);
      }
    }
    // Scale, mask, and the running max of each row over its four lanes.
    float tile_max[2] = {neg_inf, neg_inf};
    TFC_UNROLL
    for (int j = 0; j < kKeyTiles8; ++j)
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        const long long key = k0 + j * 8 + 2 * t + (e & 1);
        s[j][e] = key < lim[r] ? s[j][e] * scale : neg_inf;
        tile_max[r] = fmaxf(tile_max[r], s[j][e]);
      }
    float corr[2], base[2];
    TFC_UNROLL
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float m_new = fmaxf(m[r], tile_max[r]);
      // A row that has seen no key yet keeps m = -inf: exponents relative to 0 then give
      // exact zeros instead of exp(-inf - -inf) = NaN.
      base[r] = m_new == neg_inf ? 0.0f : m_new;
      corr[r] = expf(m[r] - base[r]);
      m[r] = m_new;
      l[r] *= corr[r];
    }
    TFC_UNROLL
    for (int n = 0; n < kDvTiles8; ++n)
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) acc[n][e] *= corr[e >> 1];
    // Probabilities, rounded to the operand type as the A operand of P V: keys 16c..16c+15
    // are score fragments 2c (words 0, 1) and 2c + 1 (words 2, 3).
    TFC_UNROLL
    for (int c = 0; c < kKeyTiles8 / 2; ++c) {
      unsigned pf[4];
      TFC_UNROLL
      for (int half = 0; half < 2; ++half) {
        float* sj = s[2 * c + half];
        const float p0 = expf(sj[0] - base[0]), p1 = expf(sj[1] - base[0]);
        const float p2 = expf(sj[2] - base[1]), p3 = expf(sj[3] - base[1]);
        l[0] += p0 + p1;
        l[1] += p2 + p3;
        pf[2 * half] = tfc_pack_half2<kBf16>(p0, p1);
        pf[2 * half + 1] = tfc_pack_half2<kBf16>(p2, p3);
      }
      TFC_UNROLL
      for (int n = 0; n < kDvTiles8; ++n) {
        unsigned bf[2];
        bf[0] = vt_tile[(n * 8 + g) * kVStride + c * 8 + t];
        bf[1] = vt_tile[(n * 8 + g) * kVStride + c * 8 + t + 4];
        tfc_mma_m16n8k16<kBf16>(acc[n], pf, bf, acc[n]);
      }
    }
    __syncthreads();  // the next tile overwrites k_tile and vt_tile
  }

  TFC_UNROLL
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  TFC_UNROLL
  for (int n = 0; n < kDvTiles8; ++n)
    TFC_UNROLL
    for (int e = 0; e < 4; ++e) {
      const int r = e >> 1;
      if (row[r] >= Tq) continue;
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
      tfc_store(oh + row[r] * kDv + n * 8 + 2 * t + (e & 1), acc[n][e] * inv);
    }
}

#endif  // TFC_KERNELS_ATTENTION_CUH
