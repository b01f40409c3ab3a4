// tfc's CUDA kernel library: attention forward and backward on tensor cores
// (FlashAttention-2's schedules: Dao, "FlashAttention-2", 2023, algorithms 1 and 2).
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
//
// tfc_flash_attention_bwd: (dq, dk, dv) from q, k, v, the forward's out and its gradient
// dout (all five of one 16-bit type), without the T x T probabilities in memory. One launch,
// three kinds of 128-thread blocks, told apart by a ticket each block takes when it starts
// (so that a block only ever waits for blocks that are already running: no deadlock
// whatever order the GPU starts blocks in):
//   1. statistics, per 64 query rows: the log-sum-exp of each row's scaled scores (the
//      forward's loop without V) and delta = dout . out, into `lse` and `delta`;
//   2. dK and dV, per 64 keys of a key head (a warp 16 keys, whose K and V fragments stay in
//      registers up to 128 dims in all), over the query rows of every query head that
//      reads it: a tile of 64 queries (32 past 128 dims) staged in shared memory both ways
//      (pairs along D for S^T = K Q^T and dP^T = V dO^T, pairs along the queries for
//      dV += P^T dO and dK += dS^T Q);
//   3. dQ, per 64 query rows, over the keys they see in tiles of 64 (32 past 128 dims):
//      dQ += dS K.
// The log-sum-exp is recomputed here rather than saved by the forward (tfc.attention has
// one result). Also here: tfc_attention_decode (a decode step's rows, keys split over
// blocks; over a paged KV cache too), the paged cache's write and one-thread-a-row attention
// (tfc_paged_kv_write, tfc_paged_attention_rows) and tfc_attention_bwd_simt (the backward
// on the CUDA cores).
// Blocks of kinds 2 and 3 wait until every statistics block is done (a counter). Each
// gradient element is one block's own sum in a fixed order: the same bits on every run (no
// float atomics; FlashAttention-2 adds dQ atomically instead of recomputing the scores for
// it). P and dS are rounded to the operand type as the A operands of the products, as in
// the forward. `counters` (three words, zero at the first launch) are zero again when the
// launch ends.
#ifndef TFC_KERNELS_ATTENTION_CUH
#define TFC_KERNELS_ATTENTION_CUH

#include "cooperative.cuh"

// ---- Staging and fragments, shared by the forward and the backward ----

// Rows [r0, r0 + kRows) of a row-major [n, kCols] 16-bit matrix into shared memory as pairs
// along its columns: tile[r * kStride + w] = (src[r0 + r][2w], src[r0 + r][2w + 1]); rows at
// or past n are zero.
template <int kRows, int kCols, int kStride, int kThreads, typename Tile>
__device__ __forceinline__ void tfc_stage_pairs(Tile tile, const unsigned short* src, long long r0,
                                                long long n, int tid) {
  constexpr int kWords = kCols / 2;
  for (int i = tid; i < kRows * kWords; i += kThreads) {
    const int r = i / kWords, w = i % kWords;
    unsigned lo = 0, hi = 0;
    if (r0 + r < n) {
      lo = src[(r0 + r) * kCols + 2 * w];
      hi = src[(r0 + r) * kCols + 2 * w + 1];
    }
    tile[r * kStride + w] = lo | (hi << 16);
  }
}

// The same rows transposed, as pairs along the rows:
// tile[c * kStride + w] = (src[r0 + 2w][c], src[r0 + 2w + 1][c]).
template <int kRows, int kCols, int kStride, int kThreads, typename Tile>
__device__ __forceinline__ void tfc_stage_pairs_transposed(Tile tile, const unsigned short* src,
                                                           long long r0, long long n, int tid) {
  constexpr int kWords = kRows / 2;
  for (int i = tid; i < kCols * kWords; i += kThreads) {
    const int w = i / kCols, c = i % kCols;  // consecutive threads: consecutive columns
    const long long r = r0 + 2 * w;
    unsigned lo = 0, hi = 0;
    if (r < n) lo = src[r * kCols + c];
    if (r + 1 < n) hi = src[(r + 1) * kCols + c];
    tile[c * kStride + w] = lo | (hi << 16);
  }
}

// The A fragment (16 x 16, mma.sync's layout) of rows r0..r0+15 and columns 16s..16s+15 of a
// row-major [n, kCols] 16-bit matrix; rows at or past n are zero.
template <int kCols>
__device__ __forceinline__ void tfc_a_fragment(unsigned (&f)[4], const unsigned short* src,
                                               long long r0, long long n, int s, int g, int t) {
  TFC_UNROLL
  for (int w = 0; w < 4; ++w) {
    const long long r = r0 + g + ((w & 1) ? 8 : 0);
    const int col = s * 16 + 2 * t + (w >= 2 ? 8 : 0);
    unsigned lo = 0, hi = 0;
    if (r < n) {
      lo = src[r * kCols + col];
      hi = src[r * kCols + col + 1];
    }
    f[w] = lo | (hi << 16);
  }
}

// All kCols / 16 of them: the 16 rows' A operand over the whole width.
template <int kCols>
__device__ __forceinline__ void tfc_a_fragments(unsigned (&f)[kCols / 16][4],
                                                const unsigned short* src, long long r0,
                                                long long n, int g, int t) {
  TFC_UNROLL
  for (int s = 0; s < kCols / 16; ++s) tfc_a_fragment<kCols>(f[s], src, r0, n, s, g, t);
}

// acc (a 16 x 8 C fragment) += a (16 x 16) times the B fragment whose column is row `row` of
// a staged tile (B's columns as the tile's rows, k pairs along them), k words [kw, kw + 8).
template <bool kBf16, typename Tile>
__device__ __forceinline__ void tfc_mma_staged(float* acc, const unsigned* a, Tile tile, int row,
                                               int stride, int kw, int t) {
  unsigned b[2];
  b[0] = tile[row * stride + kw + t];
  b[1] = tile[row * stride + kw + t + 4];
  tfc_mma_m16n8k16<kBf16>(acc, a, b, acc);
}

// Two 16 x 8 C fragments side by side (columns 0..7 and 8..15) as one 16 x 16 A fragment,
// rounded to the operand type: a C fragment's layout is half of an A fragment's.
template <bool kBf16>
__device__ __forceinline__ void tfc_c_to_a(unsigned (&a)[4], const float* left,
                                           const float* right) {
  a[0] = tfc_pack_half2<kBf16>(left[0], left[1]);
  a[1] = tfc_pack_half2<kBf16>(left[2], left[3]);
  a[2] = tfc_pack_half2<kBf16>(right[0], right[1]);
  a[3] = tfc_pack_half2<kBf16>(right[2], right[3]);
}

// acc (16 x 8 kNTiles8, C fragments) += P (16 x 8 kKTiles8, C fragments: probabilities or
// their gradients, rounded to the operand type as A fragments two by two) times the B
// operand staged in `tile` (its columns as the tile's rows, k pairs along them).
template <bool kBf16, int kKTiles8, int kNTiles8, typename Tile>
__device__ __forceinline__ void tfc_mma_c_by_staged(float (&acc)[kNTiles8][4],
                                                    const float (&p)[kKTiles8][4], Tile tile,
                                                    int stride, int g, int t) {
  TFC_UNROLL
  for (int c = 0; c < kKTiles8 / 2; ++c) {
    unsigned a[4];
    tfc_c_to_a<kBf16>(a, p[2 * c], p[2 * c + 1]);
    TFC_UNROLL
    for (int n = 0; n < kNTiles8; ++n)
      tfc_mma_staged<kBf16>(acc[n], a, tile, n * 8 + g, stride, c * 8, t);
  }
}

template <bool kBf16>
__device__ __forceinline__ float tfc_half_to_f32(unsigned short x) {
  if (kBf16) return tfc_bf16_to_f32(x);
  tfc_f16 h;
  h.bits = x;
  return tfc_f16_to_f32(h);
}

// The keys query row `row` sees: clamp(row + off + 1, 0, Tk) under a causal mask, all Tk
// otherwise; none for a row at or past Tq.
template <bool kCausal>
__device__ __forceinline__ long long tfc_attention_limit(long long row, long long Tq,
                                                         long long Tk, long long off) {
  if (row >= Tq) return 0;
  long long l = Tk;
  if (kCausal) {
    l = row + off + 1;
    l = l < 0 ? 0 : (l > Tk ? Tk : l);
  }
  return l;
}

// ---- Forward ----

constexpr int kTfcFlashRows = 64, kTfcFlashKeys = 64, kTfcFlashThreads = 128;

// Shared memory (32-bit words) and tiles of the forward and the backward at head dims kD,
// kDv. (Constants of a struct rather than constexpr functions: nvcc, unlike NVRTC's
// -default-device, would take those for host functions.)
template <int kD, int kDv>
struct tfc_flash_sizes {
  // The forward: a K tile and a V^T tile of 64 keys.
  static constexpr int kFwdWords = kTfcFlashKeys * (kD / 2 + 4) + kDv * (kTfcFlashKeys / 2 + 4);
  // The tile of the other side that a gradient block stages: 64 rows, or 32 when the head
  // dims are wide (registers, and 48 KB of static shared memory).
  static constexpr int kBwdTile = kD + kDv <= 128 ? 64 : 32;
  static constexpr int kBwdKV = kBwdTile * (kD / 2 + 4) + kD * (kBwdTile / 2 + 4) +
                                kBwdTile * (kDv / 2 + 4) + kDv * (kBwdTile / 2 + 4) +
                                2 * kBwdTile;  // dK/dV: Q, Q^T, dO, dO^T, lse and delta
  static constexpr int kBwdQ = kBwdTile * (kD / 2 + 4) + kD * (kBwdTile / 2 + 4) +
                               kBwdTile * (kDv / 2 + 4);  // dQ: K, K^T, V
  static constexpr int kStats = kTfcFlashKeys * (kD / 2 + 4);  // the forward without V
  static constexpr int kBwdWords = kBwdKV > kBwdQ ? (kBwdKV > kStats ? kBwdKV : kStats)
                                                  : (kBwdQ > kStats ? kBwdQ : kStats);
};

// Query rows [q0, q0 + 64) of head bh (b * H + h), one block. With kWithValues, writes their
// output rows; without, only each row's log-sum-exp (m + log l of its scaled scores; 0 for
// a row that sees no key) into lse[bh * Tq + row]: the backward's statistics. `smem` holds
// tfc_flash_sizes<kD, kDv>::kFwdWords words.
template <bool kBf16, int kD, int kDv, bool kCausal, bool kWithValues, typename Out,
          typename Tile>
__device__ __forceinline__ void tfc_flash_attention_rows(
    const unsigned short* q, const unsigned short* k, const unsigned short* v, Out* out,
    float* lse, long long H, long long Hkv, long long Tq, long long Tk, long long off,
    float scale, long long bh, long long q0, Tile smem) {
  static_assert(kD % 16 == 0 && kDv % 16 == 0 && kD <= 128 && kDv <= 128,
                "head dims: multiples of 16, at most 128");
  constexpr int kRows = kTfcFlashRows, kKeys = kTfcFlashKeys, kThreads = kTfcFlashThreads;
  constexpr int kKStride = kD / 2 + 4;    // K tile: [key][d pair]
  constexpr int kVStride = kKeys / 2 + 4;  // V^T tile: [dv][key pair]
  constexpr int kDSteps = kD / 16, kKeyTiles8 = kKeys / 8, kDvTiles8 = kDv / 8;
  Tile k_tile = smem, vt_tile = smem + kKeys * kKStride;

  const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, t = lane & 3;
  const long long b = bh / H, h = bh % H;
  const long long hk = h / (H / Hkv);
  const unsigned short* qh = q + bh * Tq * kD;
  const unsigned short* kh = k + (b * Hkv + hk) * Tk * kD;
  const unsigned short* vh = v + (b * Hkv + hk) * Tk * kDv;

  // This lane's two rows (g and g + 8 of the warp's 16) and the keys each sees.
  long long row[2], lim[2];
  TFC_UNROLL
  for (int r = 0; r < 2; ++r) {
    row[r] = q0 + warp * 16 + g + 8 * r;
    lim[r] = tfc_attention_limit<kCausal>(row[r], Tq, Tk, off);
  }
  // The keys the block's last row sees (the same in every thread: a uniform loop).
  const long long end =
      kCausal ? tfc_attention_limit<true>((q0 + kRows < Tq ? q0 + kRows : Tq) - 1, Tq, Tk, off)
              : Tk;

  unsigned qf[kDSteps][4];
  tfc_a_fragments<kD>(qf, qh, q0 + warp * 16, Tq, g, t);

  float acc[kDvTiles8][4];
  TFC_UNROLL
  for (int n = 0; n < kDvTiles8; ++n)
    TFC_UNROLL
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.0f;
  const float neg_inf = -__int_as_float(0x7f800000);
  float m[2] = {neg_inf, neg_inf}, l[2] = {0.0f, 0.0f};  // l: this lane's part of the sum

  for (long long k0 = 0; k0 < end; k0 += kKeys) {
    tfc_stage_pairs<kKeys, kD, kKStride, kThreads>(k_tile, kh, k0, Tk, tid);
    if constexpr (kWithValues)
      tfc_stage_pairs_transposed<kKeys, kDv, kVStride, kThreads>(vt_tile, vh, k0, Tk, tid);
    __syncthreads();

    // Scores: 16 rows x 64 keys, eight 16 x 8 fragments.
    float s[kKeyTiles8][4];
    TFC_UNROLL
    for (int j = 0; j < kKeyTiles8; ++j) {
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;
      TFC_UNROLL
      for (int d = 0; d < kDSteps; ++d)
        tfc_mma_staged<kBf16>(s[j], qf[d], k_tile, j * 8 + g, kKStride, d * 8, t);
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
    for (int j = 0; j < kKeyTiles8; ++j) {
      s[j][0] = expf(s[j][0] - base[0]);
      s[j][1] = expf(s[j][1] - base[0]);
      s[j][2] = expf(s[j][2] - base[1]);
      s[j][3] = expf(s[j][3] - base[1]);
      l[0] += s[j][0] + s[j][1];
      l[1] += s[j][2] + s[j][3];
    }
    if constexpr (kWithValues) {
      TFC_UNROLL
      for (int n = 0; n < kDvTiles8; ++n)
        TFC_UNROLL
        for (int e = 0; e < 4; ++e) acc[n][e] *= corr[e >> 1];
      // P V, the probabilities rounded to the operand type as the A operand: keys
      // 16c..16c+15 are score fragments 2c and 2c + 1.
      tfc_mma_c_by_staged<kBf16>(acc, s, vt_tile, kVStride, g, t);
    }
    __syncthreads();  // the next tile overwrites k_tile and vt_tile
  }

  TFC_UNROLL
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  if constexpr (kWithValues) {
    Out* oh = out + bh * Tq * kDv;
    TFC_UNROLL
    for (int n = 0; n < kDvTiles8; ++n)
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        if (row[r] >= Tq) continue;
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        tfc_store(oh + row[r] * kDv + n * 8 + 2 * t + (e & 1), acc[n][e] * inv);
      }
  } else {
    TFC_UNROLL
    for (int r = 0; r < 2; ++r)
      if (t == 0 && row[r] < Tq) lse[bh * Tq + row[r]] = l[r] > 0.0f ? m[r] + logf(l[r]) : 0.0f;
  }
}

template <bool kBf16, int kD, int kDv, bool kCausal, typename Out>
__device__ __forceinline__ void tfc_flash_attention_fwd(const unsigned short* q,
                                                        const unsigned short* k,
                                                        const unsigned short* v, Out* out,
                                                        long long H, long long Hkv,
                                                        long long Tq, long long Tk,
                                                        long long off, float scale,
                                                        const int* row_off = nullptr) {
  TFC_SHARED(unsigned, smem, (tfc_flash_sizes<kD, kDv>::kFwdWords));
  // row_off: one offset per batch row (sequences at their own positions), else off.
  if (row_off != nullptr) off = row_off[(long long)blockIdx.x / H];
  tfc_flash_attention_rows<kBf16, kD, kDv, kCausal, true>(
      q, k, v, out, (float*)nullptr, H, Hkv, Tq, Tk, off, scale, (long long)blockIdx.x,
      (long long)blockIdx.y * kTfcFlashRows, smem + 0);
}

// ---- Decode: a few query rows over a long KV cache ----
//
// tfc_attention_decode (flash-decoding: Dao, Haziza, Massa, Sizov, 2023): a query row's keys
// split into chunks of 128, a 128-thread block per row and chunk, so that one query row
// keeps many blocks busy; any float types, f32 arithmetic. A block scores its chunk (a
// thread a key, the dot product in d order), takes the chunk's max m and sum l of
// exp(score - m), and writes m, l and the chunk's sum of p v to `partial`; the last block of
// the row to finish (a ticket per row) merges the chunks in chunk order: the same bits on
// every run. Semantics as tfc_flash_attention_fwd (a row that sees no key is 0).
// Launch: block (128, 1, 1), grid (rows * chunks, 1, 1), rows = B * H * Tq,
// chunks = ceil(Tk / 128). partial: rows * chunks * (kDv + 2) floats; tickets: rows words,
// zero before the first launch and after every launch. With `pages` (tfc.paged_attention)
// k and v are pools of blocks read through each row's table, Tk = M * S, and `row_off`
// holds the rows' positions.
constexpr int kTfcDecodeKeys = 128;

// A paged KV cache (vLLM's PagedAttention; tfc.paged_attention, kv_cache_update with
// blocks): k and v are pools [NB, Hkv, S, D] of NB blocks of S positions, and key j of batch
// row b is slot j % S of block table[b * M + j / S]. A row reads its table up to its first
// entry < 0: keys from there on are not seen.
struct tfc_kv_pages {
  const int* table;  // [B, M]; nullptr: contiguous caches [B, Hkv, Tk, D]
  long long size, max_blocks, pool_blocks;  // S, M, NB
};

// The first `lim` keys of batch row b, cut at the row's first table entry < 0; an entry
// >= NB among those it reads is reported (TFC_KERNEL_ERROR_KV_BLOCK) and ends them there.
__device__ __forceinline__ long long tfc_pages_limit(const tfc_kv_pages& pages, long long b,
                                                     long long lim) {
  if (pages.table == nullptr) return lim;
  const int* table = pages.table + b * pages.max_blocks;
  long long n = 0;
  for (; n < pages.max_blocks && n * pages.size < lim; ++n) {
    const int id = table[n];
    if (id < 0) break;
    if (id >= pages.pool_blocks) {
      tfc_report(TFC_KERNEL_ERROR_KV_BLOCK);
      break;
    }
  }
  return n * pages.size < lim ? n * pages.size : lim;
}

// The row of key j (of batch row b, key head hk) in the cache, in rows of the head dim:
// (b * Hkv + hk) * Tk + j in a contiguous cache; in a pool, its block's row. j must be
// below tfc_pages_limit's keys.
__device__ __forceinline__ long long tfc_key_row(const tfc_kv_pages& pages, long long b,
                                                 long long hk, long long Hkv, long long Tk,
                                                 long long j) {
  if (pages.table == nullptr) return (b * Hkv + hk) * Tk + j;
  const long long id = pages.table[b * pages.max_blocks + j / pages.size];
  return (id * Hkv + hk) * pages.size + j % pages.size;
}

template <int kD, int kDv, bool kCausal, typename Q, typename K, typename V, typename Out>
__device__ __forceinline__ void tfc_attention_decode(const Q* q, const K* k, const V* v, Out* out,
                                                     long long H, long long Hkv, long long Tq,
                                                     long long Tk, long long off, float scale,
                                                     float* partial, unsigned* tickets,
                                                     const int* row_off = nullptr,
                                                     tfc_kv_pages pages = {nullptr, 1, 0, 0}) {
  constexpr int kThreads = kTfcDecodeKeys, kWarps = kThreads / 32;
  TFC_SHARED(float, q_row, kD);
  TFC_SHARED(float, p, kTfcDecodeKeys);
  TFC_SHARED(long long, key_rows, kTfcDecodeKeys);
  TFC_SHARED(float, warp_part, kWarps);
  TFC_SHARED(unsigned, last, 1);
  const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
  const long long chunks = (Tk + kTfcDecodeKeys - 1) / kTfcDecodeKeys;
  const long long row = (long long)blockIdx.x / chunks, chunk = (long long)blockIdx.x % chunks;
  const long long bh = row / Tq, i = row % Tq, b = bh / H, h = bh % H, hk = h / (H / Hkv);
  // row_off: one offset per batch row (sequences at their own positions), else off.
  const long long lim = tfc_pages_limit(
      pages, b,
      tfc_attention_limit<kCausal>(i, Tq, Tk, row_off != nullptr ? (long long)row_off[b] : off));
  const long long k0 = chunk * kTfcDecodeKeys;
  const long long k1 = k0 + kTfcDecodeKeys < lim ? k0 + kTfcDecodeKeys : lim;  // may be <= k0
  for (int d = tid; d < kD; d += kThreads) q_row[d] = tfc_as_float(q[row * kD + d]);
  __syncthreads();

  const float neg_inf = -__int_as_float(0x7f800000);
  const long long key = k0 + tid;
  const long long key_row = key < k1 ? tfc_key_row(pages, b, hk, Hkv, Tk, key) : 0;
  key_rows[tid] = key_row;
  float score = neg_inf;
  if (key < k1) {
    float dot = 0.0f;
    for (int d = 0; d < kD; ++d) {
      const float qd = q_row[d];
      dot += qd * tfc_as_float(k[key_row * kD + d]);
    }
    score = dot * scale;
  }
  // The chunk's max, then its sum of exp(score - max), over the warps in order.
  float m = tfc_warp_max(score);
  if (lane == 0) warp_part[warp] = m;
  __syncthreads();
  m = neg_inf;
  for (int w = 0; w < kWarps; ++w) {
    const float part = warp_part[w];
    m = fmaxf(m, part);
  }
  const float e = key < k1 ? expf(score - m) : 0.0f;
  p[tid] = e;
  const float warp_sum = tfc_warp_sum(e);
  __syncthreads();  // every warp has read warp_part's maxima
  if (lane == 0) warp_part[warp] = warp_sum;
  __syncthreads();
  float l = 0.0f;
  for (int w = 0; w < kWarps; ++w) {
    const float part = warp_part[w];
    l += part;
  }
  float* mine = partial + (row * chunks + chunk) * (kDv + 2);
  for (int c = tid; c < kDv; c += kThreads) {
    float acc = 0.0f;
    for (long long j = k0; j < k1; ++j) {
      const float pj = p[j - k0];
      const long long vrow = key_rows[j - k0];
      acc += pj * tfc_as_float(v[vrow * kDv + c]);
    }
    mine[2 + c] = acc;
  }
  if (tid == 0) {
    mine[0] = m;
    mine[1] = l;
  }

  // The last of the row's blocks merges the chunks.
  __syncthreads();
  if (tid == 0) {
    __threadfence();  // this chunk's partial is visible before its ticket
    const unsigned ticket = atomicAdd(&tickets[row], 1u);
    last[0] = ticket == (unsigned)(chunks - 1);
    if (ticket == (unsigned)(chunks - 1)) tickets[row] = 0;  // for the next launch
  }
  __syncthreads();
  const unsigned is_last = last[0];
  if (!is_last) return;
  __threadfence();
  const volatile float* parts = partial + row * chunks * (kDv + 2);
  float top = neg_inf;
  for (long long c = 0; c < chunks; ++c) top = fmaxf(top, parts[c * (kDv + 2)]);
  const float base = top == neg_inf ? 0.0f : top;
  float total = 0.0f;
  for (long long c = 0; c < chunks; ++c)
    total += parts[c * (kDv + 2) + 1] * expf(parts[c * (kDv + 2)] - base);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  for (int c = tid; c < kDv; c += kThreads) {
    float acc = 0.0f;
    for (long long ch = 0; ch < chunks; ++ch)
      acc += parts[ch * (kDv + 2) + 2 + c] * expf(parts[ch * (kDv + 2)] - base);
    tfc_store(out + row * kDv + c, acc * inv);
  }
}

// ---- The paged KV cache's other kernels ----

// kv_cache_update with blocks: update [B, Hkv, L, D] into the pool [NB, Hkv, S, D] (pages'
// addressing), row b's token l at position positions[b] + l, a thread an element in a
// grid-stride loop. A write into an entry < 0 is dropped (an idle row); a position outside
// [0, M * S) reports TFC_KERNEL_ERROR_KV_POSITION, an entry >= NB TFC_KERNEL_ERROR_KV_BLOCK,
// and writes nothing.
template <typename T>
__device__ __forceinline__ void tfc_paged_kv_write(T* pool, const T* update, long long B,
                                                   long long Hkv, long long L, long long D,
                                                   const int* positions, tfc_kv_pages pages) {
  const long long n = B * Hkv * L * D;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long d = i % D, l = i / D % L, h = i / (D * L) % Hkv, b = i / (D * L * Hkv);
    const long long pos = (long long)positions[b] + l;
    if (pos < 0 || pos >= pages.max_blocks * pages.size) {
      tfc_report(TFC_KERNEL_ERROR_KV_POSITION);
      continue;
    }
    const long long id = pages.table[b * pages.max_blocks + pos / pages.size];
    if (id < 0) continue;
    if (id >= pages.pool_blocks) {
      tfc_report(TFC_KERNEL_ERROR_KV_BLOCK);
      continue;
    }
    pool[((id * Hkv + h) * pages.size + pos % pages.size) * D + d] = update[i];
  }
}

// Paged attention a thread a query row (where the decode kernel's partials would pass their
// cap: long prefill chunks), in a grid-stride loop over the B * H * Tq rows: the online
// softmax over the row's visible keys in order, read through the table; f32 arithmetic.
// Semantics as tfc_attention_decode's with pages.
template <int kD, int kDv, typename Q, typename K, typename V, typename Out>
__device__ __forceinline__ void tfc_paged_attention_rows(const Q* q, const K* k, const V* v,
                                                         Out* out, long long B, long long H,
                                                         long long Hkv, long long Tq,
                                                         const int* positions, float scale,
                                                         tfc_kv_pages pages) {
  const long long n = B * H * Tq, Tk = pages.max_blocks * pages.size;
  for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < n;
       row += (long long)gridDim.x * blockDim.x) {
    const long long i = row % Tq, bh = row / Tq, b = bh / H, hk = bh % H / (H / Hkv);
    const long long lim =
        tfc_pages_limit(pages, b, tfc_attention_limit<true>(i, Tq, Tk, positions[b]));
    float acc[kDv];
    for (int c = 0; c < kDv; ++c) acc[c] = 0.0f;
    float m = -__int_as_float(0x7f800000), l = 0.0f;
    for (long long j = 0; j < lim; ++j) {
      const long long key_row = tfc_key_row(pages, b, hk, Hkv, Tk, j);
      const float sj = tfc_dot<kD>(q + row * kD, k + key_row * kD) * scale;
      const float mn = sj > m ? sj : m;
      const float corr = expf(m - mn), pj = expf(sj - mn);
      l = l * corr + pj;
      for (int c = 0; c < kDv; ++c) acc[c] = acc[c] * corr + pj * tfc_as_float(v[key_row * kDv + c]);
      m = mn;
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int c = 0; c < kDv; ++c) tfc_store(out + row * kDv + c, acc[c] * inv);
  }
}

// ---- Backward ----

// The backward kernels' two phases in one launch: every block takes a ticket when it starts
// (counters[0]); the first `first` tickets write the rows' statistics and count themselves
// done (counters[1]); the others wait until all of those are, so that a block only ever
// waits for blocks already running, whatever order the GPU starts blocks in. Returns the
// block's ticket, the same in all its threads.
__device__ __forceinline__ long long tfc_ticket_take(unsigned* counters) {
  TFC_SHARED(unsigned, ticket, 1);
  if (threadIdx.x == 0) ticket[0] = atomicAdd(&counters[0], 1u);
  __syncthreads();
  const unsigned mine = ticket[0];
  return (long long)mine;
}
// After a statistics block's writes: counts it done.
__device__ __forceinline__ void tfc_ticket_statistics_done(unsigned* counters) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();  // the statistics are visible before the count says so
    atomicAdd(&counters[1], 1u);
  }
}
// Before a gradient block reads the statistics: waits for the `first` statistics blocks.
__device__ __forceinline__ void tfc_ticket_wait(unsigned* counters, long long first) {
  if (threadIdx.x == 0) {
#ifdef TFC_DEVICE_ON_HOST
    // Blocks run one after another in ticket order here: all statistics are done.
    if (counters[1] != (unsigned)first)
      tfc_emu::fault("attention backward: a gradient block started before the statistics "
                     "were done");
#else
    while (atomicAdd(&counters[1], 0u) < (unsigned)first) {
    }
#endif
    __threadfence();
  }
  __syncthreads();
}
// At the end of every block: the last of `total` to finish sets the counters back to zero
// for the next launch.
__device__ __forceinline__ void tfc_ticket_finish(unsigned* counters, long long total) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&counters[2], 1u) == (unsigned)(total - 1)) {
      counters[0] = 0;
      counters[1] = 0;
      counters[2] = 0;
      __threadfence();
    }
  }
}

// Statistics of rows [q0, q0 + 64) of head bh: lse (see tfc_flash_attention_rows) and
// delta[row] = dout[row] . out[row], a warp a row, summed in a fixed order.
template <bool kBf16, int kD, int kDv, bool kCausal, typename Tile>
__device__ __forceinline__ void tfc_flash_bwd_statistics(
    const unsigned short* q, const unsigned short* k, const unsigned short* o,
    const unsigned short* dout, float* lse, float* delta, long long H, long long Hkv,
    long long Tq, long long Tk, long long off, float scale, long long bh, long long q0,
    Tile smem) {
  tfc_flash_attention_rows<kBf16, kD, kDv, kCausal, false>(q, k, (const unsigned short*)nullptr,
                                                        (float*)nullptr, lse, H, Hkv, Tq, Tk,
                                                        off, scale, bh, q0, smem);
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  for (int i = 0; i < 16; ++i) {
    const long long row = q0 + warp * 16 + i;
    if (row >= Tq) break;  // the same in every lane
    const long long at = (bh * Tq + row) * kDv;
    float part = 0.0f;
    for (int c = lane; c < kDv; c += 32)
      part += tfc_half_to_f32<kBf16>(dout[at + c]) * tfc_half_to_f32<kBf16>(o[at + c]);
    part = tfc_warp_sum(part);
    if (lane == 0) delta[bh * Tq + row] = part;
  }
}

// dK and dV of keys [k0, k0 + 64) of key head kvh (b * Hkv + hk).
template <bool kBf16, int kD, int kDv, bool kCausal, typename DK, typename DV, typename Tile>
__device__ __forceinline__ void tfc_flash_bwd_dkdv(
    const unsigned short* q, const unsigned short* k, const unsigned short* v,
    const unsigned short* dout, DK* dk, DV* dv, const float* lse, const float* delta,
    long long H, long long Hkv, long long Tq, long long Tk, long long off, float scale,
    long long kvh, long long k0, Tile smem) {
  constexpr int kT = tfc_flash_sizes<kD, kDv>::kBwdTile, kThreads = kTfcFlashThreads;
  constexpr int kQS = kD / 2 + 4, kQTS = kT / 2 + 4, kOS = kDv / 2 + 4, kOTS = kT / 2 + 4;
  constexpr int kQTiles8 = kT / 8, kDTiles8 = kD / 8, kDvTiles8 = kDv / 8;
  Tile q_tile = smem;                        // [query][d pair]
  Tile qt_tile = q_tile + kT * kQS;          // [d][query pair]
  Tile o_tile = qt_tile + kD * kQTS;         // dout: [query][dv pair]
  Tile ot_tile = o_tile + kT * kOS;          // dout: [dv][query pair]
  Tile stats = ot_tile + kDv * kOTS;         // lse, then delta, as float bits

  const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, t = lane & 3;
  const long long b = kvh / Hkv, hk = kvh % Hkv, group = H / Hkv;
  const long long key0 = k0 + warp * 16;
  // The warp's K and V rows as A fragments in registers; past 128 dims in all, V's are read
  // again for each tile of queries instead (from the L1 cache): registers.
  constexpr bool kKeepV = kD + kDv <= 128;
  const unsigned short* vh = v + kvh * Tk * kDv;
  unsigned kf[kD / 16][4], vf[kKeepV ? kDv / 16 : 1][4];
  tfc_a_fragments<kD>(kf, k + kvh * Tk * kD, key0, Tk, g, t);
  if constexpr (kKeepV) tfc_a_fragments<kDv>(vf, vh, key0, Tk, g, t);
  float dkacc[kDTiles8][4], dvacc[kDvTiles8][4];
  TFC_UNROLL
  for (int n = 0; n < kDTiles8; ++n)
    TFC_UNROLL
    for (int e = 0; e < 4; ++e) dkacc[n][e] = 0.0f;
  TFC_UNROLL
  for (int n = 0; n < kDvTiles8; ++n)
    TFC_UNROLL
    for (int e = 0; e < 4; ++e) dvacc[n][e] = 0.0f;

  // Under a causal mask key j is seen by the rows i >= j - off: skip the tiles before.
  long long first = kCausal ? k0 - off : 0;
  first = first < 0 ? 0 : first;
  const long long qstart = first / kT * kT;
  for (long long gi = 0; gi < group; ++gi) {
    const long long bh = b * H + hk * group + gi;
    const unsigned short* qh = q + bh * Tq * kD;
    const unsigned short* oh = dout + bh * Tq * kDv;
    for (long long qt = qstart; qt < Tq; qt += kT) {
      tfc_stage_pairs<kT, kD, kQS, kThreads>(q_tile, qh, qt, Tq, tid);
      tfc_stage_pairs_transposed<kT, kD, kQTS, kThreads>(qt_tile, qh, qt, Tq, tid);
      tfc_stage_pairs<kT, kDv, kOS, kThreads>(o_tile, oh, qt, Tq, tid);
      tfc_stage_pairs_transposed<kT, kDv, kOTS, kThreads>(ot_tile, oh, qt, Tq, tid);
      // Written by the statistics blocks of this launch: read around the L1 cache.
      for (int i = tid; i < 2 * kT; i += kThreads) {
        const long long row = qt + i % kT;
        const float* src = i < kT ? lse : delta;
        stats[i] = __float_as_uint(row < Tq ? ((const volatile float*)src)[bh * Tq + row]
                                            : 0.0f);
      }
      __syncthreads();

      // P^T: 16 keys x kT queries, from S^T = K Q^T.
      float p[kQTiles8][4];
      TFC_UNROLL
      for (int j = 0; j < kQTiles8; ++j) {
        TFC_UNROLL
        for (int e = 0; e < 4; ++e) p[j][e] = 0.0f;
        TFC_UNROLL
        for (int d = 0; d < kD / 16; ++d)
          tfc_mma_staged<kBf16>(p[j], kf[d], q_tile, j * 8 + g, kQS, d * 8, t);
        TFC_UNROLL
        for (int e = 0; e < 4; ++e) {
          const long long key = key0 + g + 8 * (e >> 1);
          const int col = j * 8 + 2 * t + (e & 1);
          const long long row = qt + col;
          const bool seen = key < tfc_attention_limit<kCausal>(row, Tq, Tk, off);
          const unsigned bits = stats[col];
          p[j][e] = seen ? expf(p[j][e] * scale - __uint_as_float(bits)) : 0.0f;
        }
      }
      // dV += P^T dO.
      tfc_mma_c_by_staged<kBf16>(dvacc, p, ot_tile, kOTS, g, t);
      // dS^T = P^T (dP^T - delta), dP^T = V dO^T; then dK += dS^T Q.
      TFC_UNROLL
      for (int j = 0; j < kQTiles8; ++j) {
        float dp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        TFC_UNROLL
        for (int d = 0; d < kDv / 16; ++d) {
          if constexpr (kKeepV) {
            tfc_mma_staged<kBf16>(dp, vf[d], o_tile, j * 8 + g, kOS, d * 8, t);
          } else {
            unsigned a[4];
            tfc_a_fragment<kDv>(a, vh, key0, Tk, d, g, t);
            tfc_mma_staged<kBf16>(dp, a, o_tile, j * 8 + g, kOS, d * 8, t);
          }
        }
        TFC_UNROLL
        for (int e = 0; e < 4; ++e) {
          const unsigned bits = stats[kT + j * 8 + 2 * t + (e & 1)];
          p[j][e] *= dp[e] - __uint_as_float(bits);
        }
      }
      tfc_mma_c_by_staged<kBf16>(dkacc, p, qt_tile, kQTS, g, t);
      __syncthreads();  // the next tile overwrites the staged queries
    }
  }

  TFC_UNROLL
  for (int r = 0; r < 2; ++r) {
    const long long key = key0 + g + 8 * r;
    if (key >= Tk) continue;
    TFC_UNROLL
    for (int n = 0; n < kDTiles8; ++n)
      TFC_UNROLL
      for (int e = 0; e < 2; ++e)
        tfc_store(dk + (kvh * Tk + key) * kD + n * 8 + 2 * t + e, dkacc[n][2 * r + e] * scale);
    TFC_UNROLL
    for (int n = 0; n < kDvTiles8; ++n)
      TFC_UNROLL
      for (int e = 0; e < 2; ++e)
        tfc_store(dv + (kvh * Tk + key) * kDv + n * 8 + 2 * t + e, dvacc[n][2 * r + e]);
  }
}

// dQ of rows [q0, q0 + 64) of head bh.
template <bool kBf16, int kD, int kDv, bool kCausal, typename DQ, typename Tile>
__device__ __forceinline__ void tfc_flash_bwd_dq(
    const unsigned short* q, const unsigned short* k, const unsigned short* v,
    const unsigned short* dout, DQ* dq, const float* lse, const float* delta, long long H,
    long long Hkv, long long Tq, long long Tk, long long off, float scale, long long bh,
    long long q0, Tile smem) {
  constexpr int kT = tfc_flash_sizes<kD, kDv>::kBwdTile, kThreads = kTfcFlashThreads;
  constexpr int kKS = kD / 2 + 4, kKTS = kT / 2 + 4, kVS = kDv / 2 + 4;
  constexpr int kKeyTiles8 = kT / 8, kDTiles8 = kD / 8;
  Tile k_tile = smem;                 // [key][d pair]
  Tile kt_tile = k_tile + kT * kKS;   // [d][key pair]
  Tile v_tile = kt_tile + kD * kKTS;  // [key][dv pair]

  const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, t = lane & 3;
  const long long b = bh / H, h = bh % H, hk = h / (H / Hkv);
  const unsigned short* kh = k + (b * Hkv + hk) * Tk * kD;
  const unsigned short* vh = v + (b * Hkv + hk) * Tk * kDv;
  long long row[2], lim[2];
  float row_lse[2], row_delta[2];
  TFC_UNROLL
  for (int r = 0; r < 2; ++r) {
    row[r] = q0 + warp * 16 + g + 8 * r;
    lim[r] = tfc_attention_limit<kCausal>(row[r], Tq, Tk, off);
    // Written by the statistics blocks of this launch: read around the L1 cache.
    row_lse[r] = row[r] < Tq ? ((const volatile float*)lse)[bh * Tq + row[r]] : 0.0f;
    row_delta[r] = row[r] < Tq ? ((const volatile float*)delta)[bh * Tq + row[r]] : 0.0f;
  }
  const long long end =
      kCausal ? tfc_attention_limit<true>((q0 + 64 < Tq ? q0 + 64 : Tq) - 1, Tq, Tk, off) : Tk;
  unsigned qf[kD / 16][4], of[kDv / 16][4];
  tfc_a_fragments<kD>(qf, q + bh * Tq * kD, q0 + warp * 16, Tq, g, t);
  tfc_a_fragments<kDv>(of, dout + bh * Tq * kDv, q0 + warp * 16, Tq, g, t);
  float acc[kDTiles8][4];
  TFC_UNROLL
  for (int n = 0; n < kDTiles8; ++n)
    TFC_UNROLL
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.0f;

  for (long long k0 = 0; k0 < end; k0 += kT) {
    tfc_stage_pairs<kT, kD, kKS, kThreads>(k_tile, kh, k0, Tk, tid);
    tfc_stage_pairs_transposed<kT, kD, kKTS, kThreads>(kt_tile, kh, k0, Tk, tid);
    tfc_stage_pairs<kT, kDv, kVS, kThreads>(v_tile, vh, k0, Tk, tid);
    __syncthreads();
    // dS = P (dP - delta): P from S = Q K^T, dP = dO V^T; 16 rows x kT keys.
    float ds[kKeyTiles8][4];
    TFC_UNROLL
    for (int j = 0; j < kKeyTiles8; ++j) {
      float dp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) ds[j][e] = 0.0f;
      TFC_UNROLL
      for (int d = 0; d < kD / 16; ++d)
        tfc_mma_staged<kBf16>(ds[j], qf[d], k_tile, j * 8 + g, kKS, d * 8, t);
      TFC_UNROLL
      for (int d = 0; d < kDv / 16; ++d)
        tfc_mma_staged<kBf16>(dp, of[d], v_tile, j * 8 + g, kVS, d * 8, t);
      TFC_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        const long long key = k0 + j * 8 + 2 * t + (e & 1);
        const float p = key < lim[r] ? expf(ds[j][e] * scale - row_lse[r]) : 0.0f;
        ds[j][e] = p * (dp[e] - row_delta[r]);
      }
    }
    // dQ += dS K.
    tfc_mma_c_by_staged<kBf16>(acc, ds, kt_tile, kKTS, g, t);
    __syncthreads();  // the next tile overwrites the staged keys
  }
  DQ* qd = dq + bh * Tq * kD;
  TFC_UNROLL
  for (int n = 0; n < kDTiles8; ++n)
    TFC_UNROLL
    for (int e = 0; e < 4; ++e) {
      const int r = e >> 1;
      if (row[r] < Tq) tfc_store(qd + row[r] * kD + n * 8 + 2 * t + (e & 1), acc[n][e] * scale);
    }
}

// Launch: block (128, 1, 1), grid (tfc_flash_bwd_blocks(B, H, Hkv, Tq, Tk), 1, 1).
// lse and delta: B * H * Tq floats of scratch; counters: three words, zero before the
// first launch (and after every launch).
template <bool kBf16, int kD, int kDv, bool kCausal, typename DQ, typename DK, typename DV>
__device__ __forceinline__ void tfc_flash_attention_bwd(
    const unsigned short* q, const unsigned short* k, const unsigned short* v,
    const unsigned short* o, const unsigned short* dout, DQ* dq, DK* dk, DV* dv, long long B,
    long long H, long long Hkv, long long Tq, long long Tk, long long off, float scale,
    float* lse, float* delta, unsigned* counters) {
  static_assert(kD % 16 == 0 && kDv % 16 == 0 && kD <= 128 && kDv <= 128,
                "head dims: multiples of 16, at most 128");
  TFC_SHARED(unsigned, smem, (tfc_flash_sizes<kD, kDv>::kBwdWords));
  const long long row_blocks = B * H * ((Tq + 63) / 64);
  const long long key_blocks = B * Hkv * ((Tk + 63) / 64);
  const long long mine = tfc_ticket_take(counters);
  if (mine < row_blocks) {
    const long long per_head = (Tq + 63) / 64;
    tfc_flash_bwd_statistics<kBf16, kD, kDv, kCausal>(q, k, o, dout, lse, delta, H, Hkv, Tq,
                                                      Tk, off, scale, mine / per_head,
                                                      mine % per_head * 64, smem + 0);
    tfc_ticket_statistics_done(counters);
  } else {
    tfc_ticket_wait(counters, row_blocks);
    const long long i = mine - row_blocks;
    if (i < key_blocks) {
      const long long per_head = (Tk + 63) / 64;
      tfc_flash_bwd_dkdv<kBf16, kD, kDv, kCausal>(q, k, v, dout, dk, dv, lse, delta, H, Hkv,
                                                  Tq, Tk, off, scale, i / per_head,
                                                  i % per_head * 64, smem + 0);
    } else {
      const long long j = i - key_blocks, per_head = (Tq + 63) / 64;
      tfc_flash_bwd_dq<kBf16, kD, kDv, kCausal>(q, k, v, dout, dq, lse, delta, H, Hkv, Tq,
                                                Tk, off, scale, j / per_head,
                                                j % per_head * 64, smem + 0);
    }
  }
  tfc_ticket_finish(counters, 2 * row_blocks + key_blocks);
}

// ---- Backward on the CUDA cores (any float types, f32 arithmetic) ----
//
// tfc_attention_bwd_simt: the same gradients for what tfc_flash_attention_bwd cannot take
// (f32, head dims that are not multiples of 16), a thread a work item, with the same two
// phases in one launch (tickets): first a thread a query row writes the row's log-sum-exp
// and delta = dout . out; then each thread takes a chunk of at most 32 columns of one row of
// dQ (over the keys the row sees), dK or dV (over the rows of every query head that sees the
// key), with p = exp(score - lse) read back instead of recomputed per row: O(T) a work item.
// Each element is one thread's sum in a fixed order: the same bits on every run.
// Launch: block (128, 1, 1), grid (ceil(rows / 128) + ceil(items / 128), 1, 1) with rows =
// B * H * Tq and items = rows * dQ chunks + B * Hkv * Tk * (dK chunks + dV chunks)
// (tfc_attention_chunks); lse and delta: rows floats; counters: three words, zero before the first launch and after
// every launch.
constexpr int kTfcAttentionChunk = 32;

template <int kWidth>
struct tfc_attention_chunks {
  // Chunks of equal width dividing kWidth, at most 32 columns each (registers).
  static constexpr int kCount = kWidth % ((kWidth + 31) / 32) == 0 ? (kWidth + 31) / 32 : 1;
  static constexpr int kCols = kWidth / kCount;
};

template <int kD, int kDv, bool kCausal, typename Q, typename K, typename V, typename O,
          typename G, typename DQ, typename DK, typename DV>
__device__ __forceinline__ void tfc_attention_bwd_simt(
    const Q* q, const K* k, const V* v, const O* o, const G* dout, DQ* dq, DK* dk, DV* dv,
    long long B, long long H, long long Hkv, long long Tq, long long Tk, long long off,
    float scale, float* lse, float* delta, unsigned* counters) {
  using CQ = tfc_attention_chunks<kD>;
  using CV = tfc_attention_chunks<kDv>;
  const long long rows = B * H * Tq, keys = B * Hkv * Tk, group = H / Hkv;
  const long long row_blocks = (rows + 127) / 128;
  const long long items = rows * CQ::kCount + keys * (CQ::kCount + CV::kCount);
  const long long mine = tfc_ticket_take(counters);
  if (mine < row_blocks) {
    const long long r = mine * 128 + threadIdx.x;
    if (r < rows) {
      const long long bh = r / Tq, i = r % Tq, b = bh / H, hk = bh % H / group;
      const long long lim = tfc_attention_limit<kCausal>(i, Tq, Tk, off);
      const Q* qr = q + r * kD;
      const K* kh = k + (b * Hkv + hk) * Tk * kD;
      const float neg_inf = -__int_as_float(0x7f800000);
      float m = neg_inf, l = 0.0f;
      for (long long j = 0; j < lim; ++j) m = fmaxf(m, tfc_dot<kD>(qr, kh + j * kD) * scale);
      for (long long j = 0; j < lim; ++j) l += expf(tfc_dot<kD>(qr, kh + j * kD) * scale - m);
      lse[r] = l > 0.0f ? m + logf(l) : 0.0f;
      delta[r] = tfc_dot<kDv>(dout + r * kDv, o + r * kDv);
    }
    tfc_ticket_statistics_done(counters);
  } else {
    tfc_ticket_wait(counters, row_blocks);
    const long long item = (mine - row_blocks) * 128 + threadIdx.x;
    const volatile float* lse_v = lse;  // written by this launch's statistics blocks
    const volatile float* delta_v = delta;
    if (item < rows * CQ::kCount) {
      // dQ_i[c0..] = scale sum_j p_ij (dP_ij - delta_i) K_j[c0..].
      const long long r = item / CQ::kCount, c0 = item % CQ::kCount * CQ::kCols;
      const long long bh = r / Tq, i = r % Tq, b = bh / H, hk = bh % H / group;
      const long long lim = tfc_attention_limit<kCausal>(i, Tq, Tk, off);
      const K* kh = k + (b * Hkv + hk) * Tk * kD;
      const V* vh = v + (b * Hkv + hk) * Tk * kDv;
      const float row_lse = lse_v[r], row_delta = delta_v[r];
      float acc[CQ::kCols];
      TFC_UNROLL
      for (int c = 0; c < CQ::kCols; ++c) acc[c] = 0.0f;
      for (long long j = 0; j < lim; ++j) {
        const float p = expf(tfc_dot<kD>(q + r * kD, kh + j * kD) * scale - row_lse);
        const float ds = p * (tfc_dot<kDv>(dout + r * kDv, vh + j * kDv) - row_delta);
        TFC_UNROLL
        for (int c = 0; c < CQ::kCols; ++c) acc[c] += ds * tfc_as_float(kh[j * kD + c0 + c]);
      }
      TFC_UNROLL
      for (int c = 0; c < CQ::kCols; ++c) tfc_store(dq + r * kD + c0 + c, acc[c] * scale);
    } else if (item < items) {
      // dK_j[c0..] = scale sum_i p_ij (dP_ij - delta_i) Q_i[c0..], dV_j[c0..] = sum_i p_ij
      // dO_i[c0..], over the rows i of the query heads that read key head hk.
      const long long x = item - rows * CQ::kCount;
      const bool is_dk = x < keys * CQ::kCount;
      const long long y = is_dk ? x : x - keys * CQ::kCount;
      const int chunks = is_dk ? CQ::kCount : CV::kCount;
      const long long kr = y / chunks, c0 = y % chunks * (is_dk ? CQ::kCols : CV::kCols);
      const long long j = kr % Tk, kvh = kr / Tk, b = kvh / Hkv, hk = kvh % Hkv;
      constexpr int kCols = CQ::kCols > CV::kCols ? CQ::kCols : CV::kCols;
      const int cols = is_dk ? CQ::kCols : CV::kCols;
      float acc[kCols];
      TFC_UNROLL
      for (int c = 0; c < kCols; ++c) acc[c] = 0.0f;
      // Under a causal mask key j is seen by the rows i >= j - off.
      long long first = kCausal ? j - off : 0;
      first = first < 0 ? 0 : first;
      for (long long gi = 0; gi < group; ++gi) {
        const long long bh = b * H + hk * group + gi;
        for (long long i = first; i < Tq; ++i) {
          const long long r = bh * Tq + i;
          if (j >= tfc_attention_limit<kCausal>(i, Tq, Tk, off)) continue;
          const float p = expf(tfc_dot<kD>(q + r * kD, k + kr * kD) * scale - lse_v[r]);
          if (is_dk) {
            const float ds = p * (tfc_dot<kDv>(dout + r * kDv, v + kr * kDv) - delta_v[r]);
            TFC_UNROLL
            for (int c = 0; c < kCols; ++c)
              if (c < cols) acc[c] += ds * tfc_as_float(q[r * kD + c0 + c]);
          } else {
            TFC_UNROLL
            for (int c = 0; c < kCols; ++c)
              if (c < cols) acc[c] += p * tfc_as_float(dout[r * kDv + c0 + c]);
          }
        }
      }
      TFC_UNROLL
      for (int c = 0; c < kCols; ++c) {
        if (c >= cols) break;
        if (is_dk)
          tfc_store(dk + kr * kD + c0 + c, acc[c] * scale);
        else
          tfc_store(dv + kr * kDv + c0 + c, acc[c]);
      }
    }
  }
  tfc_ticket_finish(counters, row_blocks + (items + 127) / 128);
}

#endif  // TFC_KERNELS_ATTENTION_CUH
